"""tf-nightly builds: which ones the package index has for this Python, and what goes with each.

The index is read as pip and uv read it, through its simple API (PEP 691's JSON where it is
served, else PEP 503's HTML): one request lists every build of a package. A build counts when it
has a wheel this interpreter and machine can install (tf-nightly skips some days and some Python
versions).

What is installed with a nightly: `tf-nightly==VERSION` and the newest `keras-nightly` built on or
before its day. tf-nightly asks for `keras-nightly` with no bound, so without that pin an old
nightly would get today's Keras. No tf-keras is installed: there is none for a nightly (the
separate `tf-keras-nightly` project numbers its builds by its own, lagging, versions), so the
tf_keras modes and cases skip there, saying that tf-keras is not installed. NumPy is left to the
nightly's own requirements.
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

__all__ = ["KERAS_RULE", "Index", "IndexReadError", "PACKAGE", "default_index_url", "keras_for",
           "requirements", "wheel_fits"]

PACKAGE = "tf-nightly"
KERAS = "keras-nightly"
# Part of a nightly environment's cache key in place of the keras-nightly version, which is found
# only when the environment is built: a change of this rule builds new environments.
KERAS_RULE = "keras-nightly: the newest built on or before the tf-nightly's day"

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


def requirements(tf_version: str, keras: Optional[str]) -> list[str]:
    """The pip requirements of a nightly environment."""
    return [f"{PACKAGE}=={tf_version}"] + ([f"{KERAS}=={keras}"] if keras else [])
