"""Process-wide TensorFlow settings a case can change and leave behind.

Each of these silently changes what every later case in the same process
computes: eager execution turned off makes the eager mode build graphs,
`run_functions_eagerly` makes the function mode eager, a mixed-precision
policy changes Keras layers' dtypes, NumPy behaviour changes type promotion,
auto-clustering puts XLA under every graph. A graph entered with
`as_default()` and never left shows as eager execution turned off. The worker compares a snapshot taken after
each case with the one taken at start and retires itself if they differ.
"""

from __future__ import annotations

import sys

import tensorflow as tf

__all__ = ["snapshot", "changes"]


def _policy(module_name: str) -> str:
    module = sys.modules.get(module_name)
    if module is None:  # never imported, so never changed: don't pay for the import
        return "not loaded"
    try:
        return module.mixed_precision.global_policy().name
    except Exception as e:  # noqa: BLE001 - a Keras without this API has no policy to leak
        return f"unavailable ({type(e).__name__})"


def snapshot() -> dict[str, str]:
    """The current value of every watched setting, as text."""
    return {
        "eager execution": str(tf.executing_eagerly()),
        "tf.config.run_functions_eagerly": str(tf.config.functions_run_eagerly()),
        "tf_keras mixed precision policy": _policy("tf_keras"),
        "keras mixed precision policy": _policy("keras"),
        "NumPy behaviour (tf.experimental.numpy)": str(hasattr(tf.Tensor, "ravel")),
        "XLA auto-clustering (tf.config.optimizer.get_jit)": repr(tf.config.optimizer.get_jit()),
        "TensorFloat-32": str(tf.config.experimental.tensor_float_32_execution_enabled()),
    }


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """One line per setting that differs, e.g. "eager execution: True -> False".

    A Keras module imported by the case shows as "not loaded -> float32":
    importing is not a change, so that transition is ignored unless the
    policy is not the default float32.
    """
    found = []
    for key, old in before.items():
        new = after.get(key, old)
        if new == old or (old == "not loaded" and new == "float32"):
            continue
        found.append(f"{key}: {old} -> {new}")
    return found
