"""Checking a custom gradient from your own test suite, in this process.

    import harness

    def test_log1pexp_agrees_in_every_mode():
        harness.assert_consistent(log1pexp, [1.0, 100.0], order=2)

Both calls run the eager, function and graph modes here (TensorFlow is
already imported by the caller's test), check the oracles, and judge the
points exactly as the command line does. Whether each mode called the custom
gradient is not observed here: the function was decorated before the harness
could watch `tf.custom_gradient` (the command line's workers can).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, Union

import numpy as np

from harness import mode_names
from harness.checking import case_for
from harness.records import Result, RunOptions

__all__ = ["check", "assert_consistent"]

Inputs = Sequence[Union[Any, tuple]]


def _points(inputs: Inputs, dtype: str) -> list[tuple[np.ndarray, ...]]:
    points = []
    for value in inputs:
        args = value if isinstance(value, tuple) else (value,)
        points.append(tuple(a if isinstance(a, (np.ndarray, np.generic))
                            else np.asarray(a, dtype=dtype)
                            for a in args))
    return points


def check(fn: Callable, inputs: Inputs, *, order: int = 1, modes: Union[str, Sequence[str]] = "all",
          dtype: str = "float32", unconnected_zero: bool = False, strict_xpass: bool = False,
          numeric: bool = True, numeric_full: bool = False, repeat: int = 1, upstream: bool = True,
          **case_options: Any) -> list[Result]:
    """Runs `fn` at each input point in every mode and returns one Result per point.

    Args:
      fn: the function under test, or a zero-argument builder returning it
        (called once per mode inside that mode's graph or context).
      inputs: one entry per point: a value for a one-argument function, or a
        tuple with one value per argument. NumPy values keep their dtype;
        Python numbers and lists become `dtype`.
      order: the derivative order.
      modes: "all" or mode names.
      dtype: the dtype of inputs given as Python values.
      unconnected_zero: treat unconnected gradients as zeros in every mode.
      strict_xpass: count an unmet expectation as a failure.
      numeric: check the agreed values against central finite differences.
      numeric_full: move every element on its own, also above the oracle's element limit.
      repeat: run every mode this many times; changing values are `flaky`.
      upstream: also take every order with seeded upstream weights (the
        upstream-gradient check), compare it across modes and check it numerically.
      **case_options: more Case fields: wrt, tolerance, expectations,
        wrt_variables, reference, analytic, kinks, symmetric, description, ...
    """
    from harness import run_here  # noqa: PLC0415 - imports TensorFlow

    names = mode_names.parse_modes(modes if isinstance(modes, str) else ",".join(modes))
    name = getattr(fn, "__name__", "function").replace("<lambda>", "lambda")
    case = case_for(fn, name, _points(inputs, dtype), order,
                    source=f"{getattr(fn, '__module__', '?')}.{name}", **case_options)
    options = RunOptions(unconnected_zero=unconnected_zero, numeric=numeric,
                         numeric_full=numeric_full, repeat=repeat, upstream=upstream)
    return run_here.run_case(case, names, options,
                             rerun=lambda c, p: f"harness.check({name}, ...) at {p.label}",
                             strict_xpass=strict_xpass)


def assert_consistent(fn: Callable, inputs: Inputs, **options: Any) -> list[Result]:
    """Like `check`, but raises AssertionError with the explanation when a verdict fails.

    Returns:
      The results, when every verdict is pass, xfail, xpass or skip.
    """
    from harness.report.text import line  # noqa: PLC0415

    results = check(fn, inputs, **options)
    failed = [r for r in results if r.verdict.is_failure]
    if failed:
        raise AssertionError("\n".join(line(r) for r in failed))
    return results
