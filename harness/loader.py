"""Finding cases: the built-in library, and selecting from it with globs.

A case module is any module of the library package that defines a list
`CASES` of Case objects. Importing a case module usually imports TensorFlow,
so nothing here runs before the command line has been checked.
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
import hashlib
import importlib
import importlib.util
import os
import pkgutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Iterable, Optional, Sequence

from harness.case import Case, CaseError
from harness.oracle_names import case_oracles
from harness.records import CaseInfo

__all__ = ["LoadError", "builtin_cases", "case_file_cases", "cases_of_module", "info", "narrow",
           "pick", "select", "shard"]

_LIBRARY = "harness.cases"


class LoadError(Exception):
    """Cases could not be loaded or selected; the message says what to do."""


def _library_package() -> ModuleType:
    # In a source checkout the library is the cases/ folder beside harness/, which setup.cfg
    # maps to harness.cases: that one, even where another checkout is installed (editable) and
    # harness.cases would import its cases, which need not match this harness.
    folder = Path(__file__).resolve().parent.parent / "cases"
    loaded = sys.modules.get(_LIBRARY)
    if loaded is not None or not (folder / "__init__.py").exists():
        try:
            return loaded or importlib.import_module(_LIBRARY)
        except ModuleNotFoundError:
            pass
    spec = importlib.util.spec_from_file_location(
        _LIBRARY, folder / "__init__.py", submodule_search_locations=[str(folder)])
    if spec is None or not (folder / "__init__.py").exists():
        raise LoadError("the built-in case library is missing; reinstall the package (pip install "
                        ".)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_LIBRARY] = module
    spec.loader.exec_module(module)
    return module


def cases_of_module(module: ModuleType, origin: str) -> list[Case]:
    cases = getattr(module, "CASES", None)
    if (not isinstance(cases, (list, tuple)) or not cases
        or not all(isinstance(c, Case) for c in cases)):
        raise LoadError(f"{origin}: define CASES, a non-empty list of harness.Case objects")
    return list(cases)


def builtin_cases(themes: Optional[Sequence[str]] = None) -> list[Case]:
    """Every case of the built-in library, in module then definition order.

    Args:
      themes: load only these modules (a case id starts with its module's
        name), to spare the imports of the others; all of them when None or
        when one of them does not exist, so a typo still gets suggestions.

    Raises:
      LoadError: a case module fails to import, a case is invalid, or two
        cases share an id.
    """
    package = _library_package()
    cases: list[Case] = []
    modules = sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name)
    if themes and set(themes) <= {m.name for m in modules}:
        modules = [m for m in modules if m.name in themes]
    for info in modules:
        name = f"{_LIBRARY}.{info.name}"
        try:
            module = importlib.import_module(name)
        except CaseError as e:
            raise LoadError(f"{name}: {e}") from e
        except Exception as e:  # noqa: BLE001 - e.g. a module the installed TensorFlow lacks
            raise LoadError(f"the library module {name} cannot be imported under this TensorFlow: "
                            f"{type(e).__name__}: {e}") from e
        cases += cases_of_module(module, name)
    _check_unique(cases)
    return cases


def _module_name(path: Path) -> str:
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:10]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    return f"harness_case_file_{stem}_{digest}"


def load_module(path: str) -> ModuleType:
    """Imports a user's Python file by path.

    Raises:
      LoadError: the file is missing, unreadable, has a syntax error (with the
        line), or raises while it is imported.
    """
    file = Path(path).resolve()
    if not file.is_file():
        raise LoadError(f"{path}: no such file; give the path of a Python file")
    try:
        source = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise LoadError(f"{path}: cannot read it ({e.__class__.__name__}: {e}); check its "
                        "permissions") from None
    try:
        code = compile(source, str(file), "exec")
    except SyntaxError as e:
        raise LoadError(f"{path}:{e.lineno}: syntax error: {e.msg}; fix the file") from None
    name = _module_name(file)
    if str(file.parent) not in sys.path:
        # so the file can import its neighbours, as under python FILE
        sys.path.insert(0, str(file.parent))
    module = ModuleType(name)
    module.__file__ = str(file)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        exec(code, module.__dict__)  # noqa: S102 - the user asked us to run this file
    except CaseError as e:
        raise LoadError(f"{path}: {e}") from None
    except Exception as e:  # noqa: BLE001 - any import-time failure of the user's file
        line = _user_line(e, str(file))
        raise LoadError(f"{path}{line}: importing it raised {type(e).__name__}: {e}") from None
    return module


def _user_line(exc: BaseException, filename: str) -> str:
    tb = exc.__traceback__
    line = ""
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = f":{tb.tb_lineno}"
        tb = tb.tb_next
    return line


def case_file_cases(paths: Sequence[str]) -> list[Case]:
    """The CASES of each file in `paths`, in order.

    Raises:
      LoadError: a file cannot be loaded, lacks CASES, or reuses an id.
    """
    cases: list[Case] = []
    for path in paths:
        cases += cases_of_module(load_module(path), path)
    _check_unique(cases)
    return cases


def _check_unique(cases: Sequence[Case | CaseInfo]) -> None:
    seen = set()
    for case in cases:
        if case.id in seen:
            raise LoadError(f"two cases have the id {case.id!r}: rename one")
        seen.add(case.id)


def info(case: Case) -> CaseInfo:
    """What the main process needs to know of a case without importing it."""
    return CaseInfo(
        id=case.id,
        description=case.description,
        source=case.source,
        order=case.order,
        points=tuple(p.label for p in case.points),
        expectations=tuple(case.expectations),
        tolerance=case.tolerance,
        tf_versions=case.tf_versions,
        oracles=case_oracles(case),
        arguments=tuple(
            (n, v.dtype.name, v.shape) for n, v in zip(case.points[0].names, case.points[0].values)
        ),
        domains=tuple(case.domains.items()),
        target=_target(case),
        fixed=tuple(_plain(v) for v in case.points[0].values) if case.domains else (),
        notes=tuple(case.notes.items()),
        drawn=tuple(case.drawn),
    )


def _plain(value) -> object:
    """A NumPy value as nested Python numbers: any process unpickles it, whatever its dtype."""
    if value.dtype.kind == "c":
        return value.astype("complex128").tolist()
    if value.dtype.kind == "f" or value.dtype.name == "bfloat16":
        return value.astype("float64").tolist()
    return value.tolist()


def _target(case: Case) -> str:
    """ "PATH.py:NAME" naming the case's function where its module holds it under that name."""
    fn = case.fn
    name = getattr(fn, "__name__", "")
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    path = getattr(module, "__file__", None)
    if fn is None or not name.isidentifier() or getattr(module, name, None) is not fn or not path:
        return ""
    path = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else path
    return f"{path}:{name}"


