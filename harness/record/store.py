"""The recorded folder: what a recording session keeps, and reading it back (no TensorFlow).

    DIR/session-<time>-<pid>/recorded-<pid>.json     one per recording process (harness.recorded/2)
    DIR/session-<time>-<pid>/values/<pid>-<n>.npy    one per recorded array

Each session (one pytest run, with its xdist workers; one `harness record` command, with every
Python process it starts) writes into a folder of its own, made new for it: a session deletes
nothing, and an earlier session's folder stays until the user removes it. A process writes as it
goes (after each test, or each new point outside a test), so a process killed by a signal,
`os._exit` or a crash keeps what it recorded before; its file says `"ended": "running"` until
the process ends normally and writes `"finished"`.

A process file holds the TensorFlow and Python versions it ran under, the limits, what was
dropped, and the functions: identity (module, qualname, file, line, the values its closure
captured, the sys.path root its module imports from), calls seen, and up to K points. A point
holds its arguments and keyword arguments, each one of

    {"array": "values/...npy", "dtype": "float32", "shape": [2, 3]}   a recorded value
    {"spec": {"dtype": "float32", "shape": [null, 3]}}                 a value seen only while
    tracing {"python": 1.0}                                                     a Python scalar (or
    None, a string) {"float": "inf"}, {"int": "123456789012345678901"}                a Python
    number JSON cannot hold {"unsupported": "a Dense object"}
    nothing that can be replayed

with the context of the call ("eager", "tf.function", "v1 graph"), the test that first made
it, the variables it read (name, dtype, shape, value when it could be read), and, for a
function that cannot be imported by name, `function`: its serialised code and closure
(harness.record.serial). Every process file of a session is read together; a function seen by
several processes is one function, its points taken in file order up to the limit.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

__all__ = ["SCHEMA", "Limits", "RecordError", "Writer", "ending", "load_array", "new_session",
           "python_value", "read", "python_entry", "session_folder"]

SCHEMA = "harness.recorded/2"
_SCHEMAS = ("harness.recorded/1", SCHEMA)
_PREFIX = "recorded-"
_SESSION = "session-"
ENV_SESSION = "HARNESS_RECORD_SESSION"  # the session folder a process of a session writes into
# Set (to "1") by replay's --trust_recording, so that its workers read the recording too.
ENV_TRUST = "HARNESS_TRUST_RECORDING"
_TRUST_FLAG = "--trust_recording"


class RecordError(ValueError):
    """A recorded folder cannot be read; the message says what to do."""


@dataclasses.dataclass(frozen=True)
class Limits:
    """How much a session keeps: points per function, bytes of values per function, and in all."""

    points: int = 3
    function_bytes: int = 4 << 20
    total_points: int = 2000
    total_bytes: int = 256 << 20


def new_session(folder: str) -> str:
    """A new, empty session folder inside `folder` (made if missing); returns its path.

    Raises:
      OSError: `folder` cannot be made or written.
    """
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    for n in range(1000):
        path = (root / f"{_SESSION}{stamp}-{os.getpid()}" if not n
                else root / f"{_SESSION}{stamp}-{os.getpid()}-{n}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        os.chmod(path, 0o755)  # writable by its owner alone, whatever the umask: replay trusts it
        return str(path.resolve())
    raise OSError(f"no free session folder name in {folder}")


def python_entry(value: Any) -> dict:
    """A Python scalar as a JSON entry, exactly: JSON has no inf or nan, and readers round
    integers beyond 2**53."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2 ** 53:
        return {"int": str(value)}
    return {"python": value}


def python_value(entry: dict) -> Any:
    """The Python scalar `python_entry` wrote."""
    if "float" in entry:
        return float(entry["float"])
    if "int" in entry:
        return int(entry["int"])
    return entry.get("python")


def _save(path: Path, value: np.ndarray) -> None:
    if value.dtype.name == "bfloat16":  # NumPy's .npy cannot name ml_dtypes' type: keep its bits
        value = value.view(np.uint16)
    temporary = path.with_suffix(".tmp")
    try:
        with open(temporary, "wb") as f:
            np.save(f, value, allow_pickle=False)
        os.replace(temporary, path)
    finally:
        _remove(temporary)


