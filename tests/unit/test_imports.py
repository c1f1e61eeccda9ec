"""The import graph of harness/, read from the source (no module is imported, so no TensorFlow):
measuring never reaches judging nor judging measuring, the criteria both read sit below both, no
arrow climbs back up into or out of the worker processes, and no module imports itself through
others (a circle).

Every import counts, the ones inside functions too: a lazy import is still a dependency, only a
later one. `from P import name` depends on the module P.name when there is one, else on P.
"""

from __future__ import annotations

import ast
import functools
import os
from typing import Optional

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "harness")
# harness/cases is a link to the case library (cases/), not the harness's own code.
SKIPPED = {os.path.join(PACKAGE, "cases")}


def module_files() -> dict[str, str]:
    """Every module of harness/ by its dotted name, and its file."""
    found = {}
    for folder, folders, files in os.walk(PACKAGE):
        folders[:] = sorted(f for f in folders if f != "__pycache__"
                            and os.path.join(folder, f) not in SKIPPED)
        for name in files:
            if name.endswith(".py"):
                parts = os.path.relpath(os.path.join(folder, name), ROOT)[:-3].split(os.sep)
                found[".".join(parts[:-1] if parts[-1] == "__init__"
                               else parts)] = os.path.join(folder, name)
    return found


def _known(name: str, modules) -> Optional[str]:
    """`name`, or the nearest package above it, that is a module of harness/."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str, path: str, modules) -> set[str]:
    """The modules of harness/ that `module` imports, anywhere in its source."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(_known(alias.name, modules) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                above = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(above + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else _known(base, modules))
    found.discard(None)
    found.discard(module)
    return found


@functools.lru_cache(maxsize=None)
def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def path_to(graph: dict[str, set[str]], start: str, goal: str) -> Optional[list[str]]:
    """The import chain from `start` to `goal`, if there is one."""
    came_from: dict[str, Optional[str]] = {start: None}
    queue = [start]
    while queue:
        here = queue.pop(0)
        if here == goal:
            chain = [here]
            while came_from[chain[-1]] is not None:
                chain.append(came_from[chain[-1]])
            return chain[::-1]
        for there in sorted(graph.get(here, ())):
            if there not in came_from:
                came_from[there] = here
                queue.append(there)
    return None


# The entry side: the command line and the modules a user calls, which start the worker processes.
ENTRY = ("harness.__main__", "harness.api", "harness.run_here", "harness.cli")
# The tools the command line drives, above the worker processes. record/ is not among them: a
# worker loads recorded functions as cases through it, as it loads case files through the loader.
TOOLS = ("harness.repro", "harness.explore", "harness.report", "harness.matrix")


def under(*packages: str):
    """Whether a module is one of `packages` or inside one."""
    return lambda module: any(module == p or module.startswith(p + ".") for p in packages)


def arrows(graph: dict[str, set[str]], source, target) -> list[str]:
    """Each import from a module `source` holds for to one `target` holds for, as "a -> b"."""
    return sorted(f"{a} -> {b}" for a in graph if source(a) for b in graph[a] if target(b))


# The measuring side: what a worker imports to run a case (all of harness/measure/), and the
# transport that carries its measurement back. None of it may reach the code that judges or words
# a verdict: anything under harness/judge/.
MEASURING = ("harness.measure", "harness.process.worker", "harness.process.pool")
JUDGING = ("harness.judge",)
# What both sides decide with (tolerances, comparing values, the numeric differences, the case's
# rules): a layer below both, resting on the plain records and the case alone.
CRITERIA = ("harness.criteria",)
BELOW_CRITERIA = ("harness.records", "harness.case", "harness.domain", "harness.mode_names",
                  "harness.oracle_names", "harness.versions")


def chains(graph: dict[str, set[str]], source, target) -> list[str]:
    """The import chain from each module `source` holds for to each one `target` holds for that
    it reaches, as "a -> b -> c"."""
    return [" -> ".join(chain) for start in sorted(graph) if source(start)
            for goal in sorted(graph) if target(goal) and goal != start
            for chain in [path_to(graph, start, goal)] if chain]


def test_measuring_never_imports_judging():
    """An oracle's match or differ along a direction is decided in the worker, by the criteria
    (harness.criteria) the judge reads too; the verdict is decided in the main process alone."""
    reached = chains(import_graph(), under(*MEASURING), under(*JUDGING))
    assert not reached, "measuring reaches judging:\n" + "\n".join(reached)


