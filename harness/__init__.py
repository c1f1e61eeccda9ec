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

import importlib

# Each public name and the module it comes from, imported when first used: a worker process or
# the command line imports only the parts it runs (harness.api, say, brings the checking code).
_FROM = {
    "assert_consistent": "harness.api", "check": "harness.api",
    **{name: "harness.case"
       for name in ("BAD_GRADIENT", "GRADIENT_UNUSED", "ORACLES", "SURROGATE", "VALUES_DIFFER",
                    "Case",
                    "CaseError", "Domain", "Expectation", "Point")},
    **{name: "harness.records"
       for name in ("ErrorInfo", "ModeOutcome", "OracleOutcome", "Output", "Result",
                    "Status", "Usage", "Verdict")},
    **{name: "harness.criteria.tolerance"
       for name in ("DEFAULT_TOLERANCES", "NUMERIC_TOLERANCES", "Tol")},
}


def __getattr__(name: str):
    if name not in _FROM:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(_FROM[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_FROM))


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
    "SURROGATE",
    "Tol",
    "Usage",
    "VALUES_DIFFER",
    "Verdict",
]

__version__ = "0.1.0"
