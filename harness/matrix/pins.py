"""The one table of TensorFlow pins: which tf-keras and NumPy go with each release.

Measured on Python 3.11 (shared/FACTS.md). tf-keras is released in step with
TensorFlow but its patch numbers drift (2.16.2 pairs with tf-keras 2.16.0), so
each pair is written out. NumPy 2 support arrived in stages: a release whose
wheels were built against NumPy 1 fails at import under NumPy 2.

Only the standard library is imported, so CI can read the table before
anything is installed:

    python harness/matrix/pins.py 2.16.2   # one requirement a line
    python harness/matrix/pins.py --list   # every release, a JSON list (the CI job matrix)
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Optional

__all__ = ["PINS", "Pin", "PinError", "requirements", "versions"]


class PinError(ValueError):
    """A TensorFlow version that the pin table has no row for."""


@dataclasses.dataclass(frozen=True)
class Pin:
    """What one TensorFlow release needs beside it.

    Attributes:
      tf_keras: the exact tf-keras release, or None where there is none (up to
        2.13, Keras 2 ships inside TensorFlow as `keras`).
      numpy: the NumPy requirement specifier, e.g. "<2".
    """

    tf_keras: Optional[str]
    numpy: str


# Keyed by the exact TensorFlow release to install: the newest patch of each
# minor release, as the matrix runs every row (2.12.0 and 2.13.0 were dropped:
# their .1 releases supersede them). Every row is a measured install and a
# matrix run (docs/matrix.md); add a release only after both.
PINS: dict[str, Pin] = {
    "2.12.1": Pin(tf_keras=None, numpy="<2"),
    "2.13.1": Pin(tf_keras=None, numpy="<2"),
    "2.14.1": Pin(tf_keras="2.14.1", numpy="<2"),
    "2.15.1": Pin(tf_keras="2.15.1", numpy="<2"),
    # 2.16 and 2.17 list NumPy 2 wheels for newer Pythons only; on 3.11 they need NumPy 1.
    "2.16.2": Pin(tf_keras="2.16.0", numpy="<2"),
    "2.17.1": Pin(tf_keras="2.17.0", numpy="<2"),
    "2.18.1": Pin(tf_keras="2.18.0", numpy="<2.1"),
    "2.19.1": Pin(tf_keras="2.19.0", numpy="<2.2"),
    "2.20.0": Pin(tf_keras="2.20.1", numpy=">=1.26"),
    "2.21.0": Pin(tf_keras="2.21.0", numpy=">=1.26"),
}


def versions() -> list[str]:
    """The TensorFlow releases the table has pins for, oldest first."""
    return sorted(PINS, key=lambda v: tuple(int(p) for p in v.split(".")))


def requirements(version: str) -> list[str]:
    """The pip requirements that install TensorFlow `version` with its pins.

    Args:
      version: an exact TensorFlow release, e.g. "2.16.2".

    Returns:
      e.g. ["tensorflow==2.16.2", "tf-keras==2.16.0", "numpy<2"]. The package
      is `tensorflow`, never `tensorflow-cpu`: tf-keras depends on
      `tensorflow`, and the two would be installed over each other.

    Raises:
      PinError: the table has no row for `version`.
    """
    pin = PINS.get(version.strip())
    if pin is None:
        raise PinError(f"no pins for TensorFlow {version!r}; known releases: {', '.join(versions())}. "
                       "Pick one of those, or add a measured row to PINS in harness/matrix/pins.py")
    found = [f"tensorflow=={version.strip()}"]
    if pin.tf_keras is not None:
        found.append(f"tf-keras=={pin.tf_keras}")
    found.append(f"numpy{pin.numpy}")
    return found


def _main(argv: list[str]) -> int:
    if argv == ["--list"]:  # the CI workflow's job matrix: every release, as JSON
        print(json.dumps(versions()))
        return 0
    if len(argv) != 1 or argv[0].startswith("-"):
        sys.exit(f"usage: python harness/matrix/pins.py TENSORFLOW_VERSION | --list   (known: {', '.join(versions())})")
    try:
        print("\n".join(requirements(argv[0])))
    except PinError as e:
        sys.exit(f"pins: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
