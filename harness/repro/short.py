"""The short reproduction: straight-line code for the yardstick mode and the modes that deviate.

What a TensorFlow maintainer would write by hand to show one deviation: the
imports, the function and what it uses, the input values, the nested tapes
(run as they are, then inside `tf.function`) or a `tf.Graph` with
`tf.gradients` and a `Session`, for the yardstick mode and each mode that
deviates only; each prints its values or its exception, and a last line says
what differs. The script exits 1 while the deviation shows, 0 when it does not.

Which deviation it shows is decided here, from the verdict, in the main
process; the worker sent the pieces (harness.repro.script.ScriptParts). A
deviation the short form cannot show raises NotShort, and the caller writes the
complete script instead, saying why.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import re
import textwrap
from typing import Optional

from harness import mode_names
from harness.criteria.compare import check_gradients, compare_outcomes
from harness.oracle_names import NUMERIC
from harness.records import ModeOutcome, OracleStatus, Result, Status
from harness.repro.script import ScriptParts
from harness.criteria.tolerance import (
    NUMERIC_STEPS,
    ToleranceOverride,
    numeric_tolerance_for,
    tolerance_for,
)

__all__ = ["NotShort", "Expected", "Short", "deviation", "numeric_check", "render"]

# The modes it writes out are the complete script's (harness.mode_names.WRITTEN_OUT), each as its
# row's `repro` says: the tapes as they are, inside tf.function with the row's options, or a v1
# graph.


class NotShort(ValueError):
    """The short script cannot show this result's deviation; the message says why."""


@dataclasses.dataclass(frozen=True)
class Expected:
    """What running a reproduction must show for it to show what the harness saw.

    Attributes:
      exit: the exit status: 1 while a deviation shows, 0 when the modes agree; None for a
        process that must die of a signal (a crash).
      outcomes: mode to what it printed: an exception class name, or "ok" for values.
      what: the deviation in words, for messages.
    """

    exit: Optional[int]
    outcomes: dict
    what: str


@dataclasses.dataclass(frozen=True)
class Short:
    text: str
    expected: Expected


@dataclasses.dataclass(frozen=True)
class _Deviation:
    kind: str  # "errors", "values", "gradient", "numeric", "crash", "none"
    yardstick: str
    modes: tuple[str, ...]  # the deviating modes (for "none": the modes shown)
    what: str


def _shown(outcome: ModeOutcome) -> str:
    return outcome.error.type if outcome.status is Status.ERROR and outcome.error else (
        "ok" if outcome.status is Status.OK else outcome.status.value)


def deviation(result: Result, tolerance: ToleranceOverride = None) -> _Deviation:
    """The one deviation a short script shows for `result`.

    Raises:
      NotShort: the deviation is of a kind, or in a mode, the short form cannot show.
    """
    active = {m: o for m, o in result.outcomes.items() if o.status is not Status.SKIP}
    dead = [m for m, o in active.items() if o.status in (Status.CRASH, Status.TIMEOUT)]
    if dead:
        if any(active[m].status is Status.TIMEOUT for m in dead):
            raise NotShort(f"{dead[0]} timed out: a script that hangs shows nothing on its own")
        if dead[0] not in mode_names.WRITTEN_OUT:
            raise NotShort(f"{dead[0]} crashed, and the short script writes out "
                           f"{', '.join(mode_names.WRITTEN_OUT)} only")
        return _Deviation("crash", dead[0], (dead[0],), f"{dead[0]} kills the process")
    yardstick = result.yardstick or next(iter(active), "")
    if yardstick not in active:
        raise NotShort("no mode ran to compare the others with")
    if yardstick not in mode_names.WRITTEN_OUT:
        raise NotShort(f"the modes are compared with {yardstick}, which the short script does not "
                       "write out")
    ref = active[yardstick]
    errors, values = [], []
    for mode, outcome in active.items():
        if mode == yardstick:
            continue
        found = compare_outcomes(ref, outcome, tolerance=tolerance, upstream=False)
        if any(m.kind in ("error_type", "status") for m in found):
            errors.append(mode)
        elif found:
            values.append(mode)
    unwritten = [m for m in errors + values if m not in mode_names.WRITTEN_OUT]
    if errors:
        if unwritten and len(unwritten) == len(errors):
            raise NotShort(f"only {', '.join(unwritten)} deviate, which the short script does not "
                           "write out")
        modes = tuple(m for m in errors if m in mode_names.WRITTEN_OUT)
        said = "; ".join(f"{m} {_said(active[m])}" for m in (yardstick,) + modes)
        return _Deviation("errors", yardstick, modes, said)
    if values:
        modes = tuple(m for m in values if m in mode_names.WRITTEN_OUT)
        if not modes:
            raise NotShort(f"only {', '.join(unwritten)} deviate, which the short script does not "
                           "write out")
        return _Deviation("values", yardstick, modes,
                          f"{', '.join(modes)} return other values than {yardstick}")
    malformed = [m for m, o in active.items() if m in mode_names.WRITTEN_OUT
                 and o.status is Status.OK and check_gradients(o)]
    if malformed:
        first = check_gradients(active[malformed[0]])[0].message
        return _Deviation("gradient", malformed[0], tuple(malformed[1:]), first)
    differ = [name for name, o in result.oracles.items() if o.status is OracleStatus.DIFFER]
    if NUMERIC in differ:
        return _Deviation("numeric", yardstick, (), "the values differ from the numeric derivative")
    if differ:
        raise NotShort(f"the modes agree and the {differ[0]} oracle says the values are wrong; the "
                       "short script shows mode differences, malformed gradients and the numeric "
                       "derivative only")
    shown = tuple(m for m in active if m != yardstick and m in mode_names.WRITTEN_OUT)
    return _Deviation("none", yardstick, shown, "every mode agrees")


