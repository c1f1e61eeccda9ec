"""Counts the test suite's tests and assertions from its source, without running or importing it.

    python scripts/count_tests.py [--json] [DIR]

For every .py file under DIR (default tests/), helpers and conftest.py included, it counts:

- functions: test functions, that is module-level `def test_*` and `test_*` methods of
  `Test*` classes (what pytest collects by default);
- cases: what those functions expand to under `@pytest.mark.parametrize`: the product of the
  lengths of the argument lists of its parametrize marks, where a list is a literal (list, tuple,
  set or dict) or a comprehension over a literal of known length; a list the script cannot size
  counts as one case and the function is reported under "unsized";
- assert: `assert` statements, anywhere in the file (helpers too, so moving a helper between files
  moves its assertions with it);
- raises: `pytest.raises(...)` and `pytest.warns(...)` calls;
- self_assert: `self.assert*(...)` calls (unittest style);
- np_assert: `np.testing.assert_*` / `numpy.testing.assert_*` calls;
- helper_assert: calls of other functions whose name starts with `assert` (the suite's own
  assertion helpers; each call is one checked claim at its call site).

Code inside string literals (the scripts some tests write out and run) is not parsed. The total
line sums every column; "checks" is assert + raises + self_assert + np_assert.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

COLUMNS = ("functions", "cases", "assert", "raises", "self_assert", "np_assert", "helper_assert")


def _dotted(node: ast.AST) -> str:
    """`a.b.c` for an attribute chain or name, '' for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _length(node: ast.AST) -> int | None:
    """The number of items a parametrize argument list holds, when the source says it."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            return None
        return len(node.elts)
    if isinstance(node, ast.Dict):
        return len(node.keys)
    if (isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp))
        and len(node.generators) == 1):
        gen = node.generators[0]
        if not gen.ifs:
            return _length(gen.iter)
    if (isinstance(node, ast.Call) and _dotted(node.func) in ("list", "tuple")
        and len(node.args) == 1):
        return _length(node.args[0])
    return None


def _cases(func: ast.FunctionDef, names: dict[str, ast.AST]) -> tuple[int, bool]:
    """(cases, sized): the product of the parametrize list lengths of one test function."""
    total, sized = 1, True
    for deco in func.decorator_list:
        if not (isinstance(deco, ast.Call) and _dotted(deco.func).endswith("mark.parametrize")):
            continue
        values = deco.args[1] if len(deco.args) > 1 else next(
            (k.value for k in deco.keywords if k.arg == "argvalues"), None)
        if isinstance(values, ast.Name) and values.id in names:
            values = names[values.id]
        n = _length(values) if values is not None else None
        if n is None:
            sized = False
        else:
            total *= n
    return total, sized


def count_file(path: Path) -> tuple[dict[str, int], list[str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    counts = dict.fromkeys(COLUMNS, 0)
    unsized = []
    # Module-level NAME = <literal> assignments, for parametrize lists kept in a constant.
    names = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}

    def test(func, owner=""):
        counts["functions"] += 1
        n, sized = _cases(func, names)
        counts["cases"] += n
        if not sized:
            unsized.append(f"{path.name}::{owner}{func.name}")

    for node in tree.body:
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name.startswith("test")):
            test(node)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for item in node.body:
                if (isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and item.name.startswith("test")):
                    test(item, node.name + "::")

    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            counts["assert"] += 1
        elif isinstance(node, ast.Call):
            name = _dotted(node.func)
            last = name.rsplit(".", 1)[-1]
            if name in ("pytest.raises", "pytest.warns"):
                counts["raises"] += 1
            elif name.startswith("self.assert"):
                counts["self_assert"] += 1
            elif name.startswith(("np.testing.assert", "numpy.testing.assert")):
                counts["np_assert"] += 1
            elif last.lstrip("_").startswith("assert"):
                counts["helper_assert"] += 1
    return counts, unsized


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", nargs="?",
                        default=str(Path(__file__).resolve().parent.parent / "tests"))
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args(argv)
    root = Path(args.dir)
    per_file, unsized = {}, []
    for path in sorted(root.rglob("*.py")):
        counts, missing = count_file(path)
        per_file[path.relative_to(root).as_posix()] = counts
        unsized += missing
    total = {c: sum(f[c] for f in per_file.values()) for c in COLUMNS}
    checks = total["assert"] + total["raises"] + total["self_assert"] + total["np_assert"]
    if args.json:
        json.dump({"files": per_file, "total": total, "checks": checks, "unsized": unsized},
                  sys.stdout, indent=1)
        print()
        return 0
    width = max(len(name) for name in [*per_file, "total"])
    print(f"{'file':<{width}}  " + "  ".join(f"{c:>13}" for c in COLUMNS))
    for name, counts in per_file.items():
        print(f"{name:<{width}}  " + "  ".join(f"{counts[c]:>13}" for c in COLUMNS))
    print(f"{'total':<{width}}  " + "  ".join(f"{total[c]:>13}" for c in COLUMNS))
    print(f"checks (assert + raises + self_assert + np_assert): {checks}")
    if unsized:
        print(f"unsized parametrize lists, counted as one case each: {', '.join(unsized)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
