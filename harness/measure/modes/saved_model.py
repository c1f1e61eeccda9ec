"""Modes `saved_model` and `saved_model_nocg`: the function saved as a SavedModel, then
loaded and differentiated in another process (tensorflow#40166).

A tf.custom_gradient registers its gradient in the process's gradient registry
under a generated op type, "CustomGradient-N", and marks its IdentityN op with
that name. A SavedModel keeps the mark. With
SaveOptions(experimental_custom_gradients=True), the default since TF 2.6,
it also stores the gradient function traced at save time, which loading
registers under a new name (save.py's _trace_gradient_functions,
function_deserialization.load_function_def_library); `saved_model_nocg`
saves without it, and a process that never ran the Python code finds no
gradient. Loading in the saving process would find the original registration
and hide exactly that (or fail otherwise: a grad_fn that closes over the
forward's tensors reaches into the graph traced for saving), so the loading
happens in a restorer process (harness/measure/modes/_saved_model_restorer.py) that never
imports the cases. Even with the option, only the custom gradients of ops in
the saved functions are traced: save.py lists the functions before it traces
any gradient, so a custom gradient nested in a grad_fn is not saved, and
differentiating it twice raises LookupError in `saved_model` too.

Starting Python and TensorFlow costs seconds, so one restorer serves both modes
for the whole life of a worker process: started on first use, replaced when it
dies. It forgets the gradients each load registered once the case is done, so
every case meets the registry of a process that never loaded anything.

The loaded function never calls the case's Python gradient functions, so
these modes cannot tell whether the custom gradients ran.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
from typing import Optional, Sequence

from harness.measure import upstream
from harness.case import Case, Point
from harness.measure.modes.shared import (
    Subject,
    build_error,
    build_subject,
    flat_outputs,
    forward,
    portable,
    restored,
    tf,
    traced_as_is,
)
from harness.records import ErrorInfo, ModeOutcome, RunOptions, Status

__all__ = ["OBSERVES_GRADIENTS", "runner_for"]

OBSERVES_GRADIENTS = False

# The directory holding the `harness` package, so the restorer imports this very copy.
_ROOT = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
)
_RESTORER_MODULE = "harness.measure.modes._saved_model_restorer"
# The last lines of a dead restorer's stderr kept with its crash outcome: enough for a
# fatal log line and the check-failure stack trace under it.
_TAIL_LINES = 20


class _Restorer:
    """One restorer process: a request on its stdin, one reply line per point on its stdout.

    Its stderr goes to an unnamed temporary file, so it never blocks and is
    there to quote when the process dies.
    """

    def __init__(self):
        self.errors = tempfile.TemporaryFile()
        path = os.environ.get("PYTHONPATH")
        env = dict(os.environ, PYTHONPATH=_ROOT + (os.pathsep + path if path else ""))
        self.process = subprocess.Popen([sys.executable, "-m", _RESTORER_MODULE],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.errors, env=env, encoding="utf-8")
        atexit.register(self.close)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, request: dict) -> bool:
        """False when the restorer is gone."""
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            return True
        except OSError:  # BrokenPipeError: it died
            return False

    def receive(self) -> Optional[dict]:
        """The next reply; None when the restorer died instead."""
        line = self.process.stdout.readline()
        return json.loads(line) if line else None

    def death(self) -> str:
        """How the restorer died, and the last lines it wrote to stderr."""
        code = self.process.wait()
        if code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with status {code}"
        self.errors.seek(0, os.SEEK_END)
        self.errors.seek(max(0, self.errors.tell() - 16384))
        tail = "\n".join(self.errors.read().decode("utf-8", "replace").splitlines()[-_TAIL_LINES:])
        self.close()
        return f"the SavedModel restorer process {how}; its last output:\n{tail}"

    def close(self) -> None:
        # Nothing in a restorer needs a clean exit: stop it now, not after its TensorFlow import.
        if self.alive:
            self.process.kill()
        self.process.wait()
        with contextlib.suppress(OSError):  # a request it never read cannot be flushed
            self.process.stdin.close()
        self.process.stdout.close()
        self.errors.close()
        atexit.unregister(self.close)


class _Mode:
    """The runner of one of the two modes."""

    OBSERVES_GRADIENTS = OBSERVES_GRADIENTS

    def __init__(self, name: str, custom_gradients: bool):
        self.NAME = name
        self.custom_gradients = custom_gradients

    def run(self, case: Case, options: RunOptions) -> list[ModeOutcome]:
        """Runs every point of `case`: builds and saves here, loads and differentiates in the
        restorer."""
        _running_restorer()  # starts importing TensorFlow while this process traces and saves
        try:
            subject = build_subject(case)
        except Exception as e:  # noqa: BLE001 - the case's own code may raise anything
            return build_error(case, self.NAME, e, case.points)
        folder = tempfile.mkdtemp(prefix=f"harness-{self.NAME}-")
        try:
            try:
                names = _save(subject, case.points, os.path.join(folder, "model"),
                              self.custom_gradients)
            # Tracing runs the case's code; saving may refuse it.
            except Exception as e:  # noqa: BLE001
                return [subject.error(self.NAME, e, "save", p) for p in case.points]
            with open(os.path.join(folder, "points.pkl"), "wb") as f:
                pickle.dump(portable([(n, list(p.values)) for n, p in zip(names, case.points)]), f)
            return self._load_and_run(subject, case, folder, options)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _load_and_run(self, subject: Subject, case: Case, folder: str,
                      options: RunOptions) -> list[ModeOutcome]:
        """Every point's outcome from the restorer; a point that kills it is a crash, and a
        new restorer takes the points after it."""
        outcomes: list[ModeOutcome] = []
        while len(outcomes) < len(case.points):
            restorer = _running_restorer()
            request = {"folder": folder, "points": list(range(len(outcomes), len(case.points))),
                       "order": case.order, "wrt": list(case.wrt_indices),
                       "unconnected_zero": options.unconnected_zero,
                       "upstream": [upstream.seed(case.id, p.label) for p in case.points]
                       if options.upstream else None}
            sent = restorer.send(request)
            for index in request["points"]:
                reply = restorer.receive() if sent else None
                if reply is None:
                    outcomes.append(_crash(self.NAME, subject, case.points[index],
                                           restorer.death()))
                    break
                outcomes.append(self._outcome(subject, case.points[index], folder, reply))
        return outcomes

    def _outcome(self, subject: Subject, point: Point, folder: str, reply: dict) -> ModeOutcome:
        with open(os.path.join(folder, f"result-{reply['point']}.pkl"), "rb") as f:
            found = restored(pickle.load(f))
        outcome = subject.ok(self.NAME, found["orders"], point, found["upstream"])
        if found["upstream_error"] is not None:
            outcome = dataclasses.replace(outcome, upstream_error=_error(found["upstream_error"]))
        if reply["error"] is None:
            return outcome
        return dataclasses.replace(outcome, status=Status.ERROR, upstream=(),
                                   error=_error(reply["error"]))


def _error(error: dict) -> ErrorInfo:
    return ErrorInfo(type=error["type"], bases=tuple(error["bases"]), message=error["message"],
                     stage=error["stage"])


_restorer: Optional[_Restorer] = None


def helper_pids() -> tuple[int, ...]:
    """The processes this module keeps running between cases (the restorer): not a case's strays."""
    return (_restorer.process.pid,) if _restorer is not None and _restorer.alive else ()


