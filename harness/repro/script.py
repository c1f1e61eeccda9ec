"""A standalone reproduction script for one case at one point.

The script needs TensorFlow and NumPy only. It writes the three modes out
plainly, as a TensorFlow maintainer would, prints the environment and every
mode's values or exception, and exits 1 when the modes disagree. With --json
it prints the same as one JSON object, encoded like the harness report.
"""

from __future__ import annotations

import dataclasses
import textwrap
from typing import Sequence

import numpy as np

from harness import loader, mode_names
from harness.case import Case, Point
from harness.jobs import Job
from harness.repro.source import ReproError, extract
from harness.criteria.tolerance import tolerance_for

__all__ = ["ScriptParts", "for_points", "parts", "render", "with_numeric"]

_HEADER_IMPORTS = ("import json", "import platform", "import sys", "", "import numpy as np",
                   "import tensorflow as tf")


def _literal(value: np.ndarray) -> str:
    dtype = value.dtype.name
    numpy_dtype = "tf.bfloat16.as_numpy_dtype" if dtype == "bfloat16" else f"np.{dtype}"

    def text(v) -> str:
        if isinstance(v, np.ndarray) and v.ndim:
            return "[" + ", ".join(text(x) for x in v) + "]"
        scalar = v[()] if isinstance(v, np.ndarray) else v
        # str() of a NumPy scalar is the shortest text that reads back to the same value.
        s = str(scalar)
        return {"nan": "float('nan')", "inf": "float('inf')", "-inf": "float('-inf')"}.get(s, s)

    return f"np.array({text(value)}, dtype={numpy_dtype})"


@dataclasses.dataclass(frozen=True)
class ScriptParts:
    """What a reproduction of one case at one point is made of, as plain text.

    The worker, which has the case's code, writes these; the main process, which
    has the verdict, puts the short script together from them (harness.repro.short).

    Attributes:
      case, point, order, description, source: the case, the point's label, and what
        the case says about itself.
      imports: the import lines the function needs, beyond `import numpy as np` and
        `import tensorflow as tf`.
      definitions: the source of the function and of what it uses.
      expression: the expression naming the function under test (or its builder).
      builder: whether `expression` names a zero-argument builder, not the function.
      names: the argument names, in call order.
      inputs: each argument's value as a NumPy literal.
      dtypes, shapes: each argument's dtype name and shape.
      wrt: indices of the differentiated arguments.
      unconnected_zero: unconnected gradients are zeros, not None.
      command: the harness command line that reruns this case and point.
      full: the complete script (render()).
      origin, library: for a function from an installed library, its module and name, and the
        distribution with its version ("tensorflow 2.21.0"); "" for one defined with the case.
    """

    case: str
    point: str
    order: int
    description: str
    source: str
    imports: str
    definitions: str
    expression: str
    builder: bool
    names: tuple[str, ...]
    inputs: tuple[str, ...]
    dtypes: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    wrt: tuple[int, ...]
    unconnected_zero: bool
    command: str
    full: str
    origin: str = ""
    library: str = ""


def parts(case: Case, point: Point, modes: Sequence[str], unconnected_zero: bool,
          command: str) -> ScriptParts:
    """The pieces of a reproduction of `case` at `point`, the complete script among them.

    Raises:
      ReproError: the function's source cannot be recovered.
    """
    target = case.fn if case.fn is not None else case.build
    code = extract(target)
    # The short script imports numpy and tensorflow itself, and nothing else.
    imports = [line for line in code.imports.splitlines()
               if line not in ("import numpy as np", "import tensorflow as tf")]
    return ScriptParts(
        case=case.id, point=point.label, order=case.order, description=_described(case, code),
        source=case.source, imports="\n".join(imports), definitions=code.definitions,
        expression=code.expression, builder=case.fn is None, names=tuple(point.names),
        inputs=tuple(_literal(v) for v in point.values),
        dtypes=tuple(v.dtype.name for v in point.values),
        shapes=tuple(tuple(v.shape) for v in point.values), wrt=tuple(case.wrt_indices),
        unconnected_zero=unconnected_zero, command=command,
        full=render(case, point, modes, unconnected_zero, command), origin=code.origin,
        library=code.library)


