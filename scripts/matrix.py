#!/usr/bin/env python3
"""The version matrix from a checkout: `python -m harness matrix` (its --help says everything).

    python scripts/matrix.py --versions 2.16.2,2.21.0 --out_dir /tmp/matrix-run -- --mode full

is `python -m harness matrix --versions 2.16.2,2.21.0 --out_dir /tmp/matrix-run -- --mode full`
with this checkout's harness, installed or not.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout, installed or not

from harness.cli import entry  # noqa: E402

if __name__ == "__main__":
    sys.argv[1:1] = ["matrix"]
    entry()