def _running_restorer() -> _Restorer:
    """The running restorer; a new one if there is none or it died between cases
    (nothing of this case has run in it yet, so the death is not this case's)."""
    global _restorer
    if _restorer is None or not _restorer.alive:
        if _restorer is not None:
            _restorer.close()
        _restorer = _Restorer()
    return _restorer


def _crash(mode: str, subject: Subject, point: Point, message: str) -> ModeOutcome:
    # Which order it was computing died with it: "run", as for a compiled function.
    return ModeOutcome(mode=mode, status=Status.CRASH, sources=subject.records(point),
                       error=ErrorInfo(type=Status.CRASH.value, bases=(), message=message,
                                       stage="run"))


def _save(subject: Subject, points: Sequence[Point], path: str,
          custom_gradients: bool) -> list[str]:
    """Saves one tf.function per input signature at `path`; returns each point's function name.

    The module tracks every variable the builder created, not only the
    differentiated ones: tf.saved_model.save refuses a function that captures
    an untracked variable, and Keras layers also make non-trainable ones.
    """
    module = tf.Module()
    module.sources = list(subject.variables)  # the restorer differentiates these, in this order
    module.created = subject.created

    @traced_as_is
    def call(*xs):
        return flat_outputs(forward(subject.fn, xs, autograph=True))

    by_signature: dict = {}
    for point in points:
        if point.signature not in by_signature:
            name = f"f{len(by_signature)}"
            spec = [tf.TensorSpec(v.shape, tf.as_dtype(v.dtype)) for v in point.values]
            setattr(module, name, tf.function(call, input_signature=spec))
            by_signature[point.signature] = name
    # No serving signature: it would only add a second entry point to the same function.
    tf.saved_model.save(
        module,
        path,
        signatures={},
        options=tf.saved_model.SaveOptions(experimental_custom_gradients=custom_gradients),
    )
    return [by_signature[p.signature] for p in points]


_RUNNERS = {"saved_model": _Mode("saved_model", custom_gradients=True),
            "saved_model_nocg": _Mode("saved_model_nocg", custom_gradients=False)}


def runner_for(name: str) -> _Mode:
    """The runner of mode `name`: "saved_model" or "saved_model_nocg"."""
    return _RUNNERS[name]