def for_points(case: Case, job: Job) -> dict[str, tuple[bool, object]]:
    """Each point's ScriptParts for `job`, or why there are none: {label: (True, parts) or
    (False, why)}.

    The command line hands this to the worker in the job (Job.repro), so the worker writes
    reproductions without importing this package; it runs before the case, so a crash loses none.
    """
    reruns = dict(job.reruns)
    found: dict[str, tuple[bool, object]] = {}
    for point in case.points:
        try:
            found[point.label] = (True, parts(loader.narrow(case, [point.label]), point, job.modes,
                                              job.options.unconnected_zero, reruns[point.label]))
        except ReproError as e:
            found[point.label] = (False, str(e))
    return found


def _described(case: Case, code) -> str:
    """What the script says the function is: for a library's function, which one and from which
    release (a command-line check's own description says only that it was checked there)."""
    if not code.library:
        return case.description
    origin = f"{code.origin} from {code.library}"
    return origin if case.id.startswith("check.") else f"{case.description} ({origin})"


def render(case: Case, point: Point, modes: Sequence[str], unconnected_zero: bool,
           command: str) -> str:
    """The text of repro.py for `case` at `point`, for the selected modes it can write out."""
    target = case.fn if case.fn is not None else case.build
    code = extract(target)
    imports = [line for line in code.imports.splitlines() if line not in _HEADER_IMPORTS]
    dtypes = sorted({v.dtype.name for v in point.values})
    tolerances = {d: (tolerance_for(d, case.tolerance).rtol, tolerance_for(d, case.tolerance).atol)
                  for d in dtypes}
    inputs = ",\n    ".join(_literal(v) for v in point.values)
    make = (f"def make_function():\n    return {code.expression}, []\n" if case.fn is not None else
            _BUILD.format(expression=code.expression, wrt_variables=case.wrt_variables))
    return _TEMPLATE.format(
        case_id=case.id, point=point.label, order=case.order, description=_described(case, code),
        source=case.source, command=command,
        header="\n".join(_HEADER_IMPORTS), imports=("\n".join(imports) + "\n") if imports else "",
        definitions=code.definitions + "\n\n\n" if code.definitions else "",
        make=make, inputs=inputs, names=list(point.names), wrt=list(case.wrt_indices),
        order_value=case.order, modes=[m for m in modes if m in mode_names.WRITTEN_OUT],
        unconnected="ZERO" if unconnected_zero else "NONE", tolerances=tolerances,
        body=_BODY.replace(_RUNNERS, _runners()),
    )


def _runners() -> str:
    """main()'s dict from each mode the script can write out (harness.mode_names.WRITTEN_OUT) to
    what runs it: run_eager for a TAPE row, run_graph for a GRAPH row, run_function with the row's
    function_options for a FUNCTION row."""
    calls = {mode_names.TAPE: "run_eager", mode_names.GRAPH: "run_graph"}
    items = []
    for name in mode_names.WRITTEN_OUT:
        row = mode_names.ROWS[name]
        call = calls.get(row.repro) or (f"lambda: run_function({row.function_options})"
                                        if row.function_options else "run_function")
        items.append(f'"{name}": {call}')
    head = _RUNNERS[:_RUNNERS.index("RUNNERS")] + "{"
    lines = [head]
    for item in items:
        if lines[-1] != head and len(lines[-1]) + len(item) + 3 > 100:
            lines[-1] += ","
            lines.append(" " * len(head))
        elif lines[-1] != head:
            lines[-1] += ", "
        lines[-1] += item
    return "\n".join(lines) + "}\n"


def with_numeric(full: str, mode: str, order: int, dtype: str, step: float, rtol: float,
                 atol: float) -> str:
    """The complete script `full` checking `mode`'s gradients at `order` against central
    differences in `dtype` with `step`, within rtol and atol (the numeric oracle's)."""
    numeric = {"mode": mode, "order": order, "dtype": dtype, "step": step, "rtol": rtol,
               "atol": atol}
    line = "\nNUMERIC = None  #"
    if full.count(line) != 1:
        raise ValueError("the complete script has no NUMERIC line to set")
    return full.replace(line, f"\nNUMERIC = {numeric!r}  #", 1)


