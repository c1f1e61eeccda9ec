"""Reproductions: repro.py and ISSUE.md for a result, checked, and shrunk with --minimize."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
import textwrap
import threading
from pathlib import Path
from typing import Optional, Sequence

from harness.cli.help import WIDTH
from harness.cli.settings import Settings, say, write_outputs
from harness.records import CaseInfo, OracleStatus

REPRO_VERDICTS = ("fail", "xpass", "crash")


# Repro folder names: well under the 255 bytes file systems allow in one name.
_NAME_MAX = 100


# The longest a reproduction script may run when it is checked.
_SCRIPT_SECONDS = 120.0


_HASH_CHARS = 10


def safe_name(label: str) -> str:
    """A folder name for a case id or point label: readable, at most _NAME_MAX characters, and
    one name per label (a long one keeps its start and gets a hash of the whole label)."""
    safe = "".join(c if c.isascii() and c.isalnum() or c in "._=-" else "_" for c in label)
    if len(safe) <= _NAME_MAX and safe.strip("."):
        return safe
    digest = hashlib.sha1(label.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    return f"{safe[:_NAME_MAX - _HASH_CHARS - 1]}-{digest}" if safe.strip(".") else digest


def repro_folder(root: str, case: str, point: str) -> Path:
    """The folder for one case and point's reproduction, checked to resolve inside `root`.

    Raises:
      ValueError: it resolves elsewhere (a link inside `root` points out of it).
    """
    folder = Path(root) / safe_name(case) / safe_name(point)
    inside = os.path.realpath(root)
    if os.path.commonpath([inside, os.path.realpath(folder)]) != inside:
        raise ValueError(f"{folder} resolves to {os.path.realpath(folder)}, outside --repro_dir "
                         f"{root}")
    return folder


def _reproduction(result, parts, tolerance, full: bool):
    """(the repro.py text, what running it must show, a sentence for ISSUE.md on the script)."""
    from harness.repro import script, short  # noqa: PLC0415

    note = ""
    if not full:
        try:
            made = short.render(parts, result, tolerance)
            return made.text, made.expected, ""
        except short.NotShort as e:
            note = f"This is the harness's complete script: the short one cannot show this ({e})."
    full_text, numeric = parts.full, False
    try:
        if short.deviation(result, tolerance).kind == "numeric" and not parts.builder:
            k, dtype, step, tol = short.numeric_check(result, parts, tolerance)
            full_text = script.with_numeric(parts.full,
                                            result.yardstick or next(iter(result.outcomes)), k,
                                            dtype, step, tol.rtol, tol.atol)
            numeric = True
    except short.NotShort:
        pass
    expected = short.full_expected(result, tolerance, numeric=numeric)
    if expected.exit == 0 and any(o.status is OracleStatus.DIFFER for o in result.oracles.values()):
        note += (" The script shows the modes agreeing; that the agreed values are wrong is the "
                 "harness's oracle finding, above.")
    return full_text, expected, note.strip()


@dataclasses.dataclass(frozen=True)
class Stopped:
    """What a reproduction left when a stop was asked for: in `folder`, repro.py holds `written`
    (in words; "" when nothing was written)."""

    folder: Path
    written: str


def write_repro(folder: Path, result, scripts: dict, environment: dict, info: CaseInfo, s: Settings,
                 stop: Optional[threading.Event] = None):
    """Writes one reproduction, after running it in a fresh process: ISSUE.md only when the script
    shows what the harness saw. Returns False when something could not be written, or the script
    does not show it (said on stderr), True when all is well, and a Stopped when `stop` was set
    before it was done."""
    from harness.repro import issue, short, verify  # noqa: PLC0415

    stop = stop or threading.Event()
    if stop.is_set():
        return Stopped(folder, "")
    missing = (False, "the worker died before it could send the script's source")
    ok, parts = scripts.get(result.point, missing)
    if not ok:
        say(f"no reproduction for {result.name}: {parts}")
        return True
    try:
        text, expected, note = _reproduction(result, parts, info.tolerance, s.full)
    except short.NotShort as e:
        say(f"no reproduction for {result.name}: {e}")
        return True
    made = None
    if s.minimize and note:
        say(f"repro.py for {result.name} is not minimised: {note}")
    elif s.minimize:
        text, note, made = _minimized(result, text, expected, s, parts, info.tolerance, stop)
    if not _prepared(folder) or not write_outputs([(str(folder / "repro.py"), text)]):
        return False
    if stop.is_set():
        return Stopped(folder, _unchecked(made))
    # Running it starts a fresh Python and TensorFlow: seconds of silence without this line.
    say(f"running {folder / 'repro.py'} to check that it shows what the harness saw")
    try:
        ran = verify.run(text, timeout=min(s.timeout, _SCRIPT_SECONDS), stop=stop)
    except verify.Interrupted:
        return Stopped(folder, _unchecked(made))
    why = verify.shows(ran, expected)
    if why:
        sys.stderr.write(f"harness: {folder / 'repro.py'} does not show what the harness saw for "
                         f"{result.name}: {why}. ISSUE.md is not written; run the script to see "
                         "what it does\n")
        return False
    output = ran.stdout if ran.exit is not None and ran.exit >= 0 else (
        ran.stdout + f"(the process was killed by signal {-ran.exit})\n")
    return write_outputs([(str(folder / "ISSUE.md"),
                            issue.render(result, text, environment, info.description, output,
                                         note=note, seen=_seen(s.matrix, result, expected),
                                         origin=parts.origin, library=parts.library,
                                         bisected=issue.bisect_line(s.bisect) if s.bisect
                                         else ""))])


def _prepared(folder: Path) -> bool:
    """Makes `folder`, saying what it replaces, and removes an ISSUE.md from before; False (said
    on stderr) when it cannot be written."""
    there = [name for name in ("repro.py", "ISSUE.md") if (folder / name).exists()]
    if there:
        them = "them" if len(there) > 1 else "it"
        say(f"{folder} already holds {' and '.join(there)}, from before: replacing {them}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # An ISSUE.md from before describes another script: it goes, whatever this one's check says.
        (folder / "ISSUE.md").unlink(missing_ok=True)
    except OSError as e:
        sys.stderr.write(f"harness: cannot write {folder}: {e.strerror or e}; choose another "
                         "directory\n")
        return False
    return True


def _unchecked(made) -> str:
    """What repro.py holds when a stop came before its check, in words."""
    if made is None:
        return "the script as written"
    if not made.shrunk:
        return "the script as written, unminimised"
    return (f"the smallest script the minimiser found so far ({made.after_lines} lines, from "
            f"{made.before_lines}; each candidate kept showed the deviation in its runner)")


def _minimized(result, text: str, expected, s: Settings, parts, tolerance, stop: threading.Event):
    """The short script `text` shrunk by harness.repro.minimize, a sentence saying so, and the
    minimiser's record (the unshrunk script, no sentence and None when it cannot be shrunk)."""
    from harness.repro import minimize  # noqa: PLC0415

    live = sys.stderr.isatty()

    def progress(tried: int, size: int) -> None:
        if live:
            sys.stderr.write(f"\rharness: minimise {result.name}: {tried} candidates, smallest "
                             f"{size} characters ")
            sys.stderr.flush()
        elif tried % 50 == 0:
            say(f"minimise {result.name}: {tried} candidates, smallest {size} characters")

    docstring = '"""' + textwrap.fill(
        f"Minimised from the harness case {result.case} at {result.point}: {expected.what}. Needs "
        "only TensorFlow and NumPy; "
        + ("the process dies while that shows." if expected.exit is None else
                                     f"exits {expected.exit} while that shows."),
                                      width=WIDTH - 3) + '"""\n'

    try:
        made = minimize.minimize(text, expected, budget=s.minimize_seconds, timeout=s.timeout,
                                 progress=progress, docstring=docstring, function=parts.expression,
                                 tolerance=tolerance, stop=stop)
    except ValueError as e:
        say(f"repro.py for {result.name} is not minimised: {e}")
        return text, "", None
    finally:
        if live:
            sys.stderr.write("\n")
    summary = made.summary()
    if made.stopped != "interrupted":  # an interrupted run says so in one line at its end
        print(f"{result.name}: {summary}", flush=True)
    return made.text, (f"Minimised by the harness ({summary})." if made.shrunk else ""), made


