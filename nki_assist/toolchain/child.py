"""Child-process entry: `python -m nki_assist.toolchain.child JOBDIR`.

Two processes. The **supervisor** (this process) imports the task's module, then forks the
**worker** and stays outside the user code: it is the worker's parent (so `os.getppid()` in a
kernel names the supervisor, never nki-assist), a child subreaper (orphaned descendants come back
to it instead of init), and after the worker ends it kills every descendant that is left and
records how the worker ended in JOBDIR/exit.json.

The worker arms the limits (wall time via a faulthandler watchdog that dumps every Python stack to
JOBDIR/timeout.txt and exits even inside NumPy C code; RLIMIT_AS/CPU/FSIZE/NPROC/CORE), touches
JOBDIR/armed, runs the task ("module:function" with keyword arguments the parent pickled) and writes the
result, or the exception with the innermost line of the watched user file, to JOBDIR/result.json
(+ result.npz for arrays; see wire.py: the parent only parses it).
Never imported by the parent except for `frame_line`.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import os
import pickle
import signal
import sys
import traceback
from pathlib import Path

from ..infra.exctext import exception_message
from . import wire
from .procs import freeze_and_kill

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
NPROC_MARGIN = 16  # tasks (processes + threads) the worker may add for a non-root user
MIN_FILE_MB = 64


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def frame_line(tb, watch: str | None) -> int | None:
    """Innermost line of the traceback that lies in `watch`."""
    if not watch or tb is None:
        return None
    line = None
    for fs in traceback.extract_tb(tb):
        if _same_file(fs.filename, watch):
            line = fs.lineno
    return line


def _user_tasks() -> int:
    """Tasks (threads included) of this real uid: what RLIMIT_NPROC counts."""
    uid, n = os.getuid(), 0
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not pid.isdigit():
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
            with open(f"/proc/{pid}/status", "rb") as fh:
                threads = next((ln for ln in fh if ln.startswith(b"Threads:")), b"Threads: 1")
            n += int(threads.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return n


def _limits(memory_mb: int, timeout_s: float, nproc_margin: int = NPROC_MARGIN) -> dict[str, int | None]:
    """Arm the resource limits of the worker; returns what was set (for the record)."""
    import resource

    set_: dict[str, int | None] = {}

    def lim(name: str, value: int) -> None:
        which = getattr(resource, name, None)
        if which is None:
            return
        try:
            _, hard = resource.getrlimit(which)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value))
            set_[name] = value
        except (ValueError, OSError):
            set_[name] = None

    lim("RLIMIT_CORE", 0)
    if memory_mb and memory_mb > 0:
        lim("RLIMIT_AS", int(memory_mb) * 2**20)
        lim("RLIMIT_FSIZE", max(int(memory_mb), MIN_FILE_MB) * 2**20)
    if timeout_s and timeout_s > 0:
        lim("RLIMIT_CPU", int(timeout_s) + 2)
    if os.getuid() != 0:  # Linux does not enforce RLIMIT_NPROC for root; see docs/toolchain.md
        lim("RLIMIT_NPROC", _user_tasks() + nproc_margin)
    return set_


def _write(jobdir: Path, payload: dict) -> None:
    """The result as JSON + npz (wire.py): the parent parses it, never unpickles it."""
    try:
        wire.write(jobdir, payload)
    except (wire.WireError, RecursionError, TypeError, ValueError) as exc:  # a value that cannot travel back
        wire.write(jobdir, {"status": "error", "error": f"result could not be returned: {type(exc).__name__}: "
                            f"{str(exc)[:300]}", "line": None, "traceback": ""})
    except OSError as exc:  # RLIMIT_FSIZE: the result is larger than the file-size limit
        wire.write(jobdir, {"status": "error", "line": None, "traceback": "", "memory": True,
                            "error": f"result too large to return ({exc.strerror})"})


def _work(job: Path, task: dict, fn) -> None:
    """The worker: limits, the task, the result. Never returns."""
    os.environ.update(task.get("env", {}))
    watch = task.get("watch")
    timeout_s = float(task.get("timeout_s") or 0)
    dump = open(job / "timeout.txt", "w")
    if timeout_s > 0:  # its thread starts here, before RLIMIT_NPROC forbids new threads
        faulthandler.dump_traceback_later(timeout_s, exit=True, file=dump)
    nproc = _limits(int(task.get("memory_mb") or 0), timeout_s,
                    int(task.get("nproc_margin") or NPROC_MARGIN)).get("RLIMIT_NPROC")
    (job / "armed").touch()  # the parent's own deadline counts from here; user code runs after it
    try:
        value = fn(**task.get("kwargs", {}))
        payload = {"status": "ok", "value": value}
    except MemoryError as exc:
        payload = {"status": "out-of-memory", "error": f"MemoryError: {exc}".rstrip(": "),
                   "line": frame_line(exc.__traceback__, watch), "traceback": ""}
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from user code included
        # the message once, capped (a kernel may raise with hundreds of megabytes of text); the traceback's frames
        # end with the exception's type, not a second copy of the message
        msg = exception_message(exc)
        tb = "".join(traceback.format_tb(exc.__traceback__)[-11:]) + f"{type(exc).__name__}\n"
        payload = {"status": "error", "error": f"{type(exc).__name__}: {msg}".rstrip(": "),
                   "line": frame_line(exc.__traceback__, watch), "traceback": tb,
                   "memory": isinstance(exc, MemoryError) or "MemoryError" in type(exc).__name__}
        if nproc and _user_tasks() >= nproc - 1:
            # The process limit is full, and only user code adds tasks after it was armed: whatever
            # failed next (a thread, a fork; OpenBLAS even raises SIGINT) is the kernel's doing.
            payload["nproc"] = True
            payload["error"] = (f"the kernel's processes and threads reached the process limit (RLIMIT_NPROC = "
                                f"{nproc} tasks for this user), then {payload['error']}")
    faulthandler.cancel_dump_traceback_later()
    try:
        _write(job, payload)
    except MemoryError:
        _write(job, {"status": "out-of-memory", "error": "MemoryError while saving the result", "line": None})
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown (user atexit handlers, threads)


def _prctl(option: int, value: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the parent's session sweep still applies


def _die_with_parent(parent: int) -> None:
    """SIGKILL this process when its parent dies (nki-assist killed mid-run, or the supervisor)."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _reap_all() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _supervise(job: Path, worker: int) -> int:
    """Wait for the worker, kill whatever it left behind, record how it ended."""

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_IGN)  # signals aimed at "the parent" by user code
    while True:
        try:
            pid, status = os.waitpid(worker, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            pid, status = worker, 0
            break
    # Orphans re-parent to us (subreaper); stop each before the kill so a re-forking one cannot race it.
    freeze_and_kill(root=None, token=None, since=0, children=True)
    _reap_all()
    ended = {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else {"code": os.waitstatus_to_exitcode(status)}
    (job / "exit.json").write_text(json.dumps(ended))
    return 0


def main(jobdir: str) -> int:
    _die_with_parent(os.getppid())
    job = Path(jobdir)
    task = pickle.loads((job / "task.pkl").read_bytes())
    for p in reversed(task.get("sys_path", [])):
        if p not in sys.path:
            sys.path.insert(0, p)
    # Import the task's module before arming the limits: imports are ours, not the user's.
    mod_name, fn_name = task["call"].split(":")
    fn = getattr(importlib.import_module(mod_name), fn_name)
    for name in task.get("preload", ()):  # e.g. the simulator, so its import is not timed
        try:
            importlib.import_module(name)
        except Exception:
            pass  # the task itself reports the import error
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    sys.stdout.flush()
    sys.stderr.flush()
    supervisor = os.getpid()
    worker = os.fork()
    if worker == 0:
        _die_with_parent(supervisor)
        try:
            _work(job, task, fn)
        finally:
            os._exit(70)  # _work never returns; this guards against a bug in it
    return _supervise(job, worker)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
