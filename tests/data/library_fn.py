"""A function under test that comes from a library, not from this file: TensorFlow's log1p."""

from tensorflow.math import log1p  # noqa: F401 - the target: library_fn.py:log1p
