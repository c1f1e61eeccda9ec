"""The training-step modes' rules that need no TensorFlow: which points a step can train, and the
per-sample weight rows its loss uses (harness.measure.modes.keras_step runs the steps).

A step trains the case's differentiated arguments as Keras weights, so each must be a real
floating tensor, and under the mixed_float16 policy a float32 one (the policy's variable dtype).
Its loss is, per sample, the weighted sum of the function's floating outputs: target i (the i-th
floating output) takes row[(i % TARGETS) * PERIOD + j % PERIOD] for its j-th element, the layout
of harness.measure.upstream's order 1 tables, so the weighted step's loss is the weighted chain's
order 1 target, and the plain step's (a row of ones) is the plain contraction's.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from harness.measure import upstream
from harness.case import Case, Point

__all__ = ["BATCH", "LEARNING_RATE", "MIXED", "MIXED_TRIES", "NEEDS_KERAS", "WIDTH", "weight_row",
           "why_not"]

# Plain SGD's learning rate: a power of two (the step reads the gradient, not the update, anyway).
LEARNING_RATE = 0.5
# Two identical samples: one per replica under MirroredStrategy; the mean over them is exact.
BATCH = 2
# How many steps keras_mixed takes while the loss-scale optimizer skips them: the dynamic scale
# starts at 2**15 and halves on each skip, down to 1 (tf_keras's _DynamicLossScaleState).
MIXED_TRIES = 17
# One sample: the order 1 weight tables, flat.
WIDTH = upstream.TARGETS * upstream.PERIOD
# The modes whose weights must be float32 (the mixed_float16 policy's variable dtype).
MIXED = "keras_mixed"
MIXED_MODES = (MIXED, "keras3_mixed")

NEEDS_KERAS = ("needs tf_keras (pip install '.[keras]' in the harness checkout; beside tf-nightly, "
               "the tf-keras-nightly of its minor release instead): from TensorFlow 2.16 tf.keras "
               "is Keras 3, whose training loop these modes do not drive")


def why_not(mode: str, case: Case, point: Point) -> Optional[str]:
    """Why training-step mode `mode` cannot train `point`'s inputs, or None when it can."""
    for name, i in zip(case.wrt, case.wrt_indices):
        dtype = np.asarray(point.values[i]).dtype
        if dtype.kind == "c":
            return (f"{name} is {dtype.name}: a training step trains real floating weights on a "
                    "real loss, so complex inputs are not trained")
        if mode in MIXED_MODES and dtype.name != "float32":
            return (f"{name} is {dtype.name}: the mixed_float16 policy trains float32 weights and "
                    "computes in float16, so only float32 inputs are trained under it")
    return None


def weight_row(case_id: str, point_label: str, weighted: bool) -> np.ndarray:
    """One sample's weights, float32 (exact: every weight is a multiple of 1/8): the order 1 tables
    of harness.measure.upstream flat, or ones for the plain step."""
    if not weighted:
        return np.ones(WIDTH, np.float32)
    return upstream.flat_tables(upstream.seed(case_id, point_label), 1).astype(np.float32)