def _seen(matrix: Optional[dict], result, expected) -> str:
    """The releases in `matrix` where every mode the script shows ended as it did here, with
    the same verdict; "" without a matrix."""
    if not matrix:
        return ""
    rows = {r.get("mode"): r.get("cells", {}) for r in matrix["rows"]
            if r.get("case") == result.case and r.get("point") == result.point}
    versions = [v.get("version") for v in matrix.get("versions", []) if isinstance(v, dict)]
    if not rows or not expected.outcomes:
        return ""

    def same(version: str) -> bool:
        cells = [rows.get(mode, {}).get(version, {}) for mode in expected.outcomes]
        return all(c.get("status") == want and c.get("verdict") == result.verdict.value
                   for c, want in zip(cells, expected.outcomes.values()))

    seen = [v for v in versions if same(v)]
    other = [v for v in versions if v not in seen]
    if not seen:
        return (
            f"None of the version matrix's releases ({', '.join(versions)}) shows the same outcome."
        )
    return (f"Seen on TensorFlow {', '.join(seen)}"
            + (f"; not on {', '.join(other)}" if other else "")
            + " (from a version matrix: the same outcome in every mode shown, and the same "
              "verdict).")


def write_repros(wanted: Sequence[tuple[Path, object, dict, CaseInfo]], environment: dict,
                 s: Settings):
    """Writes each reproduction; their scripts run in parallel, one per core. Returns whether
    all went well, or, when Ctrl-C or SIGTERM came, the line that says what was left."""
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    if not wanted:
        return True
    stop = threading.Event()
    threads = ThreadPoolExecutor(max_workers=max(1, min(len(wanted), os.cpu_count() or 1)))
    futures = [threads.submit(write_repro, w[0], w[1], w[2], environment, w[3], s, stop)
               for w in wanted]
    try:
        done = [f.result() for f in futures]
    except KeyboardInterrupt:
        # Every candidate and check running is ended at once; what each left is said in one line.
        stop.set()
        while True:
            try:
                threads.shutdown(wait=True)
                break
            except KeyboardInterrupt:
                continue
        return stopped_line([f.result() for f in futures])
    threads.shutdown(wait=True)
    return all(d is True for d in done)


def stopped_line(done: Sequence) -> str:
    stopped = [d for d in done if isinstance(d, Stopped)]
    written = [d for d in stopped if d.written]
    said = [f"{d.folder / 'repro.py'} holds {d.written}, not checked in a fresh process"
            for d in written]
    finished = len(done) - len(stopped)
    if finished:
        said.append(f"{finished} of {len(done)} reproductions {'was' if finished == 1 else 'were'} "
                    "finished before it")
    left = len(stopped) - len(written)
    if left:
        said.append(f"{left} {'was' if left == 1 else 'were'} not written")
    return "harness: interrupted while writing reproductions: " + "; ".join(said) + (
        "; no ISSUE.md beside an unchecked script" if written else "")
