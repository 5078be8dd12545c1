"""Child-process entry: `python -m nki_assist.toolchain.child JOBDIR`.

Runs one task (a "module:function" called with pickled keyword arguments) under an address-space
limit, with a faulthandler watchdog that dumps every Python stack to JOBDIR/timeout.txt and exits
when the wall-time limit passes (it works even while the main thread is stuck inside NumPy C code).
The result, or the exception with the innermost line in the watched user file, goes to
JOBDIR/result.pkl. Never imported by the parent except for `frame_line`.
"""

from __future__ import annotations

import faulthandler
import importlib
import os
import pickle
import sys
import traceback
from pathlib import Path


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


def _limit_memory(memory_mb: int) -> None:
    if memory_mb and memory_mb > 0:
        import resource

        limit = int(memory_mb) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _write(jobdir: Path, payload: dict) -> None:
    tmp = jobdir / "result.tmp"
    try:
        data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # unpicklable or too large for the memory limit
        data = pickle.dumps({"status": "error", "error": f"result could not be pickled: {type(exc).__name__}: {exc}",
                             "line": None, "traceback": ""})
    tmp.write_bytes(data)
    tmp.replace(jobdir / "result.pkl")


def main(jobdir: str) -> int:
    job = Path(jobdir)
    task = pickle.loads((job / "task.pkl").read_bytes())
    for p in reversed(task.get("sys_path", [])):
        if p not in sys.path:
            sys.path.insert(0, p)
    os.environ.update(task.get("env", {}))
    watch = task.get("watch")
    timeout_s = float(task.get("timeout_s") or 0)
    # Import the task's module before arming the limits: imports are ours, not the user's.
    mod_name, fn_name = task["call"].split(":")
    fn = getattr(importlib.import_module(mod_name), fn_name)
    for name in task.get("preload", ()):  # e.g. the simulator, so its import is not timed
        try:
            importlib.import_module(name)
        except Exception:
            pass  # the task itself reports the import error
    dump = open(job / "timeout.txt", "w")
    if timeout_s > 0:
        faulthandler.dump_traceback_later(timeout_s, exit=True, file=dump)
    _limit_memory(int(task.get("memory_mb") or 0))
    (job / "armed").touch()  # the parent's own deadline counts from here
    try:
        value = fn(**task.get("kwargs", {}))
        payload = {"status": "ok", "value": value}
    except MemoryError as exc:
        payload = {"status": "out-of-memory", "error": f"MemoryError: {exc}".rstrip(": "),
                   "line": frame_line(exc.__traceback__, watch), "traceback": ""}
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from user code included
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-12:])
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        payload = {"status": "error", "error": f"{type(exc).__name__}: {msg}".rstrip(": "),
                   "line": frame_line(exc.__traceback__, watch), "traceback": tb,
                   "memory": isinstance(exc, MemoryError) or "MemoryError" in type(exc).__name__}
    faulthandler.cancel_dump_traceback_later()
    try:
        _write(job, payload)
    except MemoryError:
        _write(job, {"status": "out-of-memory", "error": "MemoryError while saving the result", "line": None})
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown (user atexit handlers, threads)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
