"""python -m harness record DIR -- CMD: run a command with the recorder in every Python process it
starts (harness.record).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from harness.cli.options import UsageError
from harness.cli.settings import RecordSettings


def record_command(s: RecordSettings) -> int:
    """python -m harness record DIR -- CMD: runs CMD with the recorder started in its Python
    processes."""
    import subprocess  # noqa: PLC0415

    import harness  # noqa: PLC0415
    from harness.record import hook, store  # noqa: PLC0415

    folder, command = s.folder, s.command
    if Path(folder).exists() and not Path(folder).is_dir():
        raise UsageError(f"{folder} is a file; give a directory for the recording (it is created "
                         "if missing)")
    try:
        session = store.new_session(folder)
    except OSError as e:
        raise UsageError(
            f"cannot write {folder}: {e.strerror or e}; choose another directory"
        ) from None
    site = Path(hook.__file__).resolve().parent / "_site"
    root = Path(harness.__file__).resolve().parent.parent
    path = [str(site)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), **{hook.ENV_FOLDER: session,
                                                                   hook.ENV_POINTS: str(s.points),
                                                                   hook.ENV_EAGER: "1" if s.eager
                                                                   else "0",
                                                                   hook.ENV_PATH: str(root),
                                                                   hook.ENV_INCLUDE:
                                                                   ",".join(s.include)})
    try:
        code = subprocess.run(list(command), env=env, check=False).returncode
    except OSError as e:
        os.rmdir(session)  # nothing ran: no empty session is left behind
        raise UsageError(f"cannot run {command[0]}: {e.strerror or e}; give the command after --, "
                         "e.g. python -m harness record DIR -- python -m unittest") from None
    from harness.record import recorder  # noqa: PLC0415 - numpy only, no TensorFlow

    sys.stderr.write(recorder.folder_summary(session, include_flag="--record_include") + "\n")
    code = shell_status(code, "the command")
    if not s.check:
        return code
    try:
        store.read(session)
    except store.RecordError:
        sys.stderr.write("harness record: --check: nothing checked: no custom-gradient function "
                         "of the command's own was recorded\n")
        return code
    # The replay's own summary, reports and exit status, as pytest --harness-check gives them.
    replayed = subprocess.run([sys.executable, "-m", "harness", "replay", session, "--mode=all"],
                              env={k: v for k, v in os.environ.items()
                                   if not k.startswith("HARNESS_RECORD")}, check=False)
    return code or shell_status(replayed.returncode, "the replay")


def shell_status(code: int, what: str) -> int:
    """A child's exit status as a shell reports it: a process a signal ended is 128 + the
    signal (SIGKILL 137, SIGTERM 143), said in one line; Python's negative returncode, returned
    as it is, would be 256 less that (247 for SIGKILL) and read as a plain failure."""
    import signal  # noqa: PLC0415

    if code >= 0:
        return code
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    sys.stderr.write(f"harness record: {what} was killed by {name} (exit status {128 - code}, as "
                     "a shell reports it)\n")
    return 128 - code
