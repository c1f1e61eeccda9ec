"""Mode names: one row per mode (ROWS), and everything derived from the rows: every mode, the groups
`--mode` selects, the ladder, the modes the repro scripts write out; the parsing of `--mode` and the
yardstick mode.

Plain data, apart from the runners (harness.measure.modes), so that the main process, the case API,
the verdict rules, the matrix page and the repro scripts name modes without importing a runner or
TensorFlow. A new mode is one row in ROWS and its runner module (harness.measure.modes says how);
nothing else names it.

The tuples (KNOWN_MODES, CORE_MODES, LADDER, WRITTEN_OUT, ...) are derived from ROWS each time one
is read as an attribute of this module (`mode_names.LADDER`), so that a row added to ROWS is in all
of them; `from harness.mode_names import LADDER` takes the tuple as it is at that moment.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

__all__ = ["BY_NAME", "BY_NAME_ONLY", "CONTEXT", "CONTEXTS", "CONTEXT_MODES", "CORE", "CORE_MODES",
           "Context", "EXTRA", "EXTRA_MODES", "FULL_MODES", "FUNCTION", "GRAPH", "KERAS", "KERAS3",
           "KERAS3_MODES", "KNOWN_MODES", "LADDER", "Mode", "REFERENCE_MODE", "ROWS", "STEP_MODES",
           "TAPE", "TRAINING_STEPS", "WRITTEN_OUT", "modes_of", "parse_modes", "reference_of"]

# The groups a mode is in: which word of `--mode` selects it besides its own name.
CORE = "core"  # `all` (and `full`): the three the design names
EXTRA = "extra"  # `full`
BY_NAME = "by name"  # its name only
KERAS = "keras"  # `keras`: one training step of a tf_keras model (harness.measure.modes.keras_step)
KERAS3 = "keras3"  # `keras3`: the same steps of a Keras 3 model (harness.measure.modes.keras3_step)
# `contexts`: the case's call inside a tf.cond, a loop, a map, a jacobian (CONTEXTS below), each in
# the modes that context runs in (harness.measure.modes.contexts)
CONTEXT = "contexts"
# The words of `--mode` that select groups, and the groups each selects.
_SELECTS = {"all": (CORE,), "full": (CORE, EXTRA), "keras": (KERAS,), "keras3": (KERAS3,),
            "contexts": (CONTEXT,)}

# How the reproduction scripts write a mode out (harness.repro.script and harness.repro.short).
TAPE = "tape"  # the nested tapes, run as they are
FUNCTION = "function"  # the nested tapes inside one tf.function, with the row's function_options
GRAPH = "graph"  # a tf.compat.v1 graph, tf.gradients and a Session


@dataclasses.dataclass(frozen=True)
class Mode:
    """One mode, as everything outside its runner sees it.

    Attributes:
      name: what `--mode`, expectations, `skip_modes` and the reports call it.
      group: CORE, EXTRA, BY_NAME, KERAS or KERAS3: which word of `--mode` selects it. A training
        step (KERAS, KERAS3) computes order 1 only, so it is never the yardstick while another
        mode runs, and a selection of steps alone gets the yardstick mode beside them.
      mark: its mark in the version matrix's cells (harness.matrix.render): short, and no other
        mode's.
      ladder: whether it is a step on the ladder from plain eager execution to a v1 graph, where a
        disagreement is explained by the first step at which the results part; the steps are in
        the order of ROWS.
      runner: the module under harness.measure.modes that runs it, where several modes share one;
        empty for the module named after the mode.
      repro: how the reproduction scripts write it out: TAPE, FUNCTION or GRAPH; empty for a mode
        they leave out (forward and the SavedModel modes take a second process or a pass per
        element, more than a bug report's script should carry; a report on them names the harness
        command instead).
      function_options: for FUNCTION, tf.function's keyword arguments as code ("jit_compile=True").
      autograph: whether it traces the case's code through AutoGraph (a fix hint reads it).
      context: for a CONTEXT mode, the context (a key of CONTEXTS) its call is put inside.
      base: for a CONTEXT mode, the plain mode it runs in ("eager", "function" or "graph").
    """

    name: str
    group: str
    mark: str
    ladder: bool = False
    runner: str = ""
    repro: str = ""
    function_options: str = ""
    autograph: bool = False
    context: str = ""
    base: str = ""

    def __post_init__(self) -> None:
        if self.group not in (CORE, EXTRA, BY_NAME, KERAS, KERAS3, CONTEXT):
            raise ValueError(f"mode {self.name!r}: unknown group {self.group!r}")
        if self.repro not in ("", TAPE, FUNCTION, GRAPH):
            raise ValueError(f"mode {self.name!r}: unknown repro {self.repro!r}")
        if self.function_options and self.repro != FUNCTION:
            raise ValueError(f"mode {self.name!r}: function_options is for a FUNCTION repro")


@dataclasses.dataclass(frozen=True)
class Context:
    """Something a user puts the case's call inside, which TensorFlow differentiates by a route of
    its own (harness.measure.modes.contexts runs each).

    Attributes:
      name: its key in CONTEXTS, and the first part of its modes' names (`cond_function`).
      mark: the first part of its modes' marks on the version matrix page; each mode's mark adds
        its base's.
      words: what it is, as a sentence names it ("a tf.cond branch").
      bases: the plain modes it runs in, each one mode `<name>_<base>`.
      jacobian: whether its order 1 is a jacobian's rows, contracted as the plain gradient is;
        else the tapes' (or tf.gradients') own gradient of the call inside it.
      batched: for a jacobian, GradientTape.batch_jacobian's over a batch of one (of the
        differentiated inputs only) rather than GradientTape.jacobian's.
      pfor: for a jacobian, with pfor (experimental_use_pfor) or with a loop over the rows.

    Every context computes order 1 (the outputs, the plain, weighted and linearity chains' first
    order): the route by which TensorFlow differentiates a call inside it.
    """

    name: str
    mark: str
    words: str
    bases: tuple[str, ...] = ("eager", "function")
    jacobian: bool = False
    batched: bool = False
    pfor: bool = True


# Every context, in the order its modes are shown. Adding one is a row here and its wrapper or
# jacobian in harness.measure.modes.contexts.
CONTEXTS: dict[str, Context] = {row.name: row for row in (
    Context("cond", "c", "a tf.cond branch", ("eager", "function", "graph")),
    Context("while_loop", "w", "a tf.while_loop body", ("eager", "function", "graph")),
    Context("map_fn", "m", "a tf.map_fn over a batch of one (the point)",
            ("eager", "function", "graph")),
    Context("vectorized_map", "v", "a tf.vectorized_map over a batch of one (the point)"),
    Context("jacobian", "j", "GradientTape.jacobian (pfor), its rows contracted as the plain "
            "gradient is", jacobian=True),
    Context("jacobian_loop", "jl", "GradientTape.jacobian with experimental_use_pfor=False, its "
            "rows contracted as the plain gradient is", jacobian=True, pfor=False),
    Context("batch_jacobian", "bj", "GradientTape.batch_jacobian (pfor) over a batch of one (the "
            "point), its rows contracted as the plain gradient is", jacobian=True, batched=True),
    Context("batch_jacobian_loop", "bl", "GradientTape.batch_jacobian with "
            "experimental_use_pfor=False over a batch of one, its rows contracted as the plain "
            "gradient is", jacobian=True, batched=True, pfor=False),
    Context("recompute_grad", "r", "tf.recompute_grad"),
)}
_BASE_MARKS = {"eager": "e", "function": "f", "graph": "g"}


def modes_of(context: Context) -> tuple[Mode, ...]:
    """The rows of `context`'s modes, one per base: what ROWS holds for it."""
    return tuple(Mode(f"{context.name}_{base}", CONTEXT, context.mark + _BASE_MARKS[base],
                      runner="contexts", autograph=base == "function", context=context.name,
                      base=base)
                 for base in context.bases)