def _remove(path: Path) -> None:
    """A temporary file a failed write left (a full disk): gone, so the folder holds only whole
    files."""
    try:
        path.unlink()
    except OSError:
        pass


class Writer:
    """One process's file in a session folder, written again whenever asked: the values not yet
    on disk, then the JSON, atomically, so the file on disk is always a whole recording."""

    def __init__(self, folder: str):
        self.folder = Path(folder)
        self.path = self.folder / f"{_PREFIX}{os.getpid()}.json"
        self.saved: set = set()

    def write(self, data: dict, arrays: dict[str, np.ndarray]) -> Path:
        temporary = self.path.with_suffix(".tmp")
        try:
            (self.folder / "values").mkdir(parents=True, exist_ok=True)
            for name, value in arrays.items():
                if name not in self.saved:
                    try:
                        _save(self.folder / "values" / name, value)
                    except (ValueError, TypeError):
                        # A value .npy cannot hold: its point alone lacks it (replay says so),
                        # and every later write goes on.
                        pass
                    self.saved.add(name)
            text = json.dumps(dict(data, schema=SCHEMA), indent=1, allow_nan=False)
            temporary.write_text(text, encoding="utf-8")
            os.chmod(temporary, 0o644)  # its owner's alone to change, whatever the umask
            os.replace(temporary, self.path)
        except OSError as e:
            _remove(temporary)
            self._say_failed(e)
            raise
        _remove(self.path.with_suffix(".failed"))
        return self.path

    def _say_failed(self, error: OSError) -> None:
        """Leaves a one-line note of a failed write beside the process file, where the disk still
        takes a few bytes, so replay can say the recording stopped being written and why."""
        try:
            self.path.with_suffix(".failed").write_text(f"{type(error).__name__}: {error}\n",
                                                        encoding="utf-8")
        except OSError:
            pass


def load_array(folder: str, arg: dict) -> np.ndarray:
    """The value an {"array": ...} argument recorded."""
    value = np.load(Path(folder) / arg["array"], allow_pickle=False)
    if arg["dtype"] == "bfloat16":
        import ml_dtypes  # noqa: PLC0415 - comes with TensorFlow

        value = value.view(ml_dtypes.bfloat16)
    return value


_HOW = (
    "record one with python -m pytest --harness-record=DIR, or python -m harness record DIR -- CMD"
)


def _problem(folder: str, data: Any) -> Optional[str]:
    """What is wrong with one process file's contents, or None."""
    if not isinstance(data, dict):
        return "not a JSON object"
    if data.get("schema") not in _SCHEMAS:
        return f"schema {data.get('schema')!r}, not {SCHEMA}"
    functions = data.get("functions")
    if not isinstance(functions, list):
        return "no list of functions"
    for f in functions:
        if (not isinstance(f, dict)
            or not all(isinstance(f.get(k), str) for k in ("module", "qualname"))):
            return "a function without its module and qualname"
        if not isinstance(f.get("points"), list):
            return f"{f['module']}.{f['qualname']} has no list of points"
        for p in f["points"]:
            if not isinstance(p, dict) or not isinstance(p.get("args"), list):
                return f"a point of {f['module']}.{f['qualname']} has no arguments"
    return None


def _sessions(root: Path) -> list[Path]:
    """The session folders of `root`, oldest first by when their recorder started (its own
    record of it, not the folder's name, which anyone writing `root` can choose)."""
    found = [p for p in root.glob(f"{_SESSION}*") if p.is_dir() and any(p.glob(f"{_PREFIX}*.json"))]
    return sorted(found, key=lambda p: (_started(p), p.name))


def _started(session: Path) -> float:
    """When the session's first process started recording (the folder's time for a file that
    does not say)."""
    times = []
    for path in session.glob(f"{_PREFIX}*.json"):
        try:
            started = json.loads(path.read_text(encoding="utf-8")).get("started")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(started, (int, float)) and not isinstance(started, bool):
            times.append(float(started))
    if times:
        return min(times)
    try:
        return session.stat().st_mtime
    except OSError:
        return 0.0


