"""The one table of TensorFlow pins: which tf-keras, Keras 3 and NumPy go with each release.

Measured on Python 3.11 (shared/FACTS.md). tf-keras is released in step with
TensorFlow but its patch numbers drift (2.16.2 pairs with tf-keras 2.16.0), so
each pair is written out. NumPy 2 support arrived in stages: a release whose
wheels were built against NumPy 1 fails at import under NumPy 2.

From 2.16 TensorFlow requires Keras 3 (`keras>=3`) with no upper bound, so what
`pip install tensorflow` brings depends on the day. Each release is pinned to
the newest Keras 3 published while it was TensorFlow's newest minor release
(PyPI upload dates): the pair its users installed then. 2.16 was newest from
2024-03-09 to 2024-07-11 (Keras 3.4.1), 2.17 to 2024-10-25 (3.6.0), 2.18 to
2025-03-12 (3.9.0), 2.19 to 2025-08-13 (3.11.2), 2.20 to 2026-03-06 (3.13.2),
and 2.21 still is (3.15.1, the newest Keras).

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

__all__ = ["PINS", "Pin", "PinError", "released", "requirements", "untested", "versions"]


class PinError(ValueError):
    """A TensorFlow version that the pin table has no row for."""


@dataclasses.dataclass(frozen=True)
class Pin:
    """What one TensorFlow release needs beside it.

    Attributes:
      tf_keras: the exact tf-keras release, or None where there is none (up to
        2.13, Keras 2 ships inside TensorFlow as `keras`).
      numpy: the NumPy requirement specifier, e.g. "<2".
      keras3: the exact Keras 3 release, or None before 2.16, whose `keras` is
        Keras 2 (TensorFlow's own dependency).
      released: the day the release was published on PyPI (YYYY-MM-DD): the date a bisect
        prints beside it.
    """

    tf_keras: Optional[str]
    numpy: str
    keras3: Optional[str] = None
    released: Optional[str] = None


# Keyed by the exact TensorFlow release to install: the newest patch of each
# minor release, as the matrix runs every row (2.12.0 and 2.13.0 were dropped:
# their .1 releases supersede them). Every row is a measured install and a
# matrix run (docs/matrix.md); add a release only after both.
PINS: dict[str, Pin] = {
    "2.12.1": Pin(tf_keras=None, numpy="<2", released="2023-07-05"),
    "2.13.1": Pin(tf_keras=None, numpy="<2", released="2023-09-26"),
    "2.14.1": Pin(tf_keras="2.14.1", numpy="<2", released="2023-11-14"),
    "2.15.1": Pin(tf_keras="2.15.1", numpy="<2", released="2024-03-08"),
    # 2.16 and 2.17 list NumPy 2 wheels for newer Pythons only; on 3.11 they need NumPy 1.
    "2.16.2": Pin(tf_keras="2.16.0", numpy="<2", keras3="3.4.1", released="2024-06-28"),
    "2.17.1": Pin(tf_keras="2.17.0", numpy="<2", keras3="3.6.0", released="2024-10-24"),
    "2.18.1": Pin(tf_keras="2.18.0", numpy="<2.1", keras3="3.9.0", released="2025-03-12"),
    "2.19.1": Pin(tf_keras="2.19.0", numpy="<2.2", keras3="3.11.2", released="2025-08-13"),
    "2.20.0": Pin(tf_keras="2.20.1", numpy=">=1.26", keras3="3.13.2", released="2025-08-13"),
    "2.21.0": Pin(tf_keras="2.21.0", numpy=">=1.26", keras3="3.15.1", released="2026-03-06"),
}


def versions() -> list[str]:
    """The TensorFlow releases the table has pins for, oldest first."""
    return sorted(PINS, key=lambda v: tuple(int(p) for p in v.split(".")))


def released() -> dict[str, str]:
    """Each release's PyPI publication day (YYYY-MM-DD), where the table has it."""
    return {version: pin.released for version, pin in PINS.items() if pin.released}


def requirements(version: str) -> list[str]:
    """The pip requirements that install TensorFlow `version` with its pins.

    Args:
      version: an exact TensorFlow release, e.g. "2.16.2".

    Returns:
      e.g. ["tensorflow==2.16.2", "tf-keras==2.16.0", "keras==3.4.1", "numpy<2"]. The package
      is `tensorflow`, never `tensorflow-cpu`: tf-keras depends on
      `tensorflow`, and the two would be installed over each other.

    Raises:
      PinError: the table has no row for `version`.
    """
    pin = PINS.get(version.strip())
    if pin is None:
        raise PinError(f"no pins for TensorFlow {version!r}; known releases: "
                       f"{', '.join(versions())}. "
                       "Pick one of those, or add a measured row to PINS in harness/matrix/pins.py")
    found = [f"tensorflow=={version.strip()}"]
    if pin.tf_keras is not None:
        found.append(f"tf-keras=={pin.tf_keras}")
    if pin.keras3 is not None:
        found.append(f"keras=={pin.keras3}")
    found.append(f"numpy{pin.numpy}")
    return found


def untested(version: str) -> str:
    """One line saying that TensorFlow `version` (as `tf.__version__` spells it) is not a release
    the table was measured with, or "" for one that is. The harness runs under any TensorFlow
    from 2.12 on (setup.cfg sets no upper bound, so a release the table does not know yet installs
    beside it), and judges its results as any release's; the line says only that this pairing was
    never run here."""
    version = version.strip()
    if version in PINS:
        return ""
    tested = versions()
    what = "a nightly build, untested" if "dev" in version else "untested"
    return (f"TensorFlow {version} is {what}: the pin table (harness/matrix/pins.py) holds the "
            f"releases the harness is tested with, {tested[0]} to {tested[-1]}; this run is "
            "judged as under any of them")


def _main(argv: list[str]) -> int:
    if argv == ["--list"]:  # the CI workflow's job matrix: every release, as JSON
        print(json.dumps(versions()))
        return 0
    if len(argv) != 1 or argv[0].startswith("-"):
        sys.exit("usage: python harness/matrix/pins.py TENSORFLOW_VERSION | --list   (known: "
                 f"{', '.join(versions())})")
    try:
        print("\n".join(requirements(argv[0])))
    except PinError as e:
        sys.exit(f"pins: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
