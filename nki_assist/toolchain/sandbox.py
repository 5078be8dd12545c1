"""Run user code (kernels, references) in a child process with a wall-time and address-space limit.

The parent never hangs and never crashes: a timeout, an allocation beyond the limit, a segfault or
an unpicklable result all come back as a `ChildOutcome` with a status, a one-line error and, when it
can be found, the line of the user file that was executing.
"""

from __future__ import annotations

import os
import pickle
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY_MB = 4096
KILL_GRACE_S = 3.0  # after the child's own watchdog should have fired and exited
STARTUP_LIMIT_S = 60.0  # interpreter + simulator imports before the limits are armed

OutcomeStatus = Literal["ok", "error", "timeout", "out-of-memory", "crashed"]


@dataclass
class ChildOutcome:
    status: OutcomeStatus
    value: Any = None
    error: str | None = None
    line: int | None = None  # innermost line in the watched user file
    traceback: str = ""
    elapsed_s: float = 0.0
    stderr: str = ""


_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def timeout_line(dump: str, watch: str | None) -> int | None:
    """Innermost line of `watch` in a faulthandler dump (which lists the most recent call first)."""
    if not watch:
        return None
    for m in _FRAME.finditer(dump):
        f = m.group("file")
        try:
            same = os.path.samefile(f, watch)
        except OSError:
            same = os.path.abspath(f) == os.path.abspath(watch)
        if same:
            return int(m.group("line"))
    return None


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _wait(proc: subprocess.Popen, armed: Path, timeout_s: float) -> bool:
    """Wait for the child; SIGKILL its group when it overstays. True when it had to be killed.

    The deadline is timeout + grace from the moment the child armed its own watchdog (start-up on a
    loaded machine is not the kernel's time), and at most STARTUP_LIMIT_S before that."""
    if not timeout_s or timeout_s <= 0:
        proc.wait()
        return False
    start = time.monotonic()
    deadline = start + STARTUP_LIMIT_S + timeout_s + KILL_GRACE_S
    armed_seen = False
    while True:
        try:
            proc.wait(timeout=0.05)
            return False
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if not armed_seen and armed.exists():
            armed_seen = True
            deadline = now + timeout_s + KILL_GRACE_S
        if now > deadline:
            _kill(proc)
            return True


def _child_path() -> list[str]:
    """The parent's import path, so the child sees the same modules (stand-ins included)."""
    return [p for p in sys.path if p and os.path.isdir(p)]


def run_in_child(call: str, kwargs: dict[str, Any], *, timeout_s: float = DEFAULT_TIMEOUT_S,
                 memory_mb: int = DEFAULT_MEMORY_MB, watch: str | None = None,
                 env: dict[str, str] | None = None, preload: tuple[str, ...] = ()) -> ChildOutcome:
    """Call `call` ("module:function") with `kwargs` in a child process and return what happened.

    `preload` modules are imported before the time and memory limits start."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="nki-assist-") as tmp:
        job = Path(tmp)
        task = {"call": call, "kwargs": kwargs, "timeout_s": timeout_s, "memory_mb": memory_mb,
                "watch": os.path.abspath(watch) if watch else None, "env": env or {},
                "sys_path": _child_path(), "preload": list(preload)}
        try:
            (job / "task.pkl").write_bytes(pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL))
        except Exception as exc:
            return ChildOutcome("crashed", error=f"cannot pass arguments to the child: {type(exc).__name__}: {exc}")
        child_env = dict(os.environ)
        child_env["PYTHONPATH"] = os.pathsep.join(task["sys_path"])
        child_env.setdefault("PYTHONFAULTHANDLER", "1")
        with open(job / "stdout.txt", "wb") as out, open(job / "stderr.txt", "wb") as err:
            try:
                proc = subprocess.Popen([sys.executable, "-m", "nki_assist.toolchain.child", str(job)],
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=child_env,
                                        start_new_session=True, cwd=os.getcwd())
            except OSError as exc:
                return ChildOutcome("crashed", error=f"cannot start the child process: {exc}")
            killed = False
            try:
                killed = _wait(proc, job / "armed", timeout_s)
            except BaseException:  # Ctrl-C in the parent: do not leave the child running
                _kill(proc)
                raise
        elapsed = time.perf_counter() - t0
        stderr = (job / "stderr.txt").read_text(errors="replace")[-4000:]
        dump = (job / "timeout.txt").read_text(errors="replace") if (job / "timeout.txt").exists() else ""
        result = job / "result.pkl"
        if result.exists():
            try:
                payload = pickle.loads(result.read_bytes())
            except Exception as exc:
                return ChildOutcome("crashed", error=f"unreadable result: {type(exc).__name__}: {exc}",
                                    elapsed_s=elapsed, stderr=stderr)
            status = payload["status"]
            if status == "error" and payload.get("memory"):
                status = "out-of-memory"
            return ChildOutcome(status, value=payload.get("value"), error=payload.get("error"),
                                line=payload.get("line"), traceback=payload.get("traceback", ""),
                                elapsed_s=elapsed, stderr=stderr)
        if killed or "Timeout (" in dump:
            return ChildOutcome("timeout", error=f"no result after {timeout_s:g} s (wall-time limit)",
                                line=timeout_line(dump, watch), traceback=dump[-4000:],
                                elapsed_s=elapsed, stderr=stderr)
        code = proc.returncode
        if code is not None and code < 0:
            name = _signal_name(code)
            hint = " (likely the system out-of-memory killer)" if name == "SIGKILL" else ""
            return ChildOutcome("crashed", error=f"child process killed by {name}{hint}",
                                line=timeout_line(stderr, watch), elapsed_s=elapsed, stderr=stderr)
        last = stderr.strip().splitlines()[-1] if stderr.strip() else "no output"
        return ChildOutcome("crashed", error=f"child process exited with code {code}: {last[:300]}",
                            line=timeout_line(stderr, watch), elapsed_s=elapsed, stderr=stderr)
