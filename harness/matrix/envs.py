"""One isolated, cached virtual environment per TensorFlow build, and a harness run in it.

An environment is keyed by the build, a hash of what identifies its contents (the pins and
absl-py for a release; the nightly and the rule that picks its keras-nightly for a nightly) and
the full Python version, so a changed pin or interpreter builds a new one and an unchanged one is
reused without installing anything. A marker file is written last: a half-built environment (an
interrupted or failed install) has none and is rebuilt. Each environment is locked while a run
builds or uses it.

The harness itself is not installed into an environment: a run there finds this process's own
`harness` package through PYTHONPATH, set to a temporary folder that holds only a link to that
package's folder. So the environment runs exactly the code of the command that started it, whether
that is a source checkout or a `pip install`ed package, and no other package of this process's
environment leaks in; the environment needs only what the harness imports beside TensorFlow and
NumPy (absl-py).
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

__all__ = ["DEFAULT_CACHE", "Env", "INSTALLERS", "InstallError", "MARKER", "Wanted", "env_dir",
           "harness_environ", "pick_installer", "prepared", "python_version", "release",
           "run_harness", "run_script"]

DEFAULT_CACHE = Path("~/.cache/harness/matrix").expanduser()
INSTALLERS = ("uv", "pip")

# What the harness imports beside TensorFlow and NumPy (setup.cfg), in every environment.
_OWN_REQUIREMENTS = ("absl-py>=1.0",)
MARKER = ".complete"
# A TensorFlow wheel is ~600 MB; a stuck download should not hold the matrix forever.
_INSTALL_TIMEOUT_S = 1800


class InstallError(Exception):
    """A TensorFlow build whose environment could not be built.

    Attributes:
      version: the TensorFlow version.
      reason: one line: the step that failed and the installer's last error line.
    """

    def __init__(self, version: str, reason: str) -> None:
        super().__init__(f"TensorFlow {version}: {reason}")
        self.version = version
        self.reason = reason


@dataclasses.dataclass(frozen=True)
class Wanted:
    """What one environment is to hold.

    Attributes:
      version: the TensorFlow build, e.g. "2.16.2" or "2.23.0.dev20261026".
      key: what identifies the environment's contents in the cache (its hash, with this
        module's own requirements, names the folder).
      requirements: called once, when the environment is built: the pip requirements to install
        beside this module's own (it may read the package index; an InstallError from it is a
        build that failed).
      index_url: the package index to install from, or None for the installer's own settings.
    """

    version: str
    key: tuple[str, ...]
    requirements: Callable[[], Sequence[str]]
    index_url: Optional[str] = None


def release(version: str) -> Wanted:
    """A release of the pin table, with its pins.

    Raises:
      pins.PinError: the table has no row for `version`.
    """
    found = tuple(pins.requirements(version))
    return Wanted(version=version, key=found, requirements=lambda: found)


@dataclasses.dataclass(frozen=True)
class Env:
    """A ready environment.

    Attributes:
      version: the TensorFlow build installed in it.
      path: the environment's folder.
      installer: "uv" or "pip": what built it, or would have.
      action: "created" (built now) or "reused" (nothing installed).
      seconds: time spent checking, creating and installing.
    """

    version: str
    path: Path
    installer: str
    action: str
    seconds: float

    @property
    def python(self) -> Path:
        """The environment's interpreter."""
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


def python_version(python: str) -> str:
    """The full version ("3.11.7") of the interpreter `python`.

    Raises:
      ValueError: it cannot be run; the message says to give another with --python.
    """
    try:
        done = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                              capture_output=True, text=True, env=_clean_environ())
    except OSError as e:
        raise ValueError(f"cannot run the Python interpreter {python!r}: {e.strerror or e}; give "
                         "another with --python") from None
    if done.returncode != 0:
        raise ValueError(f"cannot run the Python interpreter {python!r}: "
                         f"{_last_error_line(done.stderr)}; give another with --python")
    return done.stdout.strip()


