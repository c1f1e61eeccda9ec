"""harness: is your custom gradient the same in eager, tf.function and v1 graph mode?

The case API is importable without TensorFlow:

    import numpy as np
    import tensorflow as tf
    from harness import Case

    @tf.custom_gradient
    def square(x):
        return x * x, lambda dy: dy * 2 * x

    CASES = [Case(id="mine.square", fn=square, points=[{"x": np.float32(3.0)}], order=2,
                  source="my project", description="x**2 with a hand-written gradient")]
"""

from harness.api import assert_consistent, check
from harness.case import BAD_GRADIENT, GRADIENT_UNUSED, ORACLES, VALUES_DIFFER, Case, CaseError, Domain, Expectation, Point
from harness.records import ErrorInfo, ModeOutcome, OracleOutcome, Output, Result, Status, Usage, Verdict
from harness.tolerance import DEFAULT_TOLERANCES, NUMERIC_TOLERANCES, Tol

__all__ = [
    "assert_consistent",
    "check",
    "BAD_GRADIENT",
    "Case",
    "CaseError",
    "DEFAULT_TOLERANCES",
    "Domain",
    "ErrorInfo",
    "Expectation",
    "GRADIENT_UNUSED",
    "ModeOutcome",
    "NUMERIC_TOLERANCES",
    "ORACLES",
    "OracleOutcome",
    "Output",
    "Point",
    "Result",
    "Status",
    "Tol",
    "Usage",
    "VALUES_DIFFER",
    "Verdict",
]

__version__ = "0.1.0"