def _said(outcome: ModeOutcome) -> str:
    if outcome.status is Status.OK:
        return "returns values"
    return f"raises {outcome.error.type}" if outcome.error else outcome.status.value


# Names the script's own code binds: an input must not take one (an input `y` would be the
# function's output once `y = f(x, y)` ran).
_OWN = frozenset({"tf", "np", "sys", "found", "mode", "run", "graph", "session", "y", "dy", "h",
                  "up", "down", "numeric", "got", "differs", "kind", "base", "below", "bad",
                  "sources", "said", "name", "value", "i", "e", "t", "at", "slope"})
_OWN_NUMBERED = re.compile(r"(d\d+y|tape\d+)$")


def _variable(name: str, taken: set[str]) -> str:
    while name in taken or name in _OWN or _OWN_NUMBERED.match(name):
        name += "_"
    return name


def _check_supported(parts: ScriptParts, ref: ModeOutcome) -> None:
    if parts.builder:
        raise NotShort("the case builds its function (variables or layers); the short script takes "
                       "a plain function")
    if not parts.wrt:
        raise NotShort("nothing is differentiated")
    if ref.status is Status.OK:
        if any(o.value is None for order in ref.orders[1:-1] for o in order):
            raise NotShort("an unconnected gradient below the last order: the plain tapes cannot "
                           "take it further")
        if any(not (o.dtype.startswith(("float", "complex", "bfloat"))) for o in ref.orders[0]):
            raise NotShort("the function has outputs that are not floating point")


def _orders_code(fn: str, names: list[str], wrt: list[str], order: int,
                 unconnected: str) -> list[str]:
    """def gradients(...): the nested tapes, order `order` innermost last."""
    sources = wrt[0] if len(wrt) == 1 else f"[{', '.join(wrt)}]"
    results = ["y"] + [f"d{k}y" if k > 1 else "dy" for k in range(1, order + 1)]
    lines = [f"def gradients({', '.join(names)}):"]
    if order > 1:
        lines.append(f'    """Orders 0 to {order}: each the gradient of the sum of the one '
                     'before."""')
    for k in range(order, 0, -1):
        pad = "    " * (order - k + 1)
        lines += [f"{pad}with tf.GradientTape() as tape{k}:", f"{pad}    tape{k}.watch({sources})"]
    lines.append(f"{'    ' * (order + 1)}y = {fn}({', '.join(names)})")
    for k in range(1, order + 1):
        pad = "    " * (order - k + 1)
        lines.append(f"{pad}{results[k]} = tape{k}.gradient({results[k - 1]}, "
                     f"{sources}{unconnected})")
    lines.append(f"    return tf.nest.flatten([{', '.join(results)}])")
    return lines


