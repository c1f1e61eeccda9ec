"""Process lifetimes: a worker leaves nothing behind, whoever ends first.

Each worker leads its own process group, so everything a case starts (a
child process, and its children, even one whose parent exited) can be found
and ended: after every case by the worker, and by the supervisor when it kills
a worker. A worker, and the SavedModel loader a worker starts, exit as soon as
their parent is gone, even in the middle of a case: a supervisor killed with
SIGKILL runs no clean-up of its own.

The supervisor leaves no process of its own behind either: before it exits it ends and reaps
every worker still running and multiprocessing's resource tracker (`end_at_exit`).

A process's resident memory (`resident_mib`) is read here too: by the pool, for its memory budget
and for replacing a worker grown large, and by a worker, for its own size as each mode starts.

POSIX only (where TensorFlow's workers run); elsewhere these do nothing.
Plain standard library: no TensorFlow.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, Collection, Iterator, Optional

__all__ = ["end_at_exit", "end_children", "exit_with_parent", "end_strays", "end_group",
           "group_members", "held_signals", "lead_group", "let_signals_go", "resident_mib",
           "wait_unreaped"]

# How often a child looks for its parent. Cheap: one system call per tick.
_POLL_S = 0.25

# How long end_children waits for a child it killed, and for the resource tracker to end once
# told, before it kills that.
_END_S = 5.0

_ending_at_exit = False

# What a run ends on (harness.cli.run_loop), held back while a worker is started (held_signals).
_HELD = (signal.SIGINT, signal.SIGTERM)


def lead_group() -> None:
    """Makes this process the leader of a new session and process group, so what it starts can be
    found."""
    if hasattr(os, "setsid") and os.getpgrp() != os.getpid():
        os.setsid()


def exit_with_parent(on_death: Callable[[], None] = lambda: None,
                     parent: Optional[int] = None) -> None:
    """Starts a daemon thread that calls `on_death`, then ends this process, once its parent is
    gone.

    `parent`: the parent's process id as the parent gave it, so a parent that died before this
    is called is seen as gone; default: this process's parent now.
    The thread runs even while the main thread is inside a case's C++ code,
    and `os._exit` needs nothing from it.
    """
    parent = os.getppid() if parent is None else parent

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_POLL_S)
        with contextlib.suppress(Exception):  # whatever happens, the process must end
            on_death()
        os._exit(1)

    threading.Thread(target=watch, name="harness-exit-with-parent", daemon=True).start()


def group_members(pgid: int) -> list[int]:
    """The live processes in process group `pgid` (zombies, already ended, are left out)."""
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return _members_from_ps(pgid)
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
        except OSError:  # it ended while we looked
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses; it ends at the last
        # ")".
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(int(name))
    return found


def _members_from_ps(pgid: int) -> list[int]:
    try:
        out = subprocess.run(["ps", "-A", "-o", "pid=,pgid=,stat="], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    found = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == str(pgid) and not parts[2].startswith("Z"):
            found.append(int(parts[0]))
    return found


def end_strays(keep: Collection[int] = ()) -> list[int]:
    """Kills every other process in this process's group but `keep`; returns their ids.

    Only for a group leader (see lead_group): anywhere else the group is
    someone else's. Children of this process are reaped, so none is left a zombie.
    """
    me = os.getpid()
    if not hasattr(os, "killpg") or os.getpgrp() != me:
        return []
    strays = [pid for pid in group_members(me) if pid != me and pid not in keep]
    for pid in strays:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for pid in strays:
        # not our child: its own parent or init reaps it
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, 0)
    # A SIGKILL is not its death: on a loaded machine one that is not our child may still be
    # running when the next case starts. Wait (briefly) until each has died.
    deadline = time.monotonic() + 2.0
    while any(_running(pid) for pid in strays) and time.monotonic() < deadline:
        time.sleep(0.005)
    return strays


def _running(pid: int) -> bool:
    """Whether the process is alive and not yet a zombie (/proc; elsewhere: whether it exists)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True
    return stat[stat.rfind(")") + 2:][:1] not in ("Z", "X")


def end_group(leader: int) -> None:
    """Kills every process in the group that `leader` leads, `leader` too.

    Call it before `leader` is reaped, so its id cannot have been reused; a
    process that never came to lead a group leaves none by its id, and this
    does nothing.
    """
    with contextlib.suppress(OSError):
        if hasattr(os, "killpg"):
            os.killpg(leader, signal.SIGKILL)