def _context_modes() -> tuple[Mode, ...]:
    return tuple(mode for c in CONTEXTS.values() for mode in modes_of(c))


# Every mode, in the order results are shown: the ladder first.
ROWS: dict[str, Mode] = {row.name: row for row in (
    Mode("eager", CORE, "e", ladder=True, repro=TAPE),
    Mode("no_autograph", EXTRA, "na", ladder=True, repro=FUNCTION,
         function_options="autograph=False"),
    Mode("function", CORE, "f", ladder=True, repro=FUNCTION, autograph=True),
    Mode("xla", EXTRA, "x", ladder=True, repro=FUNCTION, function_options="jit_compile=True",
         autograph=True),
    Mode("graph", CORE, "g", ladder=True, repro=GRAPH),
    Mode("forward", EXTRA, "fw"),
    Mode("saved_model", EXTRA, "sm", autograph=True),
    # TensorFlow documents that a model saved without experimental_custom_gradients cannot be
    # differentiated through a custom gradient, so this mode raises by design; it reproduces
    # tensorflow#40166.
    Mode("saved_model_nocg", BY_NAME, "nc", runner="saved_model"),
    Mode("keras_eager", KERAS, "ke", runner="keras_step"),
    Mode("keras_fit", KERAS, "kf", runner="keras_step", autograph=True),
    Mode("keras_xla", KERAS, "kx", runner="keras_step", autograph=True),
    Mode("keras_mixed", KERAS, "kmp", runner="keras_step", autograph=True),
    Mode("keras_mirrored", KERAS, "kms", runner="keras_step", autograph=True),
    Mode("keras3_eager", KERAS3, "k3e", runner="keras3_step"),
    Mode("keras3_fit", KERAS3, "k3f", runner="keras3_step"),
    Mode("keras3_xla", KERAS3, "k3x", runner="keras3_step"),
    Mode("keras3_mixed", KERAS3, "k3mp", runner="keras3_step"),
    Mode("keras3_mirrored", KERAS3, "k3ms", runner="keras3_step"),
) + _context_modes()}