def _graph_code(mode: str, fn: str, names: list[str], constants: list[str], parts: ScriptParts,
                wrt: list[str], order: int, unconnected: str, keep: bool) -> list[str]:
    """`mode` written out as a GRAPH row is (harness.mode_names): a v1 graph and a Session."""
    sources = wrt[0] if len(wrt) == 1 else f"[{', '.join(wrt)}]"
    results = ["y"] + [f"d{k}y" if k > 1 else "dy" for k in range(1, order + 1)]
    lines = [f"# {mode}: a tf.compat.v1 graph, tf.gradients and a Session.", "try:",
             "    graph = tf.Graph()", "    with graph.as_default():"]
    for name, dtype, shape in zip(names, parts.dtypes, parts.shapes):
        lines.append(f"        {name} = tf.compat.v1.placeholder(tf.{dtype}, shape={list(shape)})")
    lines.append(f"        y = {fn}({', '.join(names)})")
    # A complex output has no default upstream gradient in tf.gradients: ones, as a tape starts
    # from.
    complex_ = any(str(d).startswith("complex") for d in parts.dtypes)
    for k in range(1, order + 1):
        ones = (f", grad_ys=[tf.ones_like(t) for t in tf.nest.flatten({results[k - 1]})]"
                if complex_ else "")
        lines.append(f"        {results[k]} = tf.gradients({results[k - 1]}, "
                     f"{sources}{ones}{unconnected})")
    feed = ", ".join(f"{n}: {c}" for n, c in zip(names, constants))
    fetch = f"session.run(tf.nest.flatten([{', '.join(results)}]), feed_dict={{{feed}}})"
    lines += ["    with tf.compat.v1.Session(graph=graph) as session:"]
    lines += ([f"        found[{mode!r}] = {fetch}", f"    print('{mode}: ok', *found[{mode!r}])"]
              if keep else
              [f"        print('{mode}: ok', *{fetch})", f"    found[{mode!r}] = 'ok'"])
    lines += [
              "except Exception as e:",
              f"    found[{mode!r}] = type(e).__name__",
              "    said = (str(e).strip().splitlines() or [''])[0]",
              f"    print(f'{mode}: {{said}}' if said.startswith(type(e).__name__) else f'{mode}: "
              "{type(e).__name__}: {said}')",
              ""]
    return lines


def _docstring(parts: ScriptParts, dev: _Deviation) -> str:
    shows = {"numeric": f"{dev.yardstick}'s values differ from the numeric derivative",
             "none": "every mode agrees"}.get(dev.kind, dev.what)
    ends = ("the process dies while that shows" if dev.kind == "crash" else
            "exits 1 while that shows, 0 when it does not" if dev.kind != "none" else
            "exits 0 while they agree, 1 when they do not")
    head = parts.description.rstrip(".")
    body = (f"Harness case {parts.case} at {parts.point}, order {parts.order}: {shows}. Needs only "
            f"TensorFlow and NumPy; {ends}.")
    return "\n".join(['"""' + textwrap.fill(head + ".", width=97), "",
                      textwrap.fill(body, width=100), '"""'])


def _top_names(parts: ScriptParts) -> set[str]:
    """Names the definitions bind or read at the top level: a constant of the script must not
    take one."""
    try:
        tree = ast.parse(parts.imports + "\n" + parts.definitions)
    except SyntaxError:
        return set(re.findall(r"[A-Za-z_]\w*", parts.definitions + " " + parts.imports))
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        getattr(n, "name", "") for n in tree.body} | {
        (a.asname or a.name).split(".")[0] for n in tree.body
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names}


def _run_pair(mode: str) -> str:
    """The (name, function) pair the short script runs `mode` with."""
    if mode_names.ROWS[mode].repro == mode_names.TAPE:
        return f"({mode!r}, gradients)"
    options = mode_names.ROWS[mode].function_options
    return f"({mode!r}, tf.function(gradients{', ' + options if options else ''}))"