def _select_one(catalogue: Sequence[CaseInfo], pattern: str) -> list[CaseInfo]:
    """The cases (or a case narrowed to one point) that `pattern` names."""
    if pattern.endswith("]") and "[" in pattern:
        case_id, label = pattern[:-1].split("[", 1)
        for item in catalogue:
            if item.id == case_id and label in item.points:
                return [dataclasses.replace(item, points=(label,))]
    return [c for c in catalogue if fnmatch.fnmatchcase(c.id, pattern)]


def select(catalogue: Sequence[CaseInfo], patterns: Iterable[str] | None) -> list[CaseInfo]:
    """Cases matching any of `patterns` (globs on ids, or "ID[POINT]"), in catalogue order.

    Raises:
      LoadError: two cases share an id, or a pattern selects nothing (the
        message suggests near ids and themes, or lists the points of the
        case an unknown "ID[POINT]" names).
    """
    _check_unique(catalogue)
    if not patterns:
        return list(catalogue)
    candidates = [c.id for c in catalogue] + sorted({c.id.split(".")[0] + ".*" for c in catalogue})
    chosen: dict[str, set[str]] = {}
    for pattern in patterns:
        found = _select_one(catalogue, pattern)
        case_id, bracket, label = (pattern[:-1].partition("[") if pattern.endswith("]")
                                   else ("", "", ""))
        named = next((c for c in catalogue if bracket and c.id == case_id), None)
        if not found and named is not None:
            raise LoadError(f"--cases pattern {pattern!r}: case {case_id} has no point {label!r}; "
                            f"its points: {', '.join(named.points)}")
        if not found:
            near = difflib.get_close_matches(pattern.split("[")[0], candidates, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(near)}?" if near else "; see the ids with --list"
            raise LoadError(f"--cases pattern {pattern!r} selects no case{hint}")
        for item in found:
            chosen.setdefault(item.id, set()).update(item.points)
    return [dataclasses.replace(c, points=tuple(p for p in c.points if p in chosen[c.id]))
            for c in catalogue if c.id in chosen]


def shard(selected: Sequence[CaseInfo], index: int, count: int) -> list[CaseInfo]:
    """The cases of shard `index` of `count`: every count-th case of the selection.

    Dealing cases out in selection order keeps shards within one case of each
    other in size, and the union of all shards is the selection.
    """
    return [c for position, c in enumerate(selected) if position % count == index]


def narrow(case: Case, labels: Sequence[str]) -> Case:
    """`case` with only the points labelled `labels` (all of them: the case itself); at one point
    with a builder of its own (Case.builders), made by that builder."""
    if len(labels) == len(case.points) and not (len(labels) == 1 and labels[0] in case.builders):
        return case
    kept = dict(points=[p for p in case.points if p.label in labels],
                expectations=_narrowed_expectations(case.expectations, set(labels)))
    if len(labels) == 1 and labels[0] in case.builders:
        kept.update(build=case.builders[labels[0]], builders={})
    return dataclasses.replace(case, **kept)


def _narrowed_expectations(expectations, labels: set) -> tuple:
    """The expectations that still apply once a case keeps only `labels`: one listing points
    keeps those it still has, and one listing none of them goes (its points are not run here,
    so it is no error that they are absent)."""
    kept = []
    for e in expectations:
        if not e.points:
            kept.append(e)
        elif any(p in labels for p in e.points):
            kept.append(dataclasses.replace(e, points=tuple(p for p in e.points if p in labels)))
    return tuple(kept)


def pick(cases: Sequence[Case], patterns: Iterable[str] | None) -> list[Case]:
    """The Case objects `patterns` select, narrowed to the selected points."""
    by_id = {c.id: c for c in cases}
    return [narrow(by_id[i.id], i.points) for i in select([info(c) for c in cases], patterns)]


def at_point(case: Case, values: Sequence[tuple[str, object]]) -> Case:
    """`case` at one point of its domains (explore): `values` gives (name, NumPy value) for every
    argument. Kinks and expectations named for the case's own points do not apply there."""
    return dataclasses.replace(case, points=[dict(values)],
                               kinks={"*": case.kinks["*"]} if "*" in case.kinks else {},
                               expectations=[e for e in case.expectations if not e.points])


def info_at(item: CaseInfo, label: str) -> CaseInfo:
    """What the main process judges `at_point` by: the same case, at the point labelled `label`."""
    return dataclasses.replace(item, points=(label,),
                               expectations=tuple(e for e in item.expectations if not e.points))