def wait_unreaped(pid: int, timeout: float) -> bool:
    """Waits up to `timeout` s for child `pid` to end, leaving it unreaped; True once it has ended.

    Unreaped, its id cannot be reused, so its process group can still be ended
    safely after it (end_group); its exit status stays for whoever reaps it.
    """
    if not hasattr(os, "waitid"):
        return False
    deadline = time.monotonic() + timeout
    while True:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
                return True
        except ChildProcessError:  # already reaped: nothing left to wait for
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


def end_at_exit() -> None:
    """Has this process run `end_children` as it exits (once, however often it is called).

    A handler registered after this one runs before it, so whoever ends a worker more gently
    (harness.process.head_start's discard, a pool's close) has done so by then.
    """
    global _ending_at_exit
    if not _ending_at_exit:
        _ending_at_exit = True
        atexit.register(end_children)


def end_children(timeout: float = _END_S) -> None:
    """Kills and reaps every daemonic multiprocessing child of this process still running (with its
    process group), then ends and reaps multiprocessing's resource tracker.

    Daemonic children are what multiprocessing itself would end at exit, waiting on each for as long
    as it takes; here each is waited for `timeout` s at most. The resource tracker, which every
    spawn starts and nobody reaps, ends once no process holds its pipe; this process's end is closed
    last, so without this it would end after this process, left to whoever adopts it.
    """
    for child in multiprocessing.active_children():
        if child.daemon:
            end_group(child.pid)  # unreaped, its id is still its own
            with contextlib.suppress(OSError):
                child.kill()
            child.join(timeout)
    if not multiprocessing.active_children():  # one still running still holds the tracker's pipe
        _end_tracker(timeout)


def _end_tracker(timeout: float) -> None:
    """Closes this process's end of the resource tracker's pipe and reaps the tracker, which ends
    on that end-of-file (killed if it has not within `timeout` s). A later spawn starts a new one.
    """
    module = sys.modules.get("multiprocessing.resource_tracker")
    tracker = getattr(module, "_resource_tracker", None)
    if tracker is None:
        return
    # Not waited for: a signal handler may call this while this same thread, starting the tracker,
    # holds its lock, which in some Python versions is a plain Lock that it would wait on for ever.
    if not tracker._lock.acquire(blocking=False):
        return
    try:
        fd, pid = getattr(tracker, "_fd", None), getattr(tracker, "_pid", None)
        if fd is None or pid is None:  # none running, or one a parent started and reaps
            return
        tracker._fd = tracker._pid = None
        with contextlib.suppress(OSError):
            os.close(fd)
    finally:
        tracker._lock.release()
    if not wait_unreaped(pid, timeout):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, 0)


@contextlib.contextmanager
def held_signals() -> Iterator[None]:
    """Holds SIGINT and SIGTERM back while a child is started and put where whoever ends this
    process's children finds it; they are delivered as the block ends. Their handlers would
    otherwise run between the two (a KeyboardInterrupt, head_start's SIGTERM handler) and leave a
    child that nobody ends. The child starts with both held and lets them go (let_signals_go).

    Only in the main thread, where Python runs signal handlers, and where no other thread takes
    the signals instead (the main process runs none while it starts workers).
    """
    if (not hasattr(signal, "pthread_sigmask")
        or threading.current_thread() is not threading.main_thread()):
        yield
        return
    from multiprocessing import resource_tracker  # noqa: PLC0415

    # Starting the tracker lets both signals go: so it is started first, and they are held after.
    resource_tracker.ensure_running()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def let_signals_go() -> None:
    """In a child started inside held_signals: takes SIGINT and SIGTERM again (after any change of
    their handlers, so one held for it meets the new handler)."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD)


def resident_mib(pid: int, anonymous: bool = False) -> Optional[float]:
    """The process's resident memory now (VmRSS), in MiB, or with `anonymous` its anonymous part
    alone (RssAnon: what it allocated, tensors included, without the pages of the libraries it
    mapped, such as a GPU runtime loaded on first use); None where /proc does not say (not Linux,
    or the process is gone)."""
    field = "RssAnon:" if anonymous else "VmRSS:"
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
