"""Figures on how the harness's code is laid out, for a before-and-after of house work:

    python scripts/house_figures.py [--root CHECKOUT] [--walk CASE_ID]

- the import arrows between folders, each marked down, level or up by the layers below (an up
  arrow climbs: a lower layer importing a higher one);
- the imports from measuring (measure/, process/worker) into judging (judge/);
- file and function sizes: the largest of each, and how many functions pass 60 lines;
- with --walk: one job of that library case run in this process as a worker runs it (its three
  core modes, a repro script wanted), then judged as the main process judges it, with every call
  into the harness's code traced: the modules and folders it enters, and the calls that climb.

--root reads another checkout (a `git worktree` of an older commit), so the same script measures
before and after. The walk imports that checkout's harness, and TensorFlow.
"""

import argparse
import ast
import collections
import os
import sys

# The layers, highest first: a module may import its own layer and those below. Top-level modules
# of harness/ not named here are the records and helpers at the bottom.
LAYERS = (
    ("entry", ("harness.__main__", "harness.api", "harness.run_here", "harness.cli")),
    ("tools", ("harness.repro", "harness.explore", "harness.report", "harness.matrix")),
    ("process", ("harness.process",)),
    ("judge", ("harness.judge",)),
    ("measure", ("harness.measure", "harness.record", "harness.loader", "harness.checking")),
    # The case API and the criteria read each other's records (a Case's tolerance; the rules read
    # its expectations): one layer.
    ("case and criteria", ("harness.case", "harness.criteria")),
)


def layer(module: str) -> tuple[int, str]:
    """(rank, name): the higher the rank, the higher the layer."""
    for rank, (name, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return len(LAYERS) - rank, name
    return 0, "records"


def folder(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or module in PACKAGES else "harness (top)"


PACKAGES: set = set()


def import_graph(root: str) -> dict:
    sys.path.insert(0, root)
    from tests.unit import test_imports  # noqa: PLC0415 - the graph the import test builds

    test_imports.ROOT = root
    test_imports.PACKAGE = os.path.join(root, "harness")
    test_imports.SKIPPED = {os.path.join(root, "harness", "cases")}
    files = test_imports.module_files()
    PACKAGES.update(m for m, path in files.items() if path.endswith("__init__.py"))
    return {m: test_imports.imports_of(m, path, files) for m, path in files.items()}, files


def _way(a: str, b: str) -> str:
    return ("up" if layer(b)[0] > layer(a)[0] else
            "level" if layer(b)[0] == layer(a)[0] else "down")


def arrows(graph: dict) -> None:
    pairs = collections.Counter((folder(a), folder(b), _way(a, b)) for a in graph
                                for b in graph[a] if folder(a) != folder(b))
    print("import arrows between folders (module imports; the way by the modules' layers):")
    for (a, b, way), n in sorted(pairs.items()):
        print(f"  {a:24} -> {b:24} {n:3}  {way}")
    climbing = sorted(f"{a} -> {b}" for a in graph for b in graph[a] if _way(a, b) == "up")
    print(f"  {sum(pairs.values())} module arrows between folders; {len(climbing)} arrows climb:")
    for line in climbing:
        print(f"    {line}")
    into_judge = sorted(f"{a} -> {b}" for a in graph for b in graph[a]
                        if a.startswith(("harness.measure", "harness.process.worker"))
                        and b.startswith("harness.judge"))
    print(f"imports from measuring into judge/: {len(into_judge)}")
    for line in into_judge:
        print(f"  {line}")


def sizes(files: dict) -> None:
    functions, lengths = [], []
    for module, path in files.items():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lengths.append((text.count("\n"), module))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.append((node.end_lineno - node.lineno + 1, f"{module}.{node.name}"))
    functions.sort(reverse=True)
    lengths.sort(reverse=True)
    print(f"{len(files)} modules, {sum(n for n, _ in lengths)} lines; largest files: "
          + ", ".join(f"{m} {n}" for n, m in lengths[:5]))
    print(f"{len(functions)} functions, {sum(n > 60 for n, _ in functions)} over 60 lines; "
          "largest: " + ", ".join(f"{m} {n}" for n, m in functions[:5]))


def walk(case_id: str, graph: dict) -> None:
    """One job of `case_id` measured as a worker measures it, then judged, every harness call
    traced. A call climbs when it goes up a layer along an import of the caller's; a callback
    handed down (the worker's `notify`, the job's repro builder) is not one."""
    from harness.jobs import Job  # noqa: PLC0415
    from harness.judge import judging  # noqa: PLC0415
    from harness.process import worker  # noqa: PLC0415
    from harness.records import RunOptions  # noqa: PLC0415
    from harness.repro import script  # noqa: PLC0415

    loaded = worker.load(worker.Origins(library=True))
    case = loaded.cases[case_id]
    job = Job(case_id=case_id, order=case.order, points=tuple(p.label for p in case.points),
              modes=("eager", "function", "graph"), options=RunOptions(), strict_xpass=False,
              reruns=tuple((p.label, f"rerun {case_id}[{p.label}]") for p in case.points),
              repro=script.for_points)
    infos = {case_id: __import__("harness.loader", fromlist=["info"]).info(case)}
    entered, calls = [], collections.Counter()

    def profile(frame, event, arg):
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back else ""
        if module.startswith("harness.") and not module.startswith("harness.cases"):
            entered.append(module)
            if caller.startswith("harness.") and caller != module:
                calls[(caller, module)] += 1

    sys.setprofile(profile)
    try:
        measured, changed = worker.run_job(loaded, job, lambda kind, payload: None)
        from harness.jobs import Carried  # noqa: PLC0415
        judging.judged(Carried(0, job, 0.0, {}, measured=measured, changed=changed), infos,
                       loaded.environment)
    finally:
        sys.setprofile(None)
    modules = sorted(set(entered))
    climbs = sorted(f"{a} -> {b}" for (a, b) in calls
                    if layer(b)[0] > layer(a)[0] and b in graph.get(a, ()))
    print(f"walk of {case_id} from worker.run_job through judging: {len(modules)} modules in "
          f"{len({folder(m) for m in modules})} folders; {len(climbs)} calls climb")
    for line in climbs:
        print(f"  {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(
        __file__))))
    parser.add_argument("--walk", default="")
    args = parser.parse_args()
    root = os.path.abspath(args.root)
    graph, files = import_graph(root)
    arrows(graph)
    sizes(files)
    if args.walk:
        walk(args.walk, graph)


if __name__ == "__main__":
    main()
