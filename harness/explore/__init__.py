"""explore: the Hypothesis search over a case's domains."""
