"""Hand-built cases and mode outcomes for the verdict tests (test_verdict, test_verdict_oracles)."""

import numpy as np

from harness.case import Case
from harness.records import Differentiated, ErrorInfo, ModeOutcome, Output, Status

TF = "2.17.1"
RERUN = "python -m harness --cases tests.case"


def f(x):
    return x


def make_case(*expectations, **overrides):
    fields = dict(id="tests.case", fn=f, points=[{"x": np.float32(1.0)}, {"x": np.float32(100.0)}],
                  source="tests", description="a case for the verdict tests",
                  expectations=list(expectations))
    fields.update(overrides)
    return Case(**fields)


X = (Differentiated("x", "float32", ()),)


def ok(mode, fwd=1.0, grad=2.0, grad_dtype=np.float32, sources=X):
    return ModeOutcome(mode=mode, status=Status.OK, sources=sources,
                       orders=((Output.of(np.float32(fwd)),), (Output.of(np.asarray(grad,
                                                                                    grad_dtype)),)))


def raised(mode, type_, bases=None, stage="forward", message="it failed"):
    if bases is None:
        bases = (type_, "Exception", "BaseException", "object")
    return ModeOutcome(mode=mode, status=Status.ERROR, sources=X,
                       error=ErrorInfo(type=type_, bases=tuple(bases), message=message,
                                       stage=stage))