def env_dir(cache_dir: Path, wanted: Wanted, python_version: str) -> Path:
    """The folder of `wanted`'s environment for the interpreter of `python_version`."""
    # A release's key is its requirements, as before nightlies: its cached environments stay valid.
    key = json.dumps({"requirements": [*wanted.key, *_OWN_REQUIREMENTS], "python": python_version},
                     sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    short = ".".join(python_version.split(".")[:2])
    return cache_dir / f"tf{wanted.version}-py{short}-{digest}"


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


def _create(env: Path, wanted: Wanted, requirements: Sequence[str], python: str, installer: str,
            log: Path) -> None:
    python_bin = str(env / "bin" / "python")
    index = ["--index-url", wanted.index_url] if wanted.index_url else []
    if installer == "uv":
        _step(wanted.version,
              "creating the environment (uv venv)", ["uv", "venv", "-q", "--python", python,
                                                     str(env)], log)
        # Compiled now, once: uv writes no .pyc by default, and where PYTHONDONTWRITEBYTECODE is
        # set no run writes them either, so every worker's import would compile TensorFlow's
        # modules again (`import tensorflow` of 2.21 took 7.3 s against 4.1 s, on two cores).
        _step(wanted.version, "installing TensorFlow (uv pip)",
              ["uv", "pip", "install", "-q", "--compile-bytecode", "--python", python_bin, *index,
               *requirements], log)
    else:
        _step(wanted.version,
              "creating the environment (python -m venv)", [python, "-m", "venv", str(env)], log)
        # --pre: pip takes a nightly's keras-nightly only when told that dev builds may come in.
        _step(wanted.version, "installing TensorFlow (pip)",
              [python_bin, "-m", "pip", "install", "-q", "--disable-pip-version-check", *index,
               *(["--pre"] if wanted.index_url else []), *requirements], log)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _build(env: Path, wanted: Wanted, python: str, python_version_: str, installer: str,
           log: Callable[[str], None]) -> None:
    """Builds the environment `env` afresh, its marker last."""
    # First, so that a build the index does not have leaves nothing behind in the cache.
    requirements = list(wanted.requirements()) + list(_OWN_REQUIREMENTS)
    if env.exists():
        log(f"{env.name}: half-built (no {MARKER} marker); rebuilding")
        shutil.rmtree(env)
    install_log = env.with_name(env.name + ".install.log")
    install_log.write_text("", encoding="utf-8")
    log(f"{env.name}: creating with {installer}: {' '.join(requirements)}")
    _create(env, wanted, requirements, python, installer, install_log)
    (env / MARKER).write_text(json.dumps({"requirements": requirements,
                                           "python": python_version_,
                                           "installer": installer}) + "\n", encoding="utf-8")


@contextlib.contextmanager
def prepared(wanted: Wanted, *, cache_dir: Path, python: str, installer: str,
             log: Callable[[str], None] = lambda line: None) -> Iterator[Env]:
    """Creates or reuses the environment for `wanted` and holds it while the caller runs in it.

    Args:
      wanted: the build and what goes with it (`release`, or harness.matrix.nightly's).
      cache_dir: where environments live.
      python: the interpreter the environment is made from.
      installer: "uv" or "pip" (see `pick_installer`).
      log: called with a line for each step taken.

    Yields:
      The ready environment; it stays locked against other runs until the block ends.

    Raises:
      InstallError: a step failed; the half-built environment is left without
        its marker, so the next run rebuilds it.
    """
    start = time.monotonic()
    cache_dir.mkdir(parents=True, exist_ok=True)
    try:
        version_ = python_version(python)
    except ValueError as e:
        raise InstallError(wanted.version, str(e)) from None
    env = env_dir(cache_dir, wanted, version_)
    with _locked(env.with_name(env.name + ".lock")):
        if (env / MARKER).is_file() and (env / "bin" / "python").exists():
            action = "reused"
        else:
            _build(env, wanted, python, version_, installer, log)
            action = "created"
        yield Env(version=wanted.version, path=env, installer=installer, action=action,
                  seconds=time.monotonic() - start)


@contextlib.contextmanager
def harness_environ() -> Iterator[dict[str, str]]:
    """The environment variables under which an environment's Python runs this process's harness:
    PYTHONPATH is a temporary folder holding only a link named `harness` to this package's folder
    (see the module's docstring). The folder is removed when the block ends."""
    import harness  # noqa: PLC0415 - the package this module belongs to, to find its folder

    package = Path(harness.__file__).resolve().parent
    with tempfile.TemporaryDirectory(prefix="harness-path-") as folder:
        os.symlink(package, Path(folder) / "harness", target_is_directory=True)
        yield dict(_clean_environ(), PYTHONPATH=folder)


def run_harness(env: Env, json_out: Path, *, args: Sequence[str] = (), log_path: Path,
                echo: Callable[[str], None] = lambda line: None) -> int:
    """Runs `python -m harness --mode all --json_out JSON_OUT ARGS` in the environment.

    The run's cwd is the report's folder, so nothing of the caller's folder is imported; its
    `harness` is this process's (`harness_environ`). Its output goes to `log_path` and, line by
    line, to `echo`.

    Returns:
      The harness's exit status: 1 means a failing verdict, which is a result,
      and the report is still written.
    """
    command = [str(env.python), "-m", "harness", "--mode", "all", f"--json_out={json_out}",
               *args]
    with open(log_path, "w", encoding="utf-8") as f, harness_environ() as environ:
        f.write(f"$ {' '.join(command)}\n")
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, cwd=json_out.parent, env=environ)
        assert process.stdout is not None
        for line in process.stdout:
            f.write(line)
            echo(line.rstrip("\n"))
        return process.wait()


# Runs a reproduction script as `python repro.py` would, after writing the build's version and
# GIT_VERSION to the file named first: one TensorFlow import for both.
_SCRIPT_RUNNER = """import runpy, sys
import tensorflow as tf
with open(sys.argv[1], "w", encoding="utf-8") as f:
    f.write(tf.version.VERSION + "\\n" + tf.version.GIT_VERSION + "\\n")
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def run_script(env: Env, script: Path, *, log_path: Path,
               timeout: float) -> tuple[str, str, str]:
    """Runs a standalone script (a repro.py: TensorFlow and NumPy only) in the environment, in
    the script's folder, with nothing of this process on its path.

    Returns:
      (how it ended: "exit 0", "exit 1", "killed by signal 6" or "timeout", the build's
      tf.version.VERSION, its GIT_VERSION; both "" when TensorFlow did not import).
    """
    info = log_path.with_suffix(".tf")
    info.unlink(missing_ok=True)
    command = [str(env.python), "-c", _SCRIPT_RUNNER, str(info), str(script.resolve())]
    with open(log_path, "w", encoding="utf-8") as f:
        f.write(f"$ python {script}\n")
        f.flush()
        try:
            code = subprocess.run(command, stdout=f, stderr=subprocess.STDOUT, cwd=script.parent,
                                  env=_clean_environ(), timeout=timeout).returncode
            ended = f"exit {code}" if code >= 0 else f"killed by signal {-code}"
        except subprocess.TimeoutExpired:
            ended = "timeout"
    said = info.read_text(encoding="utf-8").splitlines() if info.is_file() else []
    return ended, *(said + ["", ""])[:2]
