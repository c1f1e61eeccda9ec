"""The fast tier imports no TensorFlow, and this enforces it.

When a session collects nothing outside tests/unit (`python -m pytest -q tests/unit`, or a file
or test of it), an `import tensorflow` in this process fails with an ImportError that names the
tier, subprocesses get a stand-in `tensorflow` first on PYTHONPATH that refuses to be imported,
and the session fails at its end if TensorFlow was imported or an import of it was tried (code
that catches the ImportError would otherwise hide it). In a session that also runs the other
tests nothing is blocked: they need TensorFlow.
"""

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parent
_BLOCKED = ("tensorflow", "tf_keras", "keras")
_tried = []  # the names whose import the blocker refused


class _NoTensorFlow:
    """A meta path finder that refuses TensorFlow and the Keras packages."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".", 1)[0] in _BLOCKED:
            _tried.append(name)
            raise ImportError(f"the fast tier (tests/unit) imports no TensorFlow, but {name} was "
                              "imported; a test that needs it belongs in tests/")
        return None


def _only_unit(config) -> bool:
    here = Path(config.invocation_params.dir)
    paths = [(here / arg.split("::", 1)[0]).resolve() for arg in config.args]
    return bool(paths) and all(p == UNIT or UNIT in p.parents for p in paths)


def pytest_configure(config):
    if not _only_unit(config):
        return
    present = [m for m in sys.modules if m.split(".", 1)[0] in _BLOCKED]
    if present:
        raise pytest.UsageError("TensorFlow was imported before the fast tier started: "
                                f"{present[:3]}")
    sys.meta_path.insert(0, _NoTensorFlow)
    guard = tempfile.mkdtemp(prefix="harness-no-tf-")
    for name in _BLOCKED:
        (Path(guard) / name).mkdir()
        (Path(guard) / name / "__init__.py").write_text(
            f"raise ImportError('the fast tier (tests/unit) imports no TensorFlow: {name}')\n")
    config._no_tf = (guard, os.environ.get("PYTHONPATH"))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), guard]))


def pytest_sessionfinish(session, exitstatus):
    if not hasattr(session.config, "_no_tf"):
        return
    loaded = sorted({m.split(".", 1)[0] for m in sys.modules if m.split(".", 1)[0] in _BLOCKED})
    if _tried or loaded:
        session.config._no_tf_failed = sorted(set(_tried) | set(loaded))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, config):
    failed = getattr(config, "_no_tf_failed", None)
    if failed:
        terminalreporter.write_line("FAILED: the fast tier imported (or tried to import) "
                                    f"{', '.join(failed)}; it must import no TensorFlow", red=True)


def pytest_unconfigure(config):
    if not hasattr(config, "_no_tf"):
        return
    guard, before = config._no_tf
    if _NoTensorFlow in sys.meta_path:
        sys.meta_path.remove(_NoTensorFlow)
    if before is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = before
    shutil.rmtree(guard, ignore_errors=True)


class _ProcessStarted(Exception):
    """A fast-tier test not marked `subprocess` tried to start a process."""


@pytest.fixture(autouse=True)
def _no_process_unless_marked(request, monkeypatch):
    """A test that starts a process (the command line, a worker, a script) is marked `subprocess`,
    which the fast tier's command leaves out; an unmarked one that starts one fails, saying so."""
    if request.node.get_closest_marker("subprocess") is not None:
        yield
        return
    import multiprocessing.process  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    def refuse(*args, **kwargs):
        raise _ProcessStarted(f"{request.node.nodeid} starts a process: mark it "
                              "@pytest.mark.subprocess (the fast tier runs in this process)")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse)
    monkeypatch.setattr(os, "fork", refuse, raising=False)
    yield
