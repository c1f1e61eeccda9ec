"""Mode names: every mode, the groups `--mode` selects, the ladder and the yardstick mode.

Plain names and the parsing of `--mode`, apart from the runners (harness.measure.modes), so that the
main process, the case API and the verdict rules name modes without importing a runner or
TensorFlow.
"""

from __future__ import annotations

__all__ = ["BY_NAME_ONLY", "CORE_MODES", "EXTRA_MODES", "FULL_MODES", "KERAS3_MODES",
           "KNOWN_MODES", "LADDER", "REFERENCE_MODE", "STEP_MODES", "TRAINING_STEPS", "parse_modes",
           "reference_of"]

# What `--mode all` runs, in this order: the three the design names.
CORE_MODES: tuple[str, ...] = ("eager", "function", "graph")
# Selected by name, or with `--mode full`.
EXTRA_MODES: tuple[str, ...] = ("no_autograph", "xla", "forward", "saved_model")
# Selected by name only: TensorFlow documents that a model saved without
# experimental_custom_gradients cannot be differentiated through a custom
# gradient, so this mode raises by design; it reproduces tensorflow#40166.
BY_NAME_ONLY: tuple[str, ...] = ("saved_model_nocg",)
# One training step of a tf_keras model (harness.measure.modes.keras_step): `--mode keras` selects
# them, and neither `all` nor `full` does. A step computes order 1 only, so it is never the
# yardstick while another mode runs, and a selection of steps alone gets `eager` beside them
# (parse_modes).
STEP_MODES: tuple[str, ...] = ("keras_eager", "keras_fit", "keras_xla", "keras_mixed",
                               "keras_mirrored")
# The same steps of a Keras 3 model (harness.measure.modes.keras3_step): `--mode keras3` selects
# them.
KERAS3_MODES: tuple[str, ...] = ("keras3_eager", "keras3_fit", "keras3_xla", "keras3_mixed",
                                 "keras3_mirrored")
# Every training-step mode, of either Keras: order 1 only, never the yardstick beside another mode.
TRAINING_STEPS: tuple[str, ...] = STEP_MODES + KERAS3_MODES
# Every mode name, in the order results are shown: the ladder first.
KNOWN_MODES: tuple[str, ...] = ("eager", "no_autograph", "function", "xla", "graph", "forward",
                                "saved_model", "saved_model_nocg") + STEP_MODES + KERAS3_MODES
FULL_MODES: tuple[str, ...] = tuple(m for m in KNOWN_MODES if m in CORE_MODES + EXTRA_MODES)
# From plain eager execution to a v1 graph, one step at a time: a disagreement
# is explained by the first step on this ladder where the results part.
LADDER: tuple[str, ...] = ("eager", "no_autograph", "function", "xla", "graph")
# Every other mode is compared with this one when it runs; else with the first selected.
REFERENCE_MODE = "eager"


def parse_modes(text: str) -> tuple[str, ...]:
    """Parses "all", "full", "keras", "keras3" or a comma list of mode names, in canonical order.

    A selection of training-step modes only gets `eager` beside them as the yardstick: a step
    computes order 1 only, and the oracles check the yardstick's values at every order.

    Raises:
      ValueError: for an empty list or an unknown name, naming the known ones.
    """
    names = [n.strip() for n in text.split(",") if n.strip()]
    known = ("'all' (the three core modes), 'full' (all but saved_model_nocg and the "
             "training-step modes), 'keras' (the tf_keras training-step modes), 'keras3' (the "
             f"Keras 3 ones) or a comma list of {', '.join(KNOWN_MODES)}")
    if not names:
        raise ValueError(f"no mode given: use {known}")
    selected: set[str] = set()
    for name in names:
        if name == "all":
            selected.update(CORE_MODES)
        elif name == "full":
            selected.update(FULL_MODES)
        elif name == "keras":
            selected.update(STEP_MODES)
        elif name == "keras3":
            selected.update(KERAS3_MODES)
        elif name in KNOWN_MODES:
            selected.add(name)
        else:
            raise ValueError(f"unknown mode {name!r}: use {known}")
    if selected <= set(TRAINING_STEPS):
        selected.add(REFERENCE_MODE)
    return tuple(m for m in KNOWN_MODES if m in selected)


def reference_of(modes: tuple[str, ...]) -> str:
    """The mode every other selected mode is compared with."""
    return REFERENCE_MODE if REFERENCE_MODE in modes else modes[0]
