"""The recorded folder: what a recording session keeps, and reading it back (no TensorFlow).

    DIR/recorded-<pid>.json     one per recording process (schema harness.recorded/1)
    DIR/values/<pid>-<n>.npy    one per recorded array

A process file holds the TensorFlow and Python versions it ran under, the limits, what was
dropped, and the functions: identity (module, qualname, file, line, the sys.path root its
module imports from), calls seen, and up to K points. A point holds its arguments and keyword
arguments, each one of

    {"array": "values/...npy", "dtype": "float32", "shape": [2, 3]}   a recorded value
    {"spec": {"dtype": "float32", "shape": [null, 3]}}                 a value seen only while tracing
    {"python": 1.0}                                                     a Python scalar (or None, a string)
    {"unsupported": "a Dense object"}                                   nothing that can be replayed

with the context of the call ("eager", "tf.function", "v1 graph"), the test that first made
it, the variables it read (name, dtype, shape, value when it could be read), and, for a
function that cannot be imported by name, `function`: its serialised code and closure
(harness.record.serial). Every process file of a folder is read together; a function seen by
several processes is one function, its points taken in file order up to the limit.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any, Optional

import numpy as np

__all__ = ["SCHEMA", "Limits", "RecordError", "load_array", "read", "write", "clear"]

SCHEMA = "harness.recorded/1"
_PREFIX = "recorded-"


class RecordError(ValueError):
    """A recorded folder cannot be read; the message says what to do."""


@dataclasses.dataclass(frozen=True)
class Limits:
    """How much a session keeps: points per function, bytes of values per function, and in all."""

    points: int = 3
    function_bytes: int = 4 << 20
    total_points: int = 2000
    total_bytes: int = 256 << 20


def clear(folder: str) -> None:
    """Removes an earlier session's files from `folder` (only the files a session writes)."""
    root = Path(folder)
    for path in list(root.glob(f"{_PREFIX}*.json")) + list((root / "values").glob("*.npy")):
        path.unlink(missing_ok=True)


def _save(path: Path, value: np.ndarray) -> None:
    if value.dtype.name == "bfloat16":  # NumPy's .npy cannot name ml_dtypes' type: keep its bits
        value = value.view(np.uint16)
    with open(path, "wb") as f:
        np.save(f, value, allow_pickle=False)


def write(folder: str, data: dict, arrays: dict[str, np.ndarray]) -> Path:
    """Writes one process's recording: `arrays` (file name under values/ -> value), then the
    JSON, atomically. Returns the JSON's path."""
    root = Path(folder)
    (root / "values").mkdir(parents=True, exist_ok=True)
    for name, value in arrays.items():
        _save(root / "values" / name, value)
    path = root / f"{_PREFIX}{os.getpid()}.json"
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(dict(data, schema=SCHEMA), indent=1, allow_nan=False), encoding="utf-8")
    os.replace(temporary, path)
    return path


def load_array(folder: str, arg: dict) -> np.ndarray:
    """The value an {"array": ...} argument recorded."""
    value = np.load(Path(folder) / arg["array"], allow_pickle=False)
    if arg["dtype"] == "bfloat16":
        import ml_dtypes  # noqa: PLC0415 - comes with TensorFlow

        value = value.view(ml_dtypes.bfloat16)
    return value


_HOW = "record one with python -m pytest --harness-record=DIR, or python -m harness record DIR -- CMD"


def _problem(folder: str, data: Any) -> Optional[str]:
    """What is wrong with one process file's contents, or None."""
    if not isinstance(data, dict):
        return "not a JSON object"
    if data.get("schema") != SCHEMA:
        return f"schema {data.get('schema')!r}, not {SCHEMA}"
    functions = data.get("functions")
    if not isinstance(functions, list):
        return "no list of functions"
    for f in functions:
        if not isinstance(f, dict) or not all(isinstance(f.get(k), str) for k in ("module", "qualname")):
            return "a function without its module and qualname"
        if not isinstance(f.get("points"), list):
            return f"{f['module']}.{f['qualname']} has no list of points"
        for p in f["points"]:
            if not isinstance(p, dict) or not isinstance(p.get("args"), list):
                return f"a point of {f['module']}.{f['qualname']} has no arguments"
            for arg in list(p["args"]) + list((p.get("kwargs") or {}).values()):
                if isinstance(arg, dict) and "array" in arg and not (Path(folder) / str(arg["array"])).is_file():
                    return f"{arg['array']} is missing"
    return None


def read(folder: str) -> dict:
    """Every process file of `folder` as one recording: {"sessions": [...], "functions": [...]}
    where each function carries the `session` (index) it came from.

    Raises:
      RecordError: the folder is missing, holds no recording, or a file is not one.
    """
    root = Path(folder)
    if not root.is_dir():
        raise RecordError(f"{folder}: no such directory; {_HOW}")
    files = sorted(root.glob(f"{_PREFIX}*.json"))
    if not files:
        raise RecordError(f"{folder} holds no recording ({_PREFIX}*.json); {_HOW}")
    sessions, functions = [], []
    for path in files:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise RecordError(f"{path}: cannot read it as JSON ({e}); record again") from None
        problem = _problem(folder, data)
        if problem:
            raise RecordError(f"{path}: not a recording: {problem}; record again")
        index = len(sessions)
        sessions.append({k: v for k, v in data.items() if k != "functions"})
        functions += [dict(f, session=index) for f in data["functions"]]
    return {"sessions": sessions, "functions": functions}
