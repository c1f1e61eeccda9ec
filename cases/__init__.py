"""The built-in case library, installed as harness.cases.

Each module is one theme and defines CASES, a list of harness.Case; a case id
starts with its module's name (seeds.log1pexp2 lives in seeds.py).

An expectation's tf_versions is where the behaviour was seen: ">=2.16" means
identical outcomes on 2.16.2 (the first release with Keras 3 as tf.keras) and
2.21.0 in the version matrix (scripts/matrix.py, run by CI); ">=2.12" adds
2.12.1, where the same behaviour was recorded by hand.
"""

# The one reason behind most forward-mode deviations, shared by the themes.
FORWARD_USES_THE_BODY = (
    "forward mode differentiates the body, not grad_fn: _eager_mode_decorator runs the body while the "
    "ForwardAccumulator records, so the output already has the body's JVP, and "
    "ForwardAccumulator::Accumulate (tape.h) keeps a tensor's first JVP and drops the one "
    "ForwardpropFromTape transposes from grad_fn"
)
