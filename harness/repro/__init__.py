"""Bug-report reproductions: a standalone script and an issue text for one case and point."""
