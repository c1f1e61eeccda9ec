"""tf-nightly builds: which ones the package index has for this Python, and what goes with each.

The index is read as pip and uv read it, through its simple API (PEP 691's JSON where it is
served, else PEP 503's HTML): one request lists every build of a package. A build counts when it
has a wheel this interpreter and machine can install (tf-nightly skips some days and some Python
versions).

What is installed with a nightly: `tf-nightly==VERSION`, the newest `keras-nightly` built on or
before its day and, where Keras 2 is wanted (always in `matrix` and `bisect`; in the reusable
workflow where the library needs it), the `tf-keras-nightly` of its day. tf-nightly asks for
`keras-nightly` with no bound, so without that pin an old nightly would get today's Keras.
tf-keras-nightly numbers its builds by the minor release they are made for, several at once
(2.21.0.dev..., 2.23.0.dev... on one day), and each requires `tf-nightly~=MAJOR.MINOR.0.dev`: only
a build of the nightly's own minor release installs beside it, so the newest of those built on or
before its day is taken. Where none is listed, `matrix` and `bisect` run without it (the tf_keras
modes and cases skip, saying that tf-keras is not installed) and the workflow runs no tests of a
library that needs Keras 2, saying so. NumPy is left to the nightly's own requirements.

Run as a script, it prints the requirements of the newest nightly for this Python, one a line, as
the reusable workflow installs them (standard library only); exit status 3 where the index has
no nightly for it, 1 where anything else failed:

    python -m harness.matrix.nightly [--tf-keras] [--index URL]
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Optional, Sequence

from harness.matrix import builds

__all__ = ["KERAS_RULE", "Index", "IndexReadError", "PACKAGE", "TF_KERAS", "default_index_url",
           "keras_for", "newest", "requirements", "tf_keras_for", "wheel_fits"]

PACKAGE = "tf-nightly"
KERAS = "keras-nightly"
TF_KERAS = "tf-keras-nightly"
# Part of a nightly environment's cache key in place of the keras-nightly and tf-keras-nightly
# versions, which are found only when the environment is built: a change of this rule builds new
# environments.
KERAS_RULE = ("keras-nightly and tf-keras-nightly (of the tf-nightly's minor release): the newest "
              "built on or before the tf-nightly's day")

_TIMEOUT_S = 60
_ANCHOR = re.compile(r"<a\s[^>]*>\s*([^<\s]+)\s*</a>", re.IGNORECASE)
_DEV_DAY = re.compile(r"\.dev(\d{8})")


class IndexReadError(Exception):
    """The package index could not be read or has no build that fits; the message says which
    index and why."""


def default_index_url() -> str:
    """The index the installers read unless told otherwise: uv's and pip's variables, else PyPI."""
    for name in ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL"):
        if os.environ.get(name):
            return os.environ[name].rstrip("/")
    return "https://pypi.org/simple"


def _platform_fits(tag: str, machine: str, system: str) -> bool:
    if tag == "any":
        return True
    if system == "linux":
        return tag.startswith(("manylinux", "linux")) and tag.endswith(f"_{machine}")
    if system == "darwin":
        return tag.startswith("macosx") and tag.endswith((f"_{machine}", "_universal2"))
    if system == "win32":
        return tag == {"amd64": "win_amd64", "arm64": "win_arm64"}.get(machine, "")
    return False


def wheel_fits(filename: str, python_version: str, machine: Optional[str] = None,
               system: Optional[str] = None) -> bool:
    """Whether a wheel (by its file name's tags) installs on CPython `python_version` ("3.11.7")
    on this machine (or on `machine`/`system`, as platform.machine() and sys.platform give them,
    lower case)."""
    if not filename.endswith(".whl"):
        return False
    parts = filename[:-4].split("-")
    if len(parts) < 5:
        return False
    python, _, plat = parts[-3], parts[-2], parts[-1]
    cp = "cp" + "".join(python_version.split(".")[:2])
    if not any(tag in (cp, "py3") for tag in python.split(".")):
        return False
    machine = (machine or platform.machine()).lower()
    system = system or sys.platform
    return any(_platform_fits(tag, machine, system) for tag in plat.split("."))


def _filenames(body: bytes, content_type: str) -> list[str]:
    """The files a simple-API page lists, yanked ones left out (JSON says which; HTML by
    data-yanked)."""
    if "json" in content_type:
        data = json.loads(body)
        return [f["filename"] for f in data.get("files", []) if not f.get("yanked")]
    text = body.decode("utf-8", "replace")
    return [m.group(1) for m in _ANCHOR.finditer(text) if "data-yanked" not in m.group(0)]


class Index:
    """A package index's simple API, read once per package.

    Attributes:
      url: the index's base URL, e.g. https://pypi.org/simple (a file:// folder works too: its
        PACKAGE/index.html is read).
    """

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self._read: dict[str, list[str]] = {}

    def files(self, package: str) -> list[str]:
        """The file names the index lists for `package`."""
        if package not in self._read:
            self._read[package] = self._fetch(package)
        return self._read[package]

    def _fetch(self, package: str) -> list[str]:
        page = f"{self.url}/{package}/"
        if urllib.parse.urlparse(page).scheme == "file":
            page += "index.html"
        request = urllib.request.Request(page, headers={
            "Accept": "application/vnd.pypi.simple.v1+json, text/html;q=0.1"})
        try:
            with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
                return _filenames(response.read(), response.headers.get("Content-Type", ""))
        except urllib.error.HTTPError as e:
            why = "it has no such project" if e.code == 404 else f"HTTP {e.code}"
            raise IndexReadError(f"cannot list {package} on {self.url}: {why}") from None
        except (OSError, ValueError) as e:
            raise IndexReadError(f"cannot list {package} on {self.url}: "
                              f"{getattr(e, 'reason', None) or e}") from None

    def listed(self, package: str) -> list[str]:
        """Every dev-build version of `package` the index lists, for any Python, oldest first."""
        return builds.sorted_builds([v for v in {name.split("-")[1] for name in self.files(package)
                                                 if name.endswith(".whl")}
                                     if builds.is_nightly(v)])

    def versions(self, package: str, python_version: str) -> list[str]:
        """The versions of `package` with a wheel for `python_version` on this machine, oldest
        first."""
        found = {name.split("-")[1] for name in self.files(package)
                 if wheel_fits(name, python_version)}
        return builds.sorted_builds([v for v in found if builds.is_nightly(v)])


def _day(version: str) -> str:
    match = _DEV_DAY.search(version)
    return match.group(1) if match else ""


def keras_for(tf_version: str, keras_versions: Sequence[str]) -> tuple[Optional[str], str]:
    """The keras-nightly for tf-nightly `tf_version`: the newest built on or before its day, else
    the oldest there is; with a sentence saying which and why ("" when it is the usual one).

    Args:
      keras_versions: keras-nightly's versions, e.g. "3.16.0.dev2026102604" (day, then hour).
    """
    day = _day(tf_version)
    dated = sorted((v for v in keras_versions if _day(v)), key=lambda v: v.split(".dev")[1])
    before = [v for v in dated if _day(v) <= day]
    if before:
        return before[-1], ""
    if dated:
        return dated[0], (f"no keras-nightly built on or before {day}; the oldest there is, "
                          f"{dated[0]}, goes with it")
    return None, "no keras-nightly build is listed; tf-nightly's own requirement chooses one"


def tf_keras_for(tf_version: str, tf_keras_versions: Sequence[str]) -> tuple[Optional[str], str]:
    """The tf-keras-nightly for tf-nightly `tf_version`: of the builds made for its minor release
    (another minor's requires another tf-nightly), the newest built on or before its day, else the
    oldest built after it; with a sentence saying which and why ("" when it is the usual one).
    None, and why, where no build of its minor release is listed.

    Args:
      tf_keras_versions: tf-keras-nightly's versions, e.g. "2.23.0.dev2026102618" (day, then hour).
    """
    minor = builds.order_key(tf_version)[:2] if builds.is_nightly(tf_version) else None
    same = [v for v in tf_keras_versions
            if _day(v) and builds.is_nightly(v) and builds.order_key(v)[:2] == minor]
    name = ".".join(str(n) for n in minor) if minor else tf_version
    if not same:
        return None, (f"no {TF_KERAS} for TensorFlow {name} is listed: tf_keras is not installed, "
                      "and what needs it skips")
    chosen, why = keras_for(tf_version, same)
    if why:
        why = (f"no {TF_KERAS} for TensorFlow {name} built on or before {_day(tf_version)}; the "
               f"oldest there is, {chosen}, goes with it")
    return chosen, why


def requirements(tf_version: str, keras: Optional[str],
                 tf_keras: Optional[str] = None) -> list[str]:
    """The pip requirements of a nightly environment."""
    return ([f"{PACKAGE}=={tf_version}"] + ([f"{KERAS}=={keras}"] if keras else [])
            + ([f"{TF_KERAS}=={tf_keras}"] if tf_keras else []))


def _listed_or_none(index: Index, package: str, python_version: str) -> list[str]:
    """`package`'s versions, or none where the index cannot list it (as `matrix` takes it): the
    rule then says that none is listed."""
    try:
        return index.versions(package, python_version)
    except IndexReadError:
        return []


# The script's exit status where the index has no nightly to install (1: anything else broke).
NO_NIGHTLY = 3


def newest(index: Index, python_version: str, tf_keras: bool) -> tuple[list[str], list[str]]:
    """(the requirements of the newest nightly the index has for `python_version`, the sentences
    that say what was chosen and why), with its tf-keras-nightly where `tf_keras`.

    Raises:
      IndexReadError: the index cannot be read, or has no tf-nightly for this Python.
    """
    listed = index.versions(PACKAGE, python_version)
    if not listed:
        raise IndexReadError(f"{index.url} has no {PACKAGE} for Python {python_version} on this "
                             "machine")
    version = listed[-1]
    notes = [f"{PACKAGE} {version}, the newest of {len(listed)} on {index.url}"]
    keras, why = keras_for(version, _listed_or_none(index, KERAS, python_version))
    notes += [why] if why else []
    chosen = None
    if tf_keras:
        chosen, why = tf_keras_for(version, _listed_or_none(index, TF_KERAS, python_version))
        notes += [why] if why else [f"{TF_KERAS} {chosen}, the newest for its minor release "
                                    f"built on or before {_day(version)}"]
    return requirements(version, keras, chosen), notes


def _main(argv: Sequence[str]) -> int:
    import argparse  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="python -m harness.matrix.nightly",
                                     description="The requirements of the newest tf-nightly for "
                                                 "this Python, one a line.")
    parser.add_argument("--tf-keras", action="store_true",
                        help=f"with the {TF_KERAS} of its day (Keras 2)")
    parser.add_argument("--index", default=None, help="the package index (default: pip's or "
                                                      "uv's, else PyPI)")
    given = parser.parse_args(argv)
    python = ".".join(str(n) for n in sys.version_info[:3])
    try:
        found, notes = newest(Index(given.index or default_index_url()), python, given.tf_keras)
    except IndexReadError as e:
        print(f"nightly: {e}", file=sys.stderr)
        return NO_NIGHTLY
    for note in notes:
        print(f"nightly: {note}", file=sys.stderr)
    print("\n".join(found))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
