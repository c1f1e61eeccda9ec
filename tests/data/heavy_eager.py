"""A case whose eager run holds far more memory than its traced runs, as an eager tape over a long
while loop does: used by tests/test_memory_budget.py; not part of the shipped library.

Its forward is x * x in every mode. Run eagerly, it also keeps 64 MiB blocks alive until it
returns, one more every 50 ms, 1 GiB in all; traced (tf.function, graph), that code is not run.
So a budget well under 1 GiB stops eager mode only, and the traced modes still judge the point.
"""

import time

import numpy as np
import tensorflow as tf

from harness import Case

_BLOCK = 64 << 20
_BLOCKS = 16


def _heavy_when_eager(x):
    if tf.executing_eagerly():
        held = []
        for _ in range(_BLOCKS):
            held.append(np.ones(_BLOCK, dtype=np.uint8))  # written: resident, not only reserved
            time.sleep(0.05)
        del held
    return x * x


CASES = [
    Case(id="heavy.eager_only", fn=_heavy_when_eager, points=[{"x": np.float32(3.0)}],
         source="tests/data/heavy_eager.py",
         description="x * x, holding 1 GiB while it runs eagerly"),
]
