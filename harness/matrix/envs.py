"""One isolated, cached virtual environment per TensorFlow version, and a harness run in it.

An environment is keyed by the TensorFlow version, a hash of everything it
installs (the pins, absl-py) and the full Python version, so a changed pin or
interpreter builds a new one and an unchanged one is reused without installing
anything. A marker file is written last: a half-built environment (an
interrupted or failed install) has none and is rebuilt.

This package goes in editable and with --no-deps: its own `tensorflow` range in
setup.cfg must not fight the pin, and an editable install runs the checkout's
current code without reinstalling. Because the cache can be shared by several
checkouts, a reused environment is pointed back at this checkout when another
one installed itself there, and each environment is locked while a run uses it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

from harness.matrix import pins

__all__ = ["DEFAULT_CACHE", "Env", "INSTALLERS", "InstallError", "pick_installer", "prepared",
           "run_harness"]

DEFAULT_CACHE = Path("~/.cache/harness/matrix").expanduser()
INSTALLERS = ("uv", "pip")

# This package's own requirement beside TensorFlow and NumPy (setup.cfg); it is
# installed with --no-deps, so whatever it needs must be named here.
_OWN_REQUIREMENTS = ("absl-py>=1.0",)
_MARKER = ".complete"
# A TensorFlow wheel is ~600 MB; a stuck download should not hold the matrix forever.
_INSTALL_TIMEOUT_S = 1800


class InstallError(Exception):
    """A TensorFlow version whose environment could not be built.

    Attributes:
      version: the TensorFlow version.
      reason: one line: the step that failed and the installer's last error line.
    """

    def __init__(self, version: str, reason: str):
        super().__init__(f"TensorFlow {version}: {reason}")
        self.version = version
        self.reason = reason


@dataclasses.dataclass(frozen=True)
class Env:
    """A ready environment.

    Attributes:
      version: the TensorFlow version installed in it.
      path: the environment's folder.
      installer: "uv" or "pip": what built it, or would have.
      action: "created" (built now), "reused" (nothing installed) or
        "repointed" (reused; only this package was reinstalled, --no-deps,
        because the environment ran another checkout's code).
      seconds: time spent checking, creating and installing.
    """

    version: str
    path: Path
    installer: str
    action: str
    seconds: float

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"


def pick_installer(requested: str = "auto") -> str:
    """uv when it is on PATH (much faster for TensorFlow's large wheels), else pip.

    Raises:
      ValueError: `requested` is "uv" but uv is not on PATH, or is unknown.
    """
    if requested == "auto":
        return "uv" if shutil.which("uv") else "pip"
    if requested not in INSTALLERS:
        raise ValueError(f"unknown installer {requested!r}; use auto, uv or pip")
    if requested == "uv" and not shutil.which("uv"):
        raise ValueError("--installer uv, but uv is not on PATH; install it (pip install uv) or "
                         "use pip")
    return requested


def _clean_environ() -> dict[str, str]:
    # The caller's own virtual environment or PYTHONPATH must not leak into the isolated one.
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def _python_version(python: str) -> str:
    done = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, env=_clean_environ())
    if done.returncode != 0:
        raise ValueError(f"cannot run the Python interpreter {python!r}: "
                         f"{_last_error_line(done.stderr)}; give another with --python")
    return done.stdout.strip()


def _requirements(version: str) -> list[str]:
    return pins.requirements(version) + list(_OWN_REQUIREMENTS)


def _env_dir(cache_dir: Path, version: str, python_version: str) -> Path:
    key = json.dumps({"requirements": _requirements(version), "python": python_version},
                     sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    short = ".".join(python_version.split(".")[:2])
    return cache_dir / f"tf{version}-py{short}-{digest}"


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _last_error_line(text: str) -> str:
    """The installer's last informative line: uv ends with the resolver's verdict, pip with
    ERROR: ..."""
    lines = [_ANSI.sub("", line).strip(" ╰─▶×│") for line in text.splitlines()]
    lines = [line for line in lines if line and not line.lower().startswith("hint:")]
    return lines[-1] if lines else "no output"


def _step(version: str, what: str, command: Sequence[str], log: Path) -> None:
    """Runs one install step, appending its output to `log`; raises InstallError if it fails."""
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"$ {' '.join(command)}\n")
        f.flush()
        try:
            done = subprocess.run(list(command), stdout=f, stderr=subprocess.PIPE, text=True,
                                  env=_clean_environ(), timeout=_INSTALL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise InstallError(version,
                               f"{what} ran past {_INSTALL_TIMEOUT_S} s; see {log}") from None
        except OSError as e:
            raise InstallError(version, f"{what} could not start: {e}") from None
        f.write(done.stderr)
    if done.returncode != 0:
        raise InstallError(version,
                           f"{what} failed: {_last_error_line(done.stderr)} (full log: {log})")


def _install_package(env: Path, installer: str, repo: Path, version: str, log: Path) -> None:
    if installer == "uv":
        command = ["uv", "pip", "install", "-q", "--python", str(env / "bin" / "python"),
                   "--no-deps", "-e", str(repo)]
    else:
        command = [str(env / "bin" / "python"), "-m", "pip", "install", "-q",
                   "--disable-pip-version-check", "--no-deps", "-e", str(repo)]
    _step(version, "installing this package (--no-deps, editable)", command, log)


def _create(env: Path, version: str, python: str, installer: str, repo: Path, log: Path) -> None:
    python_bin = str(env / "bin" / "python")
    if installer == "uv":
        _step(version,
              "creating the environment (uv venv)", ["uv", "venv", "-q", "--python", python,
                                                     str(env)], log)
        _step(version, "installing TensorFlow (uv pip)",
              ["uv", "pip", "install", "-q", "--python", python_bin, *_requirements(version)], log)
    else:
        _step(version,
              "creating the environment (python -m venv)", [python, "-m", "venv", str(env)], log)
        _step(version, "installing TensorFlow (pip)",
              [python_bin, "-m", "pip", "install", "-q", "--disable-pip-version-check",
               *_requirements(version)], log)
    _install_package(env, installer, repo, version, log)


def _runs_checkout(env: Path, repo: Path) -> bool:
    """Whether `import harness` in the environment finds this checkout (asked without importing
    it)."""
    # not the checkout: the cwd comes first on sys.path
    with tempfile.TemporaryDirectory() as neutral:
        done = subprocess.run([str(env / "bin" / "python"), "-c",
                               "import importlib.util as u; s = u.find_spec('harness'); "
                               "print(s.origin if s else '')"],
                              capture_output=True, text=True, cwd=neutral, env=_clean_environ())
    found = done.stdout.strip()
    ours = (repo / "harness" / "__init__.py").resolve()
    return done.returncode == 0 and bool(found) and Path(found).resolve() == ours


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextlib.contextmanager
def prepared(version: str, *, cache_dir: Path, repo: Path, python: str, installer: str,
             log: Callable[[str], None] = lambda line: None) -> Iterator[Env]:
    """Creates or reuses the environment for `version` and holds it while the caller runs in it.

    Args:
      version: a TensorFlow version with a row in `pins.PINS`.
      cache_dir: where environments live.
      repo: this checkout, installed editable into the environment.
      python: the interpreter the environment is made from.
      installer: "uv" or "pip" (see `pick_installer`).
      log: called with a line for each step taken.

    Yields:
      The ready environment; it stays locked against other matrix runs (which
      might point it at another checkout) until the block ends.

    Raises:
      InstallError: a step failed; the half-built environment is left without
        its marker, so the next run rebuilds it.
      pins.PinError: `version` has no pins.
    """
    start = time.monotonic()
    cache_dir.mkdir(parents=True, exist_ok=True)
    try:
        python_version = _python_version(python)
    except ValueError as e:
        raise InstallError(version, str(e)) from None
    env = _env_dir(cache_dir, version, python_version)
    install_log = env.with_name(env.name + ".install.log")
    with _locked(env.with_name(env.name + ".lock")):
        if (env / _MARKER).is_file() and (env / "bin" / "python").exists():
            action = "reused"
            if not _runs_checkout(env, repo):
                log(f"{env.name}: another checkout is installed there; installing this one "
                    "(--no-deps)")
                _install_package(env, installer, repo, version, install_log)
                action = "repointed"
        else:
            if env.exists():
                log(f"{env.name}: half-built (no {_MARKER} marker); rebuilding")
                shutil.rmtree(env)
            log(f"{env.name}: creating with {installer}: {' '.join(_requirements(version))}")
            install_log.write_text("", encoding="utf-8")
            _create(env, version, python, installer, repo, install_log)
            (env
             / _MARKER).write_text(json.dumps({"requirements": _requirements(version),
                                               "python": python_version,
                                                   "installer": installer}) + "\n",
                                   encoding="utf-8")
            action = "created"
        yield Env(version=version, path=env, installer=installer, action=action,
                  seconds=time.monotonic() - start)


def run_harness(env: Env, json_out: Path, *, cases: Optional[str] = None,
                extra_args: Sequence[str] = (), log_path: Path,
                echo: Callable[[str], None] = lambda line: None) -> int:
    """Runs `python -m harness --mode all --json_out JSON_OUT` in the environment.

    The run's cwd is the report's folder, not the checkout, so the installed
    package is what runs. Its output goes to `log_path` and, line by line, to
    `echo`.

    Returns:
      The harness's exit status: 1 means a failing verdict, which is a result,
      and the report is still written.
    """
    command = [str(env.python), "-m", "harness", "--mode", "all", f"--json_out={json_out}"]
    if cases:
        command.append(f"--cases={cases}")
    command += list(extra_args)
    with open(log_path, "w", encoding="utf-8") as f:
        f.write(f"$ {' '.join(command)}\n")
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, cwd=json_out.parent, env=_clean_environ())
        assert process.stdout is not None
        for line in process.stdout:
            f.write(line)
            echo(line.rstrip("\n"))
        return process.wait()
