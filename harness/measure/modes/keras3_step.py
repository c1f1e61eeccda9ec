"""The Keras 3 training-step modes: one step of a minimal Keras 3 model, as its `fit` takes it.

From TensorFlow 2.16 `import keras` and `tf.keras` are Keras 3, with a trainer, optimizers and
mixed precision of its own. These modes take a case there exactly as
harness.measure.modes.keras_step takes it through tf_keras, and share that module's run, step, layer
and model: the case's differentiated arguments are the weights of a Keras 3 layer, each of two steps
(plain and upstream weights) is one call of the train function `fit` makes, and the gradient is read
from the step, where the optimizer's `update_step` records what it applied. What differs is Keras
3's own:

- keras3_eager: compiled with run_eagerly=True.
- keras3_fit: compile()'s defaults, whose jit_compile="auto" Keras 3 resolves to XLA on a machine
  with an accelerator and no tf.distribute strategy, and to no XLA on a CPU-only one; each outcome's
  note says what it resolved to here.
- keras3_xla: jit_compile=True, what "auto" gives on a machine with a GPU.
- keras3_mixed: the mixed_float16 policy while the model is made; compile wraps the optimizer in
  Keras 3's LossScaleOptimizer.
- keras3_mirrored: under tf.distribute.MirroredStrategy over two logical CPU devices.

Keras 3 trains its own variables only: a builder's plain tf.Variable is not one of the model's
trainable weights, so `fit` leaves it alone, and the modes skip such a case, saying so.
"""

from __future__ import annotations

import re
from typing import Optional

from harness.measure.modes import keras_step

__all__ = ["NEEDS_KERAS3", "keras3", "keras3_release", "runner_for"]

NEEDS_KERAS3 = ("needs Keras 3 (the keras package, 3.0 or later, which TensorFlow installs from "
                "2.16 on); TensorFlow 2.12 to 2.15 come with Keras 2")


def keras3():
    """The Keras 3 module, or None where `keras` is missing or older than 3."""
    try:
        import keras  # noqa: PLC0415
    except ImportError:
        return None
    major = str(getattr(keras, "__version__", "0")).split(".")[0]
    return keras if major.isdigit() and int(major) >= 3 else None


def keras3_release() -> Optional[tuple[int, int]]:
    """The installed Keras 3's (major, minor), or None where there is none."""
    module = keras3()
    if module is None:
        return None
    found = re.match(r"(\d+)\.(\d+)", str(module.__version__))
    return (int(found[1]), int(found[2])) if found else None


def _prepare(model, batch) -> None:
    """What Keras 3's fit does before its first step: build the model, the loss and the optimizer
    from a symbolic batch (Trainer._symbolic_build)."""
    try:
        model._symbolic_build(data_batch=batch)
    except Exception:
        if model.case_layer.not_applicable:
            raise keras_step.NotApplicable(model.case_layer.not_applicable) from None
        raise


def _keras2_class(built) -> str:
    """The name of the Keras 2 (tf_keras) class `built` is an instance of, or ""."""
    for cls in type(built).__mro__:
        if cls.__module__.split(".")[0] == "tf_keras":
            return type(built).__name__
    return ""


def _why_not(model, subject) -> str:
    """Why Keras 3's fit would not train the builder's layer or variables, or ""."""
    keras2 = _keras2_class(subject.fn)
    if keras2:
        return (f"the builder returns {keras2}, a tf_keras layer: Keras 3 models take Keras 3 "
                "layers, not Keras 2 ones; the keras_* modes train it")
    trained = set()
    for variable in model.trainable_variables:
        trained.add(id(variable.value))
        trained.update(id(part) for part in getattr(variable.value, "values", ()) or ())
    plain = [v for v in subject.variables if id(v) not in trained]
    if not plain:
        return ""
    return (f"the builder's {plain[0].name} is a tf.Variable but no Keras 3 variable: Keras 3 "
            "trains only its own (keras.Variable, a Keras 3 layer's add_weight), so fit leaves it "
            "untrained")


_CLASSES: dict = {}


def _recording_sgd(module):
    """Keras 3's SGD keeping, beside each weight, the gradient `update_step` applied to it."""
    if "sgd" in _CLASSES:
        return _CLASSES["sgd"]

    class _RecordingSGD(keras_step.RecordsApplied, module.optimizers.SGD):
        def __init__(self, **kwargs):
            # Named, since Keras 3 refuses the scope name it would make of the class's name.
            super().__init__(name="recording_sgd", **kwargs)

        def build(self, variables):
            super().build(variables)
            if getattr(self, "_records", None) is not None:
                return
            self._records = {}
            for variable in variables:
                self._records[self._var_key(variable)] = (
                    self.add_variable_from_reference(variable, "applied_gradient"),
                    self.add_variable(shape=(), initializer="zeros", dtype="float32",
                                      name="applied"))

        def update_step(self, gradient, variable, learning_rate):
            applied = super().update_step(gradient, variable, learning_rate)
            self._note_applied(gradient, variable)
            return applied

    _CLASSES["sgd"] = _RecordingSGD
    return _RecordingSGD


def _note(model, options: dict) -> str:
    """What compile's default jit_compile="auto" resolved to, for a mode that leaves it so."""
    if "jit_compile" in options or options.get("run_eagerly"):
        return ""
    return f"compile's jit_compile='auto' resolved to jit_compile={bool(model.jit_compile)}"


# Keras 3 releases before 3.8 do not divide the loss by the replicas under a tf.distribute strategy
# (keras-team/keras#19891, fixed by keras-team/keras#20609 in 3.8.0), so their mirrored step is not
# the one tf_keras and later Keras 3 take, whatever the function: the version matrix finds every
# gradient of the library doubled with Keras 3.6.0 (TensorFlow 2.17), and with 3.4.1 (TensorFlow
# 2.16) the clipping cases' grad_fn is not handed a replica's share of dy.
_SCALED_UNDER_STRATEGY = (3, 8)


def _refuses(module, mode) -> str:
    """Why this Keras 3 cannot take the mirrored step as a check of a custom gradient, or ""."""
    if not mode.mirrored:
        return ""
    found = re.match(r"(\d+)\.(\d+)", str(module.__version__))
    if found is None or (int(found[1]), int(found[2])) >= _SCALED_UNDER_STRATEGY:
        return ""
    return (f"Keras {module.__version__} does not divide the loss by the replicas under "
            "MirroredStrategy (keras-team/keras#19891, fixed in Keras 3.8.0 by #20609), so its "
            "mirrored step is not the one tf_keras and Keras 3.8 on take, whatever the function "
            "(the version matrix: every gradient doubled with Keras 3.6.0)")


KERAS3 = keras_step.Flavour(load=lambda: keras3(), needs=NEEDS_KERAS3, optimizer=_recording_sgd,
                            prepare=_prepare, why_not=_why_not, note=_note, refuses=_refuses)

_MODES = {
    "keras3_eager": keras_step.Mode("keras3_eager", {"run_eagerly": True}, flavour=KERAS3),
    "keras3_fit": keras_step.Mode("keras3_fit", {}, flavour=KERAS3),
    "keras3_xla": keras_step.Mode("keras3_xla", {"jit_compile": True}, flavour=KERAS3),
    "keras3_mixed": keras_step.Mode("keras3_mixed", {}, mixed=True, flavour=KERAS3),
    "keras3_mirrored": keras_step.Mode("keras3_mirrored", {}, mirrored=True, flavour=KERAS3),
}


def runner_for(name: str) -> keras_step.Mode:
    return _MODES[name]