def untrusted(folder: str) -> Optional[str]:
    """Why a session folder cannot be trusted ("" or None if it can): a recording holds code
    (copies of functions, modules replay imports), so the folder and its process files must be
    changeable only by their owner, who must be the current user (or root), as ssh requires of
    its keys. Value files are read as data only (no pickles), so they are not asked."""
    root = Path(folder)
    me = os.getuid() if hasattr(os, "getuid") else None
    for path in [root, *sorted(root.glob(f"{_PREFIX}*.json"))]:
        try:
            st = path.stat()
        except OSError:
            continue
        if me is not None and st.st_uid not in (me, 0):
            return f"{path} belongs to another user (uid {st.st_uid})"
        if st.st_mode & 0o022:
            who = "anyone" if st.st_mode & 0o002 else "its group"
            return f"{path} can be changed by {who} (mode {st.st_mode & 0o777:o})"
    return None


def session_folder(folder: str) -> tuple[str, int]:
    """(the session folder `folder` names, how many sessions `folder` holds): `folder` itself
    where it holds process files (a session's own folder), else its latest session.

    Raises:
      RecordError: the folder is missing or holds no recording.
    """
    root = Path(folder)
    if not root.is_dir():
        raise RecordError(f"{folder}: no such directory; {_HOW}")
    if any(root.glob(f"{_PREFIX}*.json")):
        return str(root), 1
    sessions = _sessions(root)
    if not sessions:
        raise RecordError(f"{folder} holds no recording ({_SESSION}*/{_PREFIX}*.json); {_HOW}")
    return str(sessions[-1]), len(sessions)


def read(folder: str, checked: bool = False) -> dict:
    """Every process file of a session as one recording: {"folder": the session folder,
    "sessions": [...], "functions": [...]}, where each function carries the `session` (index)
    it came from. `folder` is a session folder, or a folder of sessions (the latest is read).
    It is refused where others can change it (`untrusted`), unless `checked`: the process that
    chose it (replay's command line, which --trust_recording overrides) has refused it already.

    Raises:
      RecordError: the folder is missing, holds no recording, or a file is not one.
    """
    folder, _ = session_folder(folder)
    if not checked and os.environ.get(ENV_TRUST) != "1":
        problem = untrusted(folder)
        if problem:
            raise RecordError(f"{problem}: a recording holds code that replaying it imports and "
                              "runs, so it is refused; make it writable by its owner alone "
                              f"(chmod go-w), or give {_TRUST_FLAG} if you trust everyone who "
                              "can write it")
    root = Path(folder)
    files = sorted(root.glob(f"{_PREFIX}*.json"))
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
        session = dict({k: v for k, v in data.items() if k != "functions"}, file=path.name)
        failed = path.with_suffix(".failed")
        if failed.is_file():
            session["write_failed"] = failed.read_text(encoding="utf-8", errors="replace").strip()
        sessions.append(session)
        functions += [dict(f, session=index) for f in data["functions"]]
    return {"folder": folder, "sessions": sessions, "functions": functions}


def ending(data: dict) -> str:
    """How the recorded processes ended, in a sentence, for the line replay prints."""
    unfinished = [s for s in data["sessions"] if s.get("ended", "finished") != "finished"]
    processes = len(data["sessions"])
    text = f"{processes} process{'es' if processes != 1 else ''} recorded"
    if not unfinished:
        return text + ", each ended normally"
    failed = [s for s in unfinished if s.get("write_failed")]
    killed = [s for s in unfinished if not s.get("write_failed")]
    if failed:
        text += "; " + "; ".join(
            f"{s['file']} stopped being written ({s['write_failed']}): what it wrote before is "
            "kept, and what it recorded after is lost" for s in failed)
    if killed:
        names = ", ".join(s["file"] for s in killed)
        text += (f"; {len(killed)} did not end normally (killed, os._exit or a crash: {names}): "
                 "what each recorded up to its last finished test is kept")
    return text
