"""Reporters: each is `render(report) -> str`; `write` puts the text on disk atomically."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

__all__ = ["check_writable", "write", "write_each"]


def check_writable(path: str) -> None:
    """Raises ValueError, saying what to do, when `path` cannot be written.

    Called before any case runs, so a typo in an output path costs seconds:
    it creates and removes a file beside `path`, the way `write` will.
    """
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise ValueError(f"{path} is a directory; give a file name")
    if not folder.is_dir():
        # The nearest folder above that exists: a file there is the mistake, not a missing
        # directory.
        above = next((f for f in (folder, *folder.parents) if f.exists()), None)
        if above is not None and not above.is_dir():
            raise ValueError(f"cannot write {path}: {above} is a file, not a directory; give a "
                             "path in a directory")
        raise ValueError(f"cannot write {path}: directory {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write {path}: directory {folder} is not writable; choose another "
                         "path")
    if target.exists() and not os.access(target, os.W_OK):
        raise ValueError(f"cannot write {path}: the file is read-only; choose another path")
    try:  # root passes os.access even where no file can be made (/proc, /sys, a read-only mount)
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".probe", dir=folder)
    except OSError as e:
        raise ValueError(f"cannot write {path}: no file can be made in {folder} ({e.strerror}); "
                         "choose another path") from None
    os.close(fd)
    os.unlink(probe)


def write(path: str, text: str) -> None:
    """Writes `text` to `path` through a temporary file and a rename, so a
    reader never sees a half-written report."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        # mkstemp makes the file private; give it what open() would have.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        # A lone surrogate the renderer let through is written escaped rather than lost with the
        # file.
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(text)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_each(outputs: Sequence[tuple[str, Union[str, Callable[[], str]]]],
               wrote: Optional[Callable[[str], None]] = None) -> bool:
    """Writes each (path, text or a function giving it), every one tried whatever failed before it.

    Then each that failed is one line on stderr that names it, why, and which of the others were
    written (none, where none was). `wrote(path)` is called for each one written.

    Returns:
      Whether every one was written.
    """
    failed: dict[str, str] = {}
    written: list[str] = []
    for path, text in outputs:
        try:
            write(path, text() if callable(text) else text)
        except OSError as e:
            failed[path] = str(e.strerror or e)
        else:
            written.append(path)
            if wrote is not None:
                wrote(path)
    for path, why in failed.items():
        if written:
            others = f"; {', '.join(written)} {'was' if len(written) == 1 else 'were'} written"
        else:
            others = "; no other output was written either" if len(outputs) > 1 else ""
        sys.stderr.write(f"harness: cannot write {path}: {why}{others}; rerun with another path "
                         "for it\n")
    return not failed