_BUILD = '''\
def make_function():
    """Calls the builder; returns the function and the trainable variables it created."""
    created = []

    def record(next_creator, **kwargs):
        variable = next_creator(**kwargs)
        created.append(variable)
        return variable

    with tf.variable_creator_scope(record):
        fn = {expression}()
    return fn, ([v for v in created if v.trainable] if {wrt_variables} else [])
'''

_TEMPLATE = '''\
"""Reproduces harness case {case_id} at {point}, derivative order {order}.

{description}
Source: {source}

Needs only TensorFlow and NumPy. Runs the function in eager mode (nested
tf.GradientTape), inside one tf.function, and in a tf.compat.v1 graph with
tf.gradients and a Session; prints each mode's values or exception; exits 1
when the modes disagree. Order k is the gradient of the sum of the order k-1
gradients with respect to the same inputs. Pass --json for machine output.

Found with: {command}
"""

{header}
{imports}

{definitions}{make}

INPUTS = [
    {inputs},
]
NAMES = {names}
WRT = {wrt}  # indices of the differentiated inputs
ORDER = {order_value}
MODES = {modes}
UNCONNECTED = tf.UnconnectedGradients.{unconnected}
TOLERANCE = {tolerances}  # dtype: (rtol, atol), |got - eager| <= atol + rtol * |eager|
NUMERIC = None  # set where the harness's numeric oracle says the values are wrong: see wrong()

{body}'''

# The line of _BODY that render replaces with the dict of each written-out mode's runner (_runners).
_RUNNERS = "    runners = RUNNERS\n"

