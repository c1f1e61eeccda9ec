"""The source a standalone script needs: the function under test and what it uses.

The function (or builder) is found in its module's source with `ast`; the
top-level definitions and imports it refers to, directly or through each
other, are copied in their original order. Imports of this package are never
copied: a reproduction needs only TensorFlow and NumPy (and whatever the case
itself imports, such as tf_keras). A function that comes from an installed
library (TensorFlow's own, Keras's) is imported from it, not copied: the
script calls the library, and says which release.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.metadata
import inspect
import os
import sysconfig
from typing import Any, Callable

__all__ = ["Extract", "ReproError", "extract"]


class ReproError(ValueError):
    """The function's source cannot be recovered; the message says what to change."""


@dataclasses.dataclass(frozen=True)
class Extract:
    """Source text to paste: imports, definitions, and the expression naming the function."""

    imports: str
    definitions: str
    expression: str
    origin: str = ""  # for a library's function: its module and name
    library: str = ""  # for a library's function: the distribution and its version


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _used_names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _segment(lines: list[str], node: ast.stmt) -> str:
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "\n".join(lines[first - 1:node.end_lineno])


def _is_ours(node: ast.stmt) -> bool:
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")[0] == "harness"
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "harness" for a in node.names)
    return False


def _lambda_node(tree: ast.Module, fn: Callable) -> ast.Lambda:
    line = fn.__code__.co_firstlineno
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == line]
    if len(found) != 1:
        raise ReproError(f"cannot tell which lambda on line {line} is the function under test; "
                         "define it with def at the top level of its module")
    return found[0]


def _installed(module) -> str:
    """"DISTRIBUTION VERSION" when `module` belongs to an installed distribution (in this
    environment's site-packages), else ""."""
    path = os.path.realpath(getattr(module, "__file__", None) or "")
    roots = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")}
    if not path or not any(os.path.commonpath([root, path]) == root for root in roots):
        return ""
    top = module.__name__.split(".")[0]
    for name in importlib.metadata.packages_distributions().get(top, []):
        try:
            return f"{name} {importlib.metadata.version(name)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return ""


def extract(obj: Any) -> Extract:
    """The source needed to define `obj`, a function or builder from a case module; for one
    from an installed library, the import that names it.

    Raises:
      ReproError: `obj` is not a top-level def or a lone lambda of a module
        whose source can be read.
    """
    module = inspect.getmodule(obj)
    name = getattr(obj, "__name__", "")
    library = _installed(module) if module is not None else ""
    if library and name.isidentifier() and getattr(module, name, None) is obj:
        return Extract(imports=f"from {module.__name__} import {name}", definitions="",
                       expression=name, origin=f"{module.__name__}.{name}", library=library)
    try:
        source = inspect.getsource(module)
    except (TypeError, OSError):
        raise ReproError(f"the source of {getattr(obj, '__name__', obj)!r} cannot be read; "
                         "define the function in a .py file") from None
    tree = ast.parse(source)
    lines = source.splitlines()
    top = {}
    for node in tree.body:
        if not _is_ours(node):
            for bound in _bound_names(node):
                top[bound] = node
    if name in top and getattr(module, name, None) is obj:
        root, expression = top[name], name
    elif name == "<lambda>":
        root = _lambda_node(tree, obj)
        expression = ast.get_source_segment(source, root)
    else:
        raise ReproError(f"{name or obj!r} is not defined at the top level of {module.__name__}; "
                         "define the function under test (or its builder) with def there")
    needed, todo = {id(root)} if root in tree.body else set(), [root]
    while todo:
        for used in _used_names(todo.pop()):
            node = top.get(used)
            if node is not None and id(node) not in needed:
                needed.add(id(node))
                todo.append(node)
    chosen = [n for n in tree.body if id(n) in needed]
    imports = [_segment(lines, n) for n in chosen if isinstance(n, (ast.Import, ast.ImportFrom))]
    definitions = [_segment(lines, n) for n in chosen
                   if not isinstance(n, (ast.Import, ast.ImportFrom))]
    return Extract(imports="\n".join(imports), definitions="\n\n\n".join(definitions),
                   expression=expression)
