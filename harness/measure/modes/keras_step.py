"""The training-step modes: one step of a minimal tf_keras model, as `model.fit` takes it.

The case's function is the body of a layer, `_CaseLayer`: each differentiated argument is one
of its trainable weights (a builder's trainable variables are trained as they are), read into a
tensor (autocast under a mixed-precision policy) and passed to the function. The layer's output,
the same for every sample, is the weighted sum of the function's floating outputs with the step's
weights: the upstream weights of order 1 (harness.measure.upstream) for the weighted chain, ones
for the plain one. The model is compiled with a per-sample loss equal to that output, and plain
SGD; one call of the train function `fit` makes (`make_train_function`), on an iterator over a
distributed dataset of batches of two samples (one iterator per strategy, which every model
steps on), as fit calls it, takes one step. The gradient is read from the step: the
optimizer's `update_step(gradient, variable)`, the method every tf_keras optimizer implements to
apply a gradient, records what it is given (after the loss-scale optimizer unscaled it and the
strategy all-reduced it) in a slot beside each weight. Reading it back from the variable's change
would lose digits to the update's rounding (w - lr * g in the weight's dtype).

- keras_eager: compiled with run_eagerly=True.
- keras_fit: the default compiled train function.
- keras_xla: jit_compile=True.
- keras_mixed: the mixed_float16 policy while the layers and the model are made: the function
  computes in float16 from float32 weights (autocast), the optimizer is wrapped in a
  LossScaleOptimizer by compile; judged with tolerance.NARROW_TOLERANCES. A step the loss-scale
  optimizer skips (a non-finite scaled gradient halves the scale) is taken again, as fit's next step
  would.
- keras_mirrored: under tf.distribute.MirroredStrategy over two logical CPU devices (made by
  `_devices.split_cpu` before TensorFlow initialises): each replica takes one of the two samples,
  Keras divides the loss by the global batch, and the optimizer all-reduces (sums) the gradients.

After the first step of a compiled train function without XLA, harness.measure.modes._step_order
checks that Grappler's rewrite of it still orders every read of a trained weight that feeds a
gradient before the weight's update; where it does not, the step is fit's own race, and the mode
reports UpdateRace (naming the weight and the two ops) instead of values that change from run to
run.

Two steps per point, plain and weighted, each after assigning the point's values (the arguments
that are not differentiated are non-trainable variables of the layer) and the builder's initial
variable values. A step computes order 1 only: the outcome's `top_order` says so, and its
order 0 is empty (a step returns no outputs). One model per case and input signature serves
every point, as the traced modes do.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Callable, Optional

import numpy as np

from harness.measure import upstream
from harness.case import Case, Point
from harness.measure.modes import _devices, _reuse, _step_order
from harness.measure.modes.shared import (
    Subject,
    build_error,
    build_subject,
    flat_outputs,
    is_target,
    tf,
)
from harness.measure.modes.step_rules import (
    BATCH,
    LEARNING_RATE,
    MIXED_TRIES,
    NEEDS_KERAS,
    WIDTH,
    weight_row,
    why_not,
)
from harness.records import ModeOutcome, Output, RunOptions, Status, error_info

__all__ = ["Flavour", "KERAS2", "Mode", "keras", "run", "runner_for"]


def keras():
    """The Keras 2 module: tf_keras, or tf.keras before TensorFlow 2.16; None when neither is
    there."""
    try:
        import tf_keras  # noqa: PLC0415

        return tf_keras
    except ImportError:
        major_minor = tuple(int(p) for p in tf.version.VERSION.split(".")[:2])
        return tf.keras if major_minor < (2, 16) else None


class NotApplicable(Exception):
    """The step cannot be taken for this point, for a reason that is no fault of the case."""


class UpdateRace(Exception):
    """The train function leaves a read of a trained weight unordered with its update."""


@dataclasses.dataclass(frozen=True)
class Flavour:
    """Which Keras a step mode trains with: what differs between tf_keras and Keras 3.

    Attributes:
      load: the Keras module, or None where it is not installed.
      needs: why the mode skips without it.
      optimizer: the module's recording SGD class, made from the module.
      prepare: what fit does with the compiled model before its first step (Keras 3 builds the
        model and the optimizer from a symbolic batch), given the model and one batch.
      why_not: why the mode cannot train a case's builder, or "", given the model and the subject
        (Keras 3 trains only its own variables).
      note: what an outcome says beside its values, given the model and the compile options.
      refuses: why the installed Keras cannot take a mode's step as a check of a custom gradient,
        or "", given the module and the mode (a Keras release whose strategy step is wrong for any
        function).
    """

    load: Callable
    needs: str
    optimizer: Callable
    prepare: Callable = lambda model, batch: None
    why_not: Callable = lambda model, subject: ""
    note: Callable = lambda model, options: ""
    refuses: Callable = lambda module, mode: ""


class Mode:
    def __init__(self, name: str, compile_options: dict, mixed: bool = False,
                 mirrored: bool = False, flavour: Optional[Flavour] = None):
        self.name, self.compile_options, self.mixed, self.mirrored = (name, compile_options, mixed,
                                                                      mirrored)
        self.flavour = flavour or KERAS2

    def run(self, case: Case, options: RunOptions) -> list[ModeOutcome]:
        return run(self, case, options)


def runner_for(name: str) -> Mode:
    return _MODES[name]


def _skip(mode: str, reason: str) -> ModeOutcome:
    return ModeOutcome(mode=mode, status=Status.SKIP, note=reason)


def run(mode: Mode, case: Case, options: RunOptions) -> list[ModeOutcome]:
    """Every point of `case`, one model per input signature."""
    module = mode.flavour.load()
    if module is None:
        return [_skip(mode.name, mode.flavour.needs) for _ in case.points]
    refused = mode.flavour.refuses(module, mode)
    if refused:
        return [_skip(mode.name, refused) for _ in case.points]
    if mode.mirrored:
        cpus = _devices.logical_cpus()
        if cpus < 2:
            return [_skip(mode.name, _devices.unsplit_reason(cpus)) for _ in case.points]
    outcomes: dict[int, ModeOutcome] = {}
    built: dict = {}
    for index, point in enumerate(case.points):
        reason = why_not(mode.name, case, point)
        if reason:
            outcomes[index] = _skip(mode.name, reason)
            continue
        key = (mode.name, case.id, options, point.signature)
        if key not in built:
            try:
                built[key] = _reuse.reused(key, lambda: _Step(mode, module, case, point, options))
            except Exception as e:  # noqa: BLE001 - the case's own builder may raise anything
                built[key] = e
        step = built[key]
        if isinstance(step, NotApplicable):
            outcomes[index] = _skip(mode.name, str(step))
            continue
        if isinstance(step, Exception):
            outcomes[index] = build_error(case, mode.name, step, [point])[0]
            continue
        outcomes[index] = step.take(point)
    for step in built.values():
        if not isinstance(step, Exception):
            _reuse.observed(step)
    return [outcomes[i] for i in range(len(case.points))]


def _strategy():
    """The process's one MirroredStrategy: two strategies in one process number their collective
    ops alike, and the second one's all-reduce then meets the first one's shapes ("Shape mismatch
    in the collective instance")."""
    if "strategy" not in _CLASSES:
        _CLASSES["strategy"] = tf.distribute.MirroredStrategy(_devices.cpu_names()[:2])
    return _CLASSES["strategy"]


def _samples() -> tuple:
    """One batch: BATCH dummy samples (inputs and targets, which the loss ignores: each sample's
    loss weights are the layer's `row` variable, assigned per step)."""
    return np.zeros((BATCH, 1), np.float32), np.zeros((BATCH,), np.float32)


def _batches(strategy):
    """The process's iterator over the batch, distributed by `strategy` as fit distributes its
    dataset, that every model of that strategy steps on: the batch never changes, and making a
    distributed iterator costs a MirroredStrategy step's model more than its compiled steps do."""
    key = ("batches", id(strategy))
    if key not in _CLASSES:
        batch = tf.data.Dataset.from_tensors(_samples()).repeat()
        _CLASSES[key] = (strategy, iter(strategy.experimental_distribute_dataset(batch)))
    return _CLASSES[key][1]


@contextlib.contextmanager
def _policy(module, name: Optional[str]):
    """The global dtype policy `name` while the layers are made (the builder's too), then the one
    before."""
    if name is None:
        yield
        return
    before = module.mixed_precision.global_policy()
    module.mixed_precision.set_global_policy(name)
    try:
        yield
    finally:
        module.mixed_precision.set_global_policy(before)


class _Step:
    """One case's model and train function for one input signature."""

    def __init__(self, mode: Mode, module, case: Case, point: Point, options: RunOptions):
        self.mode, self.case, self.options = mode, case, options
        self.strategy = _strategy() if mode.mirrored else None
        scope = self.strategy.scope() if self.strategy is not None else contextlib.nullcontext()
        with scope, _policy(module, "mixed_float16" if mode.mixed else None):
            self.subject = build_subject(case)
            # Named, since Keras 3 refuses the names it would make of the private classes' names.
            self.layer = _case_layer(module)(self.subject, case, point, name="case_layer",
                                             dtype="mixed_float16" if mode.mixed else None)
            self.model = _model(module)(self.layer, name="step_model")
            reason = mode.flavour.why_not(self.model, self.subject)
            if reason:
                raise NotApplicable(reason)
            optimizer = mode.flavour.optimizer(module)(learning_rate=LEARNING_RATE)
            self.model.compile(optimizer=optimizer, loss=_per_sample, **mode.compile_options)
            # What fit does per step: its train function, on an iterator over the distributed
            # dataset (train_on_batch would make and distribute a dataset at every call).
            mode.flavour.prepare(self.model, _samples())
            self.iterator = _batches(self.model.distribute_strategy)
            # tf_keras returns the train function; Keras 3 keeps it on the model.
            self.train_function = self.model.make_train_function() or self.model.train_function
        self.note = mode.flavour.note(self.model, mode.compile_options)
        self.trained = list(self.layer.case_arguments) + list(self.subject.variables)
        # Whether the compiled step orders every read of a trained weight before its update: found
        # once the train function has traced; an eager step or an XLA-compiled one always does.
        # Keras 3's train function is a Python function around its traced step: not checked.
        compiled = not mode.compile_options.get("run_eagerly")
        traced = hasattr(self.train_function, "get_concrete_function")
        xla = getattr(self.model, "jit_compile", False)
        self.races = None if compiled and traced and not xla else []
        # The builder's variables start every step from the values it gave them.
        self.initial = [v.numpy() for v in self.subject.variables]

    def _optimizer(self):
        optimizer = self.model.optimizer
        return getattr(optimizer, "inner_optimizer", optimizer)

    def _check_order(self) -> None:
        """Raises UpdateRace where the step's gradient may be taken after an update it precedes.

        Such a step is what fit runs, and its values depend on the executor's scheduling: the race
        is reported in every run instead of values that change between runs."""
        if self.races is None:
            # In the scope the step ran in: the traced function found in tf.function's cache, the
            # graph that runs. Outside it the lookup misses and traces the step again.
            with self.model.distribute_strategy.scope():
                concrete = self.train_function.get_concrete_function(self.iterator)
            names = [source.name for source in self.subject.records(self.case.points[0])]
            self.races = _step_order.unordered_reads(concrete, zip(self.trained, names))
        if self.races:
            name, read, update = self.races[0]
            raise UpdateRace(
                f"fit's train function reads {name} ({read}) before its update ({update}) as "
                "traced, but Grappler's dependency optimizer drops that order when it rewrites the "
                f"function, so the step takes its gradients with {name} from before or after the "
                "update as the executor schedules the two: its values change from run to run")

    def _loss_scale(self) -> Optional[float]:
        optimizer = self.model.optimizer
        scale = getattr(optimizer, "loss_scale", getattr(optimizer, "dynamic_scale", None))
        return None if scale is None else float(scale.numpy() if hasattr(scale, "numpy") else scale)

    def take(self, point: Point) -> ModeOutcome:
        sources = self.subject.records(point)
        stage = "order 1"
        try:
            plain = self._step(point, weight_row(self.case.id, point.label, weighted=False))
            weighted = None
            if self.options.upstream:
                stage = "order 1 with upstream weights"
                try:
                    weighted = self._step(point,
                                          weight_row(self.case.id, point.label, weighted=True))
                except NotApplicable:
                    raise
                # The weighted step alone failed: the case's grad_fn.
                except Exception as e:  # noqa: BLE001
                    return self._outcome(point, sources, plain,
                                         None, (e, f"{stage}, training step"))
        except NotApplicable as e:
            return _skip(self.mode.name, str(e))
        except Exception as e:  # noqa: BLE001
            if self.layer.not_applicable:
                return _skip(self.mode.name, self.layer.not_applicable)
            return ModeOutcome(mode=self.mode.name, status=Status.ERROR, orders=((),),
                               error=_error_info(e, f"{stage}, training step"), sources=sources,
                               top_order=1, computed_in="float16" if self.mode.mixed else "")
        return self._outcome(point, sources, plain, weighted, None)

    def _outcome(self, point, sources, plain, weighted, raised) -> ModeOutcome:
        return ModeOutcome(mode=self.mode.name, status=Status.OK,
                           orders=((), _outputs(plain, sources)), sources=sources,
                           upstream=() if weighted is None else (_outputs(weighted, sources),),
                           upstream_error=None if raised is None else _error_info(*raised),
                           top_order=1, note=self.note,
                           computed_in="float16" if self.mode.mixed else "")

    def _step(self, point: Point, row: np.ndarray) -> list:
        """One step at `point` with this per-sample weight row; the gradient per trained weight."""
        for variable, i in zip(self.layer.case_arguments, self.case.wrt_indices):
            variable.assign(point.values[i])
        for variable, value in zip(self.subject.variables, self.initial):
            variable.assign(value)
        for i, variable in self.layer.constants.items():
            variable.assign(point.values[int(i)])
        optimizer = self._optimizer()
        self.layer.row.assign(row)
        first = self._loss_scale()
        for tries in range(1, (MIXED_TRIES if self.mode.mixed else 1) + 1):
            optimizer.reset_records()
            with self.model.distribute_strategy.scope():
                self.train_function(self.iterator)
            if self.layer.not_applicable:
                raise NotApplicable(self.layer.not_applicable)
            self._check_order()
            records = [optimizer.record_of(variable) for variable in self.trained]
            if any(seen for _, seen in records) or first is None:
                break  # applied (without a loss-scale optimizer nothing skips a step)
        else:
            raise FloatingPointError(
                f"the loss-scale optimizer skipped all {tries} steps taken (loss scale {first:g} "
                f"down to {self._loss_scale():g}): a gradient was not finite in float16 at every "
                "scale, so no step updates the weights")
        found = []
        for variable, (value, seen) in zip(self.trained, records):
            if seen:
                found.append(value)
            else:  # Keras drops a None gradient (filter_empty_gradients): the weight is not updated
                found.append(np.zeros(variable.shape, variable.dtype.as_numpy_dtype)
                             if self.options.unconnected_zero else None)
        return found


def _error_info(exc: BaseException, stage: str):
    """The exception's record, without the call arguments tf_keras appends to an exception raised
    in a layer's call ("Call arguments received by layer ...: • samples=..."): its own line comes
    before them."""
    info = error_info(exc, stage)
    message, cut, _ = info.message.partition("Call arguments received by layer")
    if message.startswith("Exception encountered when calling layer"):
        # its first paragraph names the layer, the rest is the error
        message = message.partition("\n\n")[2]
    return dataclasses.replace(info, message=message.strip()) if cut else info


def _outputs(values, sources) -> tuple[Output, ...]:
    return tuple(Output.of(None, s.dtype, s.shape) if v is None else Output.of(v)
                 for v, s in zip(values, sources))


def _per_sample(y_true, y_pred):
    """The loss of each sample: the layer's output, the weighted sum of the function's outputs."""
    del y_true
    return y_pred


_CLASSES: dict = {}


def _case_layer(module):
    if (module.__name__, "layer") in _CLASSES:
        return _CLASSES[module.__name__, "layer"]

    class _CaseLayer(module.layers.Layer):
        """The case's function as a layer: its differentiated arguments are the layer's weights."""

        def __init__(self, subject: Subject, case: Case, point: Point, **kwargs):
            super().__init__(**kwargs)
            self._fn = subject.fn
            self._case = case
            self._count = len(point.values)
            # The arguments not differentiated: assigned at every point, never trained.
            self.constants = {str(i): tf.Variable(point.values[i], trainable=False,
                                                  name=f"argument{i}")
                              for i in range(len(point.values)) if i not in case.wrt_indices}
            self.case_arguments = [self.add_weight(name=name, shape=point.values[i].shape,
                                                   dtype=tf.as_dtype(point.values[i].dtype),
                                                   initializer="zeros", trainable=True)
                                   for name, i in zip(case.wrt, case.wrt_indices)]
            # Tracked, so the model trains them: the builder's trainable variables (a Keras model it
            # returned is tracked as the function itself).
            self.case_variables = list(subject.variables)
            # Each sample's loss weights (step_rules.weight_row), assigned before each step.
            self.row = tf.Variable(np.zeros(WIDTH, np.float32), trainable=False,
                                   name="loss_weights")
            self.not_applicable = ""

        def call(self, samples):
            outputs = flat_outputs(self._fn(*_layer_arguments(self)))
            targets = [t for t in outputs if is_target(t)]
            complex_ = [t for t in targets if t.dtype.is_complex]
            if not targets or complex_:
                self.not_applicable = ("the function has a complex output: a training loss is real"
                                       if complex_
                                       else "the function has no floating output to train on")
                raise NotApplicable(self.not_applicable)
            # The gradient of this linear loss needs nothing of the forward's values, so without
            # this control dependency TensorFlow may run a weight's update before a forward read of
            # that weight which the backward still uses (seen: x's update before grad_fn's read of
            # x). The gradient of a loss that depends on the outputs waits for them anyway; so do
            # these weights.
            with tf.control_dependencies(targets):
                row = tf.identity(self.row)
            total = _weighted_sum(row, 0, targets[0])
            for index, t in enumerate(targets[1:], 1):
                total += _weighted_sum(row, index, t)
            # Every sample's loss is the same sum.
            return tf.fill(_batch_size(samples), total)

    _CLASSES[module.__name__, "layer"] = _CaseLayer
    return _CaseLayer


def _layer_arguments(layer) -> list:
    """The case's arguments as a _CaseLayer's call passes them to the function."""
    args = []
    weights = iter(layer.case_arguments)
    compute = tf.as_dtype(layer.compute_dtype)
    autocast = getattr(layer, "_autocast", True)
    for i in range(layer._count):
        if str(i) in layer.constants:
            value = tf.convert_to_tensor(layer.constants[str(i)])
            if value.dtype.is_floating and compute != value.dtype and autocast:
                value = tf.cast(value, compute)  # as Keras casts a layer's inputs
            args.append(value)
        else:
            args.append(tf.convert_to_tensor(next(weights)))  # autocast under the policy
    return args


def _weighted_sum(row, index: int, target):
    """sum(w * target) with the weights for target `index` (as shared.upstream_weights picks them
    at order 1), in the target's dtype, then summed as float32."""
    flat = tf.reshape(target, [-1])
    start = (index % upstream.TARGETS) * upstream.PERIOD
    size = flat.shape[0]
    # Picked in NumPy where the size is known when tracing: one constant, not four ops.
    picked = (start + np.arange(size, dtype=np.int32) % upstream.PERIOD if size is not None
              else start + tf.range(tf.size(flat)) % upstream.PERIOD)
    weights = tf.cast(tf.gather(row, picked), target.dtype)
    return tf.reduce_sum(tf.cast(weights * flat, tf.float32))


def _batch_size(samples):
    """The shape [number of samples]: a list where the number is known when tracing, else a
    tensor."""
    size = samples.shape[0]
    return [size] if size is not None else tf.shape(samples)[:1]


def _model(module):
    if (module.__name__, "model") in _CLASSES:
        return _CLASSES[module.__name__, "model"]

    class _StepModel(module.Model):
        def __init__(self, layer, **kwargs):
            super().__init__(**kwargs)
            self.case_layer = layer

        def call(self, samples):
            return self.case_layer(samples)

    _CLASSES[module.__name__, "model"] = _StepModel
    return _StepModel


class RecordsApplied:
    """For an SGD of either Keras: the gradient its `update_step` applied to each weight, kept
    in a slot beside it (`_records`: variable key -> (applied gradient, whether it ran))."""

    def _note_applied(self, gradient, variable) -> None:
        record, seen = self._records[self._var_key(variable)]
        applied = tf.cast(tf.convert_to_tensor(gradient), record.dtype)  # IndexedSlices made dense
        if not (applied.shape.is_fully_defined() and applied.shape == record.shape):
            # What the update applied to each element: SGD broadcasts a gradient of another shape
            # that broadcasts (a scalar for a vector weight).
            applied = tf.broadcast_to(applied, tf.shape(record))
        record.assign(applied)
        seen.assign(tf.ones([], seen.dtype))

    def reset_records(self):
        for _, seen in getattr(self, "_records", {}).values():
            seen.assign(tf.zeros([], seen.dtype))

    def record_of(self, variable) -> tuple[Optional[np.ndarray], bool]:
        """What update_step applied to `variable` in the last step, and whether it ran for it. A
        weight the optimizer never built was never updated: Keras 2 inside TensorFlow 2.12 and
        2.13 builds the loss-scale optimizer's inner one from the weights that have a gradient."""
        entry = getattr(self, "_records", {}).get(self._var_key(variable))
        if entry is None:
            return None, False
        record, seen = entry
        return np.asarray(record.numpy()), bool(seen.numpy())


def _recording_sgd(module):
    if "sgd" in _CLASSES:
        return _CLASSES["sgd"]

    class _RecordingSGD(RecordsApplied, module.optimizers.SGD):
        """Plain SGD that keeps, in a slot beside each weight, the gradient `update_step`
        applied."""

        def build(self, var_list):
            super().build(var_list)
            if getattr(self, "_records", None) is not None:
                return
            self._records = {}
            for variable in var_list:
                key = self._var_key(variable)
                self._records[key] = (self.add_variable_from_reference(variable,
                                                                       "applied_gradient"),
                                      self.add_variable_from_reference(variable, "applied",
                                                                       shape=[]))

        def update_step(self, gradient, variable):
            # SGD's own update first: a gradient it cannot apply (a malformed shape) fails as in
            # fit.
            applied = super().update_step(gradient, variable)
            self._note_applied(gradient, variable)
            return applied

    _CLASSES["sgd"] = _RecordingSGD
    return _RecordingSGD


# `keras` looked up at each call, so a test can take Keras 2 away.
KERAS2 = Flavour(load=lambda: keras(), needs=NEEDS_KERAS,
                 optimizer=lambda module: _recording_sgd(module))

_MODES = {
    "keras_eager": Mode("keras_eager", {"run_eagerly": True}),
    "keras_fit": Mode("keras_fit", {}),
    "keras_xla": Mode("keras_xla", {"jit_compile": True}),
    "keras_mixed": Mode("keras_mixed", {}, mixed=True),
    "keras_mirrored": Mode("keras_mirrored", {}, mirrored=True),
}