_BODY = textwrap.dedent('''
    def outputs(result):
        return [tf.convert_to_tensor(t) for t in tf.nest.flatten(result)]


    def dense(gradient):
        if isinstance(gradient, tf.IndexedSlices):
            return tf.convert_to_tensor(gradient)
        return gradient


    def as_numpy(orders):
        return values([[None if t is None else t.numpy() for t in o] for o in orders])


    def targets(tensors):
        return [t for t in tensors if t is not None and (t.dtype.is_floating or t.dtype.is_complex)]


    def tape_orders(fn, variables, xs, stage, order=ORDER):
        """Orders 0..order with nested tapes: the tape for order k records order k-1."""
        sources = [xs[i] for i in WRT] + variables

        def upto(k):
            if k == 0:
                stage[0] = "forward"
                return [outputs(fn(*xs))]
            with tf.GradientTape() as tape:
                tape.watch(sources)
                orders = upto(k - 1)
            # Below the last order, the tapes of the orders above are recording this one.
            above = "" if k == order else (f", while recording for order {k + 1}" if k + 1 == order
                                           else f", while recording for orders {k + 1} to {order}")
            stage[0] = f"order {k}{above}"
            ys = targets(orders[-1])
            grads = (tape.gradient(ys, sources, unconnected_gradients=UNCONNECTED) if ys
                     else [None] * len(sources))
            return orders + [[dense(g) for g in grads]]

        return upto(order)


    def failure(error, stage):
        return {"status": "error", "error_type": type(error).__name__, "stage": stage,
                "error_message": str(error)}


    def values(orders):
        return [[None if t is None else np.asarray(t) for t in order] for order in orders]


    def run_eager():
        stage = ["build"]
        try:
            fn, variables = make_function()
            xs = [tf.constant(v) for v in INPUTS]
            orders = tape_orders(fn, variables, xs, stage)
            return {"status": "ok", "orders": as_numpy(orders)}
        except Exception as e:
            return failure(e, stage[0])


    def run_function(**function_options):
        stage = ["build"]
        try:
            fn, variables = make_function()

            @tf.function(**function_options)
            def all_orders(*xs):
                orders = tape_orders(fn, variables, xs, stage)
                stage[0] = "run"
                return orders

            orders = all_orders(*[tf.constant(v) for v in INPUTS])
            return {"status": "ok", "orders": as_numpy(orders)}
        except Exception as e:
            return failure(e, stage[0])


    def run_graph():
        stage = ["build"]
        try:
            graph = tf.Graph()
            with graph.as_default():
                xs = [tf.compat.v1.placeholder(tf.as_dtype(v.dtype), shape=v.shape, name=n)
                      for n, v in zip(NAMES, INPUTS)]
                fn, variables = make_function()
                sources = [xs[i] for i in WRT] + variables
                stage[0] = "forward"
                orders = [outputs(fn(*xs))]
                for k in range(1, ORDER + 1):
                    stage[0] = f"order {k}"
                    ys = targets(orders[-1])
                    # A complex output has no default upstream gradient in tf.gradients: ones, as
                    # a tape gives.
                    grad_ys = [tf.ones_like(y) if y.dtype.is_complex else None for y in ys]
                    grads = (tf.gradients(ys, sources, grad_ys=grad_ys,
                                          unconnected_gradients=UNCONNECTED)
                             if ys else [None] * len(sources))
                    orders.append([dense(g) for g in grads])
                init = tf.compat.v1.global_variables_initializer()
            with tf.compat.v1.Session(graph=graph) as session:
                stage[0] = "build"
                session.run(init)
                feed = dict(zip(xs, INPUTS))
                found = []
                for k, order in enumerate(orders):
                    stage[0] = "forward" if k == 0 else f"order {k}"
                    fetched = iter(session.run([t for t in order if t is not None], feed_dict=feed))
                    found.append([None if t is None else next(fetched) for t in order])
            return {"status": "ok", "orders": values(found)}
        except Exception as e:
            return failure(e, stage[0])


    def source_specs():
        """(dtype, shape) of what each gradient is taken with respect to, from the eager builder."""
        specs = [(INPUTS[i].dtype.name, INPUTS[i].shape) for i in WRT]
        try:
            _, variables = make_function()
        except Exception:
            return specs  # the builder's own failure is already reported per mode
        return specs + [(v.dtype.base_dtype.name, tuple(v.shape.as_list())) for v in variables]


    def disagreements(results):
        """Every way the modes differ from eager, and every malformed gradient."""
        found = []
        ref = results["eager"] if "eager" in results else next(iter(results.values()))
        specs = source_specs()
        for mode, got in results.items():
            if got["status"] == "ok":
                for k, order in enumerate(got["orders"][1:], start=1):
                    for i, (g, (dtype, shape)) in enumerate(zip(order, specs)):
                        if g is not None and (g.dtype.name != dtype or g.shape != tuple(shape)):
                            found.append(f"{mode}: order {k} gradient {i} is "
                                         f"{g.dtype.name}{list(g.shape)}, "
                                         f"its source is {dtype}{list(shape)}")
            if got is ref:
                continue
            if ref["status"] != "ok" or got["status"] != "ok":
                if ref.get("error_type") != got.get("error_type"):
                    found.append(f"{mode}: {got.get('error_type') or 'values'} vs eager: "
                                 f"{ref.get('error_type') or 'values'}")
                continue
            for k, (a_order, b_order) in enumerate(zip(got["orders"], ref["orders"])):
                for i, (a, b) in enumerate(zip(a_order, b_order)):
                    where = f"{mode} vs eager, order {k} output {i}"
                    if (a is None) != (b is None):
                        found.append(f"{where}: None vs a value")
                    elif a is not None and (a.dtype != b.dtype or a.shape != b.shape):
                        found.append(f"{where}: {a.dtype.name}{list(a.shape)} "
                                     f"vs {b.dtype.name}{list(b.shape)}")
                    elif a is not None:
                        rtol, atol = TOLERANCE.get(a.dtype.name, (0.0, 0.0))
                        wa, wb = a.astype(np.complex128), b.astype(np.complex128)
                        same_nan = (np.isnan(wa) == np.isnan(wb)).all()
                        finite = np.isfinite(wa) & np.isfinite(wb)
                        infinite = ~finite & ~np.isnan(wa)
                        same_inf = (wa[infinite] == wb[infinite]).all()
                        close = (np.abs(wa - wb)[finite] <= atol + rtol * np.abs(wb)[finite]).all()
                        if not (same_nan and same_inf and close):
                            found.append(f"{where}: {a.tolist()} vs {b.tolist()}")
        return found


    def wrong(results):
        """NUMERIC's mode's gradients at NUMERIC's order against central differences of the sum of
        the order below, one input element at a time: each gradient that differs, beside its
        numeric derivative."""
        got = results.get(NUMERIC["mode"]) if NUMERIC else None
        if got is None or got["status"] != "ok":
            return []
        k = NUMERIC["order"]
        fn, variables = make_function()

        def below(xs):
            orders = tape_orders(fn, variables, [tf.constant(v) for v in xs], ["forward"],
                                 order=k - 1)
            return sum(np.sum(t.numpy()) for t in targets(orders[-1]))

        base = [v.astype(NUMERIC["dtype"]) if v.dtype.kind == "f" else v for v in INPUTS]
        found = []
        for j, i in enumerate(WRT):
            numeric = np.zeros(base[i].shape)
            for at in np.ndindex(base[i].shape):
                h = NUMERIC["step"] * max(1.0, abs(float(base[i][at])))
                up, down = [v.copy() for v in base], [v.copy() for v in base]
                up[i][at] += h
                down[i][at] -= h
                numeric[at] = (below(up) - below(down)) / (2 * h)
            gradient = got["orders"][k][j]
            if gradient is None or not np.allclose(gradient, numeric, rtol=NUMERIC["rtol"],
                                                   atol=NUMERIC["atol"], equal_nan=True):
                found.append(f"order {k} gradient wrt {NAMES[i]}: {NUMERIC['mode']} "
                             f"{None if gradient is None else gradient.tolist()} "
                             f"vs the numeric {numeric.tolist()}")
        return found


    def encode(value):
        if value is None:
            return None
        if value.ndim:
            return [encode(v) for v in value]
        x = value[()]
        if np.iscomplexobj(x):
            return [encode(np.asarray(x.real)), encode(np.asarray(x.imag))]
        if isinstance(x, (np.bool_, bool)):
            return bool(x)
        if isinstance(x, np.integer):
            return int(x)
        text = str(x)
        return text if text in ("nan", "inf", "-inf") else float(text)


    def main():
        environment = {"tensorflow": tf.version.VERSION, "tensorflow_git": tf.version.GIT_VERSION,
                       "numpy": np.__version__, "python": platform.python_version(),
                       "platform": platform.platform()}
        runners = RUNNERS
        results = {mode: runners[mode]() for mode in MODES}
        problems = disagreements(results)
        numeric = wrong(results)
        if "--json" in sys.argv:
            encoded = {m: dict(r, orders=[[encode(v) for v in o] for o in r.get("orders", [])])
                       for m, r in results.items()}
            print(json.dumps({"environment": environment, "modes": encoded,
                              "disagreements": problems, "numeric": numeric}))
        else:
            print(", ".join(f"{k} {v}" for k, v in environment.items()))
            for mode, r in results.items():
                if r["status"] == "ok":
                    print(f"{mode}: ok")
                    for k, order in enumerate(r["orders"]):
                        print(f"  order {k}: {[None if v is None else v.tolist() for v in order]}")
                else:
                    lines = [line.strip() for line in r["error_message"].splitlines()
                             if line.strip()] or [""]
                    # tf.function puts "in user code:" and a traceback before the error's own line.
                    first = lines[-1] if lines[0] == "in user code:" else lines[0]
                    print(f"{mode}: {r['error_type']} at {r['stage']}: {first}")
            print("\\n".join(["DISAGREE:"] + [f"  {p}" for p in problems]) if problems else "AGREE")
            if numeric:
                print("\\n".join(["WRONG: the numeric derivative differs"]
                                 + [f"  {p}" for p in numeric]))
        return 1 if problems or numeric else 0


    if __name__ == "__main__":
        sys.exit(main())
''')
