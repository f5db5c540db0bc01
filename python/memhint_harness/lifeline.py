"""No user code outlives the profile.

The launcher gives every run a marker (MEMHINT_RUN_ID in the environment, inherited by every process the
user's script starts, also those that call setsid() and leave the process group). Here:
- the harness dies when the launcher dies: PR_SET_PDEATHSIG on Linux, a thread watching getppid() elsewhere;
- a guardian process, forked before torch is imported, waits for the harness to end (for any reason,
  SIGKILL included) and then kills every process that carries the run's marker, until none is left.
The launcher sweeps the same way when it stops a run (timeout, cancel, its own signals, normal end).
"""
import os
import signal
import sys
import threading
import time

RUN_ID_ENV = "MEMHINT_RUN_ID"
LAUNCHER_PID_ENV = "MEMHINT_LAUNCHER_PID"
_PR_SET_PDEATHSIG = 1


def _prctl(option, value):
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                          ctypes.c_ulong(0)) == 0
    except (OSError, AttributeError, TypeError):
        return False


def marked_pids(run_id, exclude=()):
    """Processes whose initial environment carries MEMHINT_RUN_ID=run_id (zombies have none: skipped)."""
    needle = ("%s=%s" % (RUN_ID_ENV, run_id)).encode()
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        pid = int(name)
        if pid in exclude:
            continue
        try:
            with open("/proc/%d/environ" % pid, "rb") as handle:
                entries = handle.read().split(b"\0")
        except OSError:
            continue  # gone, or not ours to read
        if needle in entries:
            found.append(pid)
    return found


def kill_marked(run_id, exclude=()):
    """SIGKILLs marked processes until none is left (a dying process may fork once more)."""
    exclude = set(exclude)
    for _ in range(100):
        pids = marked_pids(run_id, exclude)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.01)


def _die_with_everything(run_id):
    if run_id:
        kill_marked(run_id, exclude={os.getpid()})
    os._exit(137)


def _watch_parent(parent, run_id):
    while True:
        time.sleep(0.2)
        if os.getppid() != parent:
            _die_with_everything(run_id)


def _start_time(pid):
    """The process's start time from /proc, or None once it is gone or a zombie."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == b"Z" else fields[19]


def _wait_for_exit(pid):
    try:
        fd = os.pidfd_open(pid)
    except AttributeError:  # Python < 3.9: poll /proc (the start time tells a reused pid apart)
        start = _start_time(pid)
        while start is not None and _start_time(pid) == start:
            time.sleep(0.1)
        return
    except OSError:
        return  # already gone
    import select

    select.select([fd], [], [])  # readable once the process has exited


def _start_guardian(run_id):
    """A process that sweeps the run's processes once the harness is gone. Double-forked, so it is not
    the harness's child: a script that waits for all its children (os.wait() until ECHILD) never waits
    for it. Called before torch is imported and before any thread starts, so the forks are cheap and safe."""
    harness = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        return
    if pid != 0:
        os.waitpid(pid, 0)  # the intermediate process exits at once
        return
    try:
        if os.fork() != 0:
            os._exit(0)
        # Holds none of the harness's pipes, so the launcher sees them close when the harness ends.
        null = os.open(os.devnull, os.O_RDWR)
        for fd in range(3):
            os.dup2(null, fd)
        for fd in [int(n) for n in os.listdir("/proc/self/fd")]:
            if fd > 2:
                try:
                    os.close(fd)
                except OSError:
                    pass
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        _wait_for_exit(harness)
        kill_marked(run_id, exclude={os.getpid()})
    finally:
        os._exit(0)


def start():
    """Ties the harness's life to the launcher's."""
    run_id = os.environ.get(RUN_ID_ENV)
    raw_parent = os.environ.pop(LAUNCHER_PID_ENV, None)
    parent = int(raw_parent) if raw_parent and raw_parent.isdigit() else os.getppid()
    if run_id and hasattr(os, "fork") and os.path.isdir("/proc/self"):
        _start_guardian(run_id)  # first: no thread may be running when it forks
    if not _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL):
        thread = threading.Thread(target=_watch_parent, args=(parent, run_id), name="memhint-parent-watch",
                                  daemon=True)
        thread.start()
    if os.getppid() != parent:
        _die_with_everything(run_id)  # the launcher died before the death signal was armed