def render(parts: ScriptParts, result: Result, tolerance: ToleranceOverride = None) -> Short:
    """The short repro.py for `result`, and what running it must show.

    Raises:
      NotShort: the short form cannot show this result's deviation.
    """
    dev = deviation(result, tolerance)
    active = {m: o for m, o in result.outcomes.items() if o.status is not Status.SKIP}
    ref = active[dev.yardstick]
    _check_supported(parts, ref)
    taken = _top_names(parts)
    names = [_variable(n, {parts.expression}) for n in parts.names]
    constants = [_variable(n.upper() if n.upper() != n else n + "_value", taken | set(names))
                 for n in parts.names]
    wrt = [names[i] for i in parts.wrt]
    unconnected = (", unconnected_gradients=tf.UnconnectedGradients.ZERO" if parts.unconnected_zero
                   else "")
    shown = (dev.yardstick,) + tuple(m for m in dev.modes if m != dev.yardstick)
    lines = [_docstring(parts, dev), "import numpy as np", "import tensorflow as tf"]
    if parts.imports:
        lines.append(parts.imports)
    lines += ["", ""]
    if parts.definitions:
        lines += [parts.definitions, "", ""]
    expression = parts.expression
    tape_modes = [m for m in shown if mode_names.ROWS[m].repro != mode_names.GRAPH]
    if tape_modes or dev.kind == "numeric":
        lines += _orders_code(expression, names, wrt, parts.order, unconnected) + ["", ""]
    lines += [f"{c} = {v}" for c, v in zip(constants, parts.inputs)]
    # A process that dies loses what it has not flushed.
    flush = ", flush=True" if dev.kind == "crash" else ""
    lines += [f"print('TensorFlow', tf.version.VERSION{flush})", "found = {}"]
    keep = dev.kind != "errors" and dev.kind != "crash"  # the values are compared
    if tape_modes:
        runs = ", ".join(_run_pair(m) for m in tape_modes)
        call = ", ".join(f"tf.constant({c})" for c in constants)
        lines += [f"for mode, run in [{runs}]:"]
        lines += ["    print(mode + ': running', flush=True)"] if dev.kind == "crash" else []
        lines += ["    try:"]
        lines += ([f"        found[mode] = [t.numpy() for t in run({call})]",
                   "        print(mode + ': ok', *found[mode])"] if keep else
                  [f"        print(mode + ': ok', *[t.numpy() for t in run({call})])",
                   "        found[mode] = 'ok'"])
        lines += ["    except Exception as e:",
                  "        found[mode] = type(e).__name__",
                  "        said = str(e).strip().splitlines() or ['']  # tf.function's start 'in "
                  "user code:'",
                  "        said = (said[-1] if said[0] == 'in user code:' else said[0]).strip()",
                  "        print(f'{mode}: {said}' if said.startswith(type(e).__name__) else "
                  "f'{mode}: {type(e).__name__}: {said}')"]
    for mode in (m for m in shown if mode_names.ROWS[m].repro == mode_names.GRAPH):
        lines += [""] + _graph_code(mode, expression, names, constants, parts, wrt, parts.order,
                                    unconnected, keep)
    lines += _verdict_code(dev, parts, ref, constants, tolerance, result)
    expected = Expected(exit=None if dev.kind == "crash" else 0 if dev.kind == "none" else 1,
                        outcomes={m: _shown(active[m]) for m in shown}, what=dev.what)
    return Short(text="\n".join(lines) + "\n", expected=expected)