def test_judging_never_imports_measuring():
    """The verdict is decided from the plain records a worker carries back, so the main process
    judges without the code (and the TensorFlow) that measures."""
    reached = chains(import_graph(), under(*JUDGING), under(*MEASURING, "harness.process"))
    assert not reached, "judging reaches measuring:\n" + "\n".join(reached)


def test_the_criteria_sit_below_both_sides():
    """harness/criteria/ imports, however indirectly, nothing but itself and the plain records and
    the case: not the measuring side, not the judge, not the worker processes, the command line
    or a tool, all of which stand on it."""
    allowed = under(*CRITERIA, *BELOW_CRITERIA)
    reached = chains(import_graph(), under(*CRITERIA), lambda module: not allowed(module))
    assert not reached, "the criteria reach a layer above them:\n" + "\n".join(reached)


def test_both_sides_stand_on_the_criteria():
    graph = import_graph()
    for side in (MEASURING, JUDGING):
        assert chains(graph, under(*side), under(*CRITERIA)), side


def test_a_chain_is_named_for_each_pair_it_joins():
    graph = {"m.run": {"m.oracle"}, "m.oracle": {"c.tol"}, "j.verdict": {"c.tol"}, "c.tol": set()}
    assert chains(graph, under("m"), under("c")) == ["m.oracle -> c.tol",
                                                     "m.run -> m.oracle -> c.tol"]
    assert chains(graph, under("m"), under("j")) == []
    assert chains(graph, under("c"), lambda module: not under("c")(module)) == []


def test_only_the_entry_side_reaches_into_the_worker_processes():
    """harness/process/ starts workers and runs jobs in them; the records a job is carried in
    (harness.jobs) and the process lifetimes (harness.lifetime) sit below it, so nothing under it
    imports it: not the judge for a record, nor the SavedModel restorer or repro's candidate runner
    for the lifetime helpers."""
    above = under(*ENTRY, "harness.process")
    found = arrows(import_graph(), lambda module: not above(module), under("harness.process"))
    assert not found, "an arrow climbs back up into harness/process/:\n" + "\n".join(found)


def test_the_worker_processes_import_no_tool_above_them():
    """What a worker needs of a tool is handed to it by the command line (the repro builder rides
    in its job), so harness/process/ imports no tool and no part of the command line."""
    found = arrows(import_graph(), under("harness.process"), under(*TOOLS, "harness.cli"))
    assert not found, "an arrow climbs back up out of harness/process/:\n" + "\n".join(found)


def test_an_arrow_is_named_from_the_importer_to_what_it_imports():
    graph = {"p.worker": {"p.pool", "t.script"}, "t.script": {"low"}, "j.judging": {"p.pool"},
             "j.judge": set(), "low": set()}
    assert arrows(graph, under("p"), under("t")) == ["p.worker -> t.script"]
    assert arrows(graph, under("j.judging", "t"), under("p")) == ["j.judging -> p.pool"]
    assert arrows(graph, under("j.judge"), under("p")) == []  # not a prefix of j.judging's name


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle in each group of modules that import each other (a strongly connected component of
    more than one module), as the chain from its first module back to it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups = []

    def visit(here: str) -> None:  # Tarjan's algorithm
        index[here] = low[here] = len(index)
        stack.append(here)
        for there in sorted(graph[here]):
            if there not in index:
                visit(there)
                low[here] = min(low[here], low[there])
            elif there in stack:
                low[here] = min(low[here], index[there])
        if low[here] == index[here]:
            group = []
            while not group or group[-1] != here:
                group.append(stack.pop())
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    found = []
    for group in groups:
        inside = {m: graph[m] & set(group) for m in group}
        first = group[0]
        back = min((path_to(inside, there, first) for there in sorted(inside[first])), key=len)
        found.append([first] + back)
    return found


def test_no_module_imports_itself_through_others():
    found = circles(import_graph())
    assert not found, "import circles:\n" + "\n".join(" -> ".join(circle) for circle in found)


def test_a_circle_is_named_from_its_first_module_back_to_it():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}}
    assert circles(graph) == [["a", "b", "c", "a"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_lazy_imports_and_every_form_of_import():
    graph = import_graph()
    # imported inside prepare() and run_job()
    assert "harness.measure.execute" in graph["harness.process.worker"]
    assert (
        "harness.measure.modes._devices" in graph["harness.process.worker"]
    )  # from harness.measure.modes import _devices
    assert "harness.records" in graph["harness.judge.verdict"]  # from harness.records import (...)
    assert path_to(graph, "harness.run_here", "harness.judge.verdict") == ["harness.run_here",
                                                                           "harness.judge.verdict"]
    assert not any(name.startswith("harness.cases") for name in graph)
