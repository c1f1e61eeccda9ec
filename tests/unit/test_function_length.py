"""No function of harness/ runs over 60 lines, read from the source with ast (nothing is imported).

A function is counted from its `def` line to its last line, docstring and comments included,
decorators not; nested functions and methods are counted on their own, and within the function
around them too.
"""

from __future__ import annotations

import ast
import functools
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "harness")
LIMIT = 60

# Functions allowed over the limit, by "path:name", each with a comment saying why: only a
# template that reads as one text belongs here, and a template is better kept as a module-level
# text its function fills in. Empty.
ALLOWED: dict[str, int] = {}


@functools.lru_cache(maxsize=None)
def functions_over(limit: int) -> dict[str, int]:
    """Each function of harness/ (not the case library harness/cases links to) longer than `limit`
    lines, by "path:name", with its length."""
    found = {}
    for folder, folders, files in os.walk(PACKAGE):
        folders[:] = sorted(f for f in folders if f != "__pycache__" and os.path.join(folder, f) !=
                            os.path.join(PACKAGE, "cases"))
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = node.end_lineno - node.lineno + 1
                    if length > limit:
                        found[f"{os.path.relpath(path, ROOT)}:{node.name}"] = length
    return found


def test_no_function_is_over_60_lines():
    over = {name: length for name, length in functions_over(LIMIT).items() if name not in ALLOWED}
    assert not over, f"functions over {LIMIT} lines; split them into helpers:\n" + "\n".join(
        f"{name}: {length} lines" for name, length in sorted(over.items()))


def test_the_allowed_ones_are_still_over_the_limit():
    # An entry that no longer needs its exception goes, so the list stays what it says.
    over = functions_over(LIMIT)
    assert [name for name in ALLOWED if name not in over] == []


def test_the_count_runs_from_def_to_the_last_line():
    tree = ast.parse("@decorator\ndef f(x):\n    '''Doc.'''\n\n    return x\n")
    node = tree.body[0]
    assert node.end_lineno - node.lineno + 1 == 4