# Every other mode is compared with this one when it runs; else with the first selected.
REFERENCE_MODE = "eager"


def _where(keep: Callable[[Mode], bool]) -> tuple[str, ...]:
    return tuple(name for name, row in ROWS.items() if keep(row))


def _in(*groups: str) -> tuple[str, ...]:
    return _where(lambda row: row.group in groups)


# Each derived tuple, by its name, from the rows as they are when it is read.
_DERIVED: dict[str, Callable[[], tuple[str, ...]]] = {
    # Every mode name, in the order results are shown.
    "KNOWN_MODES": lambda: tuple(ROWS),
    # What `--mode all` runs, in this order.
    "CORE_MODES": lambda: _in(CORE),
    # Selected by name, or with `--mode full`.
    "EXTRA_MODES": lambda: _in(EXTRA),
    "FULL_MODES": lambda: _in(CORE, EXTRA),
    # Selected by name only.
    "BY_NAME_ONLY": lambda: _in(BY_NAME),
    "STEP_MODES": lambda: _in(KERAS),
    "KERAS3_MODES": lambda: _in(KERAS3),
    # Every context's modes (CONTEXTS).
    "CONTEXT_MODES": lambda: _in(CONTEXT),
    # Every training-step mode, of either Keras: order 1 only, never the yardstick beside another.
    "TRAINING_STEPS": lambda: _in(KERAS, KERAS3),
    # From plain eager execution to a v1 graph, one step at a time.
    "LADDER": lambda: _where(lambda row: row.ladder),
    # The modes the reproduction scripts write out.
    "WRITTEN_OUT": lambda: _where(lambda row: bool(row.repro)),
}


def __getattr__(name: str) -> tuple[str, ...]:
    if name in _DERIVED:
        return _DERIVED[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_modes(text: str) -> tuple[str, ...]:
    """Parses "all", "full", "keras", "keras3", "contexts" or a comma list of mode and context
    names (a context's name selects its modes), in canonical order.

    A selection of training-step modes only gets `eager` beside them as the yardstick: a step
    computes order 1 only, and the oracles check the yardstick's values at every order. So does a
    selection of contexts (with steps or not): a context is compared with the plain call.

    Raises:
      ValueError: for an empty list or an unknown name, naming the known ones.
    """
    names = [n.strip() for n in text.split(",") if n.strip()]
    known = ("'all' (the three core modes), 'full' (all but saved_model_nocg and the "
             "training-step modes), 'keras' (the tf_keras training-step modes), 'keras3' (the "
             "Keras 3 ones), 'contexts' (the case inside each of "
             f"{', '.join(CONTEXTS)}, in the modes each runs in) or a comma list of those, of the "
             f"contexts and of {', '.join(m for m in ROWS if m not in _in(CONTEXT))} and the "
             "contexts' modes (cond_function, ...)")
    if not names:
        raise ValueError(f"no mode given: use {known}")
    selected: set[str] = set()
    for name in names:
        if name in _SELECTS:
            selected.update(_in(*_SELECTS[name]))
        elif name in ROWS:
            selected.add(name)
        elif name in CONTEXTS:
            selected.update(_where(lambda row, name=name: row.context == name))
        else:
            raise ValueError(f"unknown mode {name!r}: use {known}")
    if selected <= set(_in(KERAS, KERAS3, CONTEXT)):
        selected.add(REFERENCE_MODE)
    return tuple(m for m in ROWS if m in selected)


def reference_of(modes: tuple[str, ...]) -> str:
    """The mode every other selected mode is compared with."""
    return REFERENCE_MODE if REFERENCE_MODE in modes else modes[0]