def _verdict_code(dev: _Deviation, parts: ScriptParts, ref: ModeOutcome, constants: list[str],
                  tolerance: ToleranceOverride, result: Result) -> list[str]:
    y = dev.yardstick
    others = [m for m in dev.modes if m != y]
    kind = "kind = {m: v if isinstance(v, str) else 'ok' for m, v in found.items()}"
    if dev.kind == "crash":
        return ["print('SAME: the process survived')", "raise SystemExit(0)"]
    if dev.kind == "errors":
        # A mode that did not raise is 'ok', even once shrinking has dropped the line saying so.
        return [
            f"differs = [m for m in {others!r} if found.get(m, 'ok') != found.get({y!r}, 'ok')]",
            (
                "print('DIFFERS:' if differs else 'SAME:', ', '.join(f'{m} {found[m]}' for m in "
                "found))"
            ),
            "raise SystemExit(1 if differs else 0)",
        ]
    if dev.kind in ("values", "none"):
        dtype = (next((o.dtype for o in ref.orders[0]), parts.dtypes[0]) if ref.status is Status.OK
                 else parts.dtypes[0])
        tol = tolerance_for(dtype, tolerance)
        return [kind,
                f"# {dtype} tolerance: |a - b| <= atol + rtol * |b|.",
                f"differs = [m for m in {others!r} if kind[m] != kind[{y!r}] or kind[m] == 'ok' "
                "and not all(",
                f"    a.shape == b.shape and np.allclose(a, b, rtol={tol.rtol:g}, "
                f"atol={tol.atol:g}, equal_nan=True)",
                f"    for a, b in zip(found[m], found[{y!r}]))]",
                f"print('DIFFERS: ' + ', '.join(m if kind[m] == 'ok' else f'{{m}} ({{kind[m]}})' "
                f"for m in differs) + ' differ from {y}' if differs else 'SAME: every mode within "
                f"the {dtype} tolerance of {y}')",
                "raise SystemExit(1 if differs else 0)"]
    outputs = len(ref.orders[0])
    if dev.kind == "gradient":
        sources = ", ".join(constants[i] for i in parts.wrt)
        return [f"# Every gradient must have its input's shape and dtype (the first {outputs} "
                "values are the function's).",
                f"sources = [{sources}] * {parts.order}",
                "bad = [f'{m}: {g.dtype}{list(g.shape)} for a {x.dtype}{list(x.shape)} input' for "
                "m, v in found.items()",
                f"       if not isinstance(v, str) for g, x in zip(v[{outputs}:], sources)",
                "       if g is not None and (g.shape != x.shape or g.dtype != x.dtype)]",
                "print('DIFFERS: ' + '; '.join(bad) if bad else 'SAME: every gradient has its "
                "input\\'s shape and dtype')",
                "raise SystemExit(1 if bad else 0)"]
    return _numeric_code(parts, ref, constants, tolerance, result, outputs)


def numeric_check(result: Result, parts: ScriptParts, tolerance: ToleranceOverride = None):
    """How a script checks what the numeric oracle found: the order it differs at, the dtype and
    step of its central differences, and its tolerance.

    Raises:
      NotShort: the oracle names no order.
    """
    numeric = result.oracles[NUMERIC]
    if not numeric.differ:
        raise NotShort("the numeric oracle differs, with no order saying where")
    match = re.search(r"central differences in (\w+) with step ([0-9.e+-]+)", numeric.note)
    dtype = match[1] if match else parts.dtypes[parts.wrt[0]]
    step = float(match[2]) if match else NUMERIC_STEPS[dtype]
    return (numeric.differ[0], dtype, step,
            numeric_tolerance_for(parts.dtypes[parts.wrt[0]], tolerance))


# Each element of an input the numeric derivative differs along costs two runs of the tapes: a
# bug report's script stays at a few seconds.
_NUMERIC_ELEMENTS = 64


def _numeric_code(parts: ScriptParts, ref: ModeOutcome, constants: list[str],
                  tolerance: ToleranceOverride, result: Result, outputs: int) -> list[str]:
    elements = sum(math.prod(parts.shapes[i]) for i in parts.wrt)
    if elements > _NUMERIC_ELEMENTS:
        raise NotShort("the numeric derivative differs, and the short script writes it out for "
                       f"inputs of at most {_NUMERIC_ELEMENTS} elements in all, not {elements}")
    if ref.status is not Status.OK:
        raise NotShort("the numeric oracle differs, with no order saying where")
    k, dtype, step, tol = numeric_check(result, parts, tolerance)
    if len(parts.wrt) > 1 or parts.shapes[parts.wrt[0]] != ():
        return _numeric_code_of_each(parts, ref, constants, tol, k, dtype, step, outputs)
    i = parts.wrt[0]
    x = constants[i]
    below = f"0:{outputs}" if k == 1 else f"{outputs + k - 2}"
    got = outputs + k - 1
    args = lambda shift: ", ".join(  # noqa: E731
        f"tf.constant({c}.astype(np.{dtype}) {shift} h)" if j == i else
        (f"tf.constant({c}.astype(np.{dtype}))" if parts.dtypes[j].startswith("float")
         else f"tf.constant({c})")
        for j, c in enumerate(constants))
    return ["", "# The numeric derivative: central differences of the order below,",
            f"# in {dtype} with the step {step:g} (scaled by |{x}| above 1).",
            f"h = {step!r} * max(1.0, abs(float({x})))",
            f"up = np.sum(gradients({args('+')})[{below}])",
            f"down = np.sum(gradients({args('-')})[{below}])",
            "numeric = (up - down) / (2 * h)",
            f"got = found[{ref.mode!r}][{got}] if not isinstance(found[{ref.mode!r}], str) else "
            "None",
            f"print('numeric: order {k}', numeric)",
            f"differs = got is None or not np.allclose(got, numeric, rtol={tol.rtol:g}, "
            f"atol={tol.atol:g}, equal_nan=True)",
            f"print('DIFFERS:' if differs else 'SAME:', 'order {k}', got, 'vs the numeric', "
            "numeric)",
            "raise SystemExit(1 if differs else 0)"]


def _numeric_code_of_each(parts: ScriptParts, ref: ModeOutcome, constants: list[str], tol, k: int,
                          dtype: str, step: float, outputs: int) -> list[str]:
    """The numeric derivative at order `k` for several inputs, or one with elements: the order
    below summed, then central differences along one element at a time, printed beside each
    gradient."""
    n = len(parts.wrt)
    below = f"0:{outputs}" if k == 1 else f"{outputs + n * (k - 2)}:{outputs + n * (k - 1)}"
    first = outputs + n * (k - 1)
    base = ", ".join(f"{c}.astype(np.{dtype})" if parts.dtypes[j].startswith("float") else c
                     for j, c in enumerate(constants))
    names = [constants[i] for i in parts.wrt]
    return ["",
            "# The numeric derivative: central differences of the sum of the order below, one "
            "element",
            f"# at a time, in {dtype} with the step {step:g} (scaled by the element's size above "
            "1).",
            "def below(xs):",
            f"    return sum(np.sum(t) for t in gradients(*[tf.constant(v) for v in xs])[{below}])",
            "", "", f"base = [{base}]", "numeric = []", f"for i in {list(parts.wrt)!r}:",
            "    slope = np.zeros(base[i].shape)", "    for at in np.ndindex(base[i].shape):",
            f"        h = {step!r} * max(1.0, abs(float(base[i][at])))",
            "        up, down = [v.copy() for v in base], [v.copy() for v in base]",
            "        up[i][at] += h", "        down[i][at] -= h",
            "        slope[at] = (below(up) - below(down)) / (2 * h)", "    numeric.append(slope)",
            f"got = found[{ref.mode!r}][{first}:{first + n}] if not "
            f"isinstance(found[{ref.mode!r}], str) else None",
            f"for name, value in zip({names!r}, numeric):",
            f"    print(f'numeric: order {k} wrt {{name}}', value)",
            f"differs = got is None or not all(np.allclose(g, v, rtol={tol.rtol:g}, "
            f"atol={tol.atol:g}, equal_nan=True) for g, v in zip(got, numeric))",
            f"print('DIFFERS:' if differs else 'SAME:', 'order {k}', *(got or ['none']), 'vs the "
            "numeric', *numeric)",
            "raise SystemExit(1 if differs else 0)"]


def full_expected(result: Result, tolerance: ToleranceOverride = None,
                  numeric: bool = False) -> Expected:
    """What the complete script (harness.repro.script) must show for `result`: each mode it
    writes out as the harness saw it, and exit 1 when those modes disagree, a gradient is
    malformed, or (`numeric`: the script checks it) the numeric derivative differs."""
    written = {m: o for m, o in result.outcomes.items() if m in mode_names.WRITTEN_OUT
               and o.status is not Status.SKIP}
    if not written:
        raise NotShort("no mode the script writes out ran")
    first = next(iter(written.values()))
    dead = [m for m, o in written.items() if o.status in (Status.CRASH, Status.TIMEOUT)]
    if dead:
        return Expected(exit=None, outcomes={}, what=f"{dead[0]} {written[dead[0]].status.value}")
    differ = any(compare_outcomes(first, o, tolerance=tolerance, upstream=False)
                 for o in written.values())
    malformed = any(o.status is Status.OK and check_gradients(o) for o in written.values())
    return Expected(exit=1 if differ or malformed or numeric else 0,
                    outcomes={m: _shown(o) for m, o in written.items()},
                    what="the modes disagree" if differ else "a malformed gradient" if malformed
                    else
                    "the values differ from the numeric derivative" if numeric
                    else "every mode it writes out agrees")
