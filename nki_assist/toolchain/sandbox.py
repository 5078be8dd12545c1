"""Run user code (kernels, references) in a contained child process.

What the sandbox promises (docs/toolchain.md "Sandbox"): a wall-time limit, an address-space,
CPU-time and file-size limit, no core dumps, a process limit (non-root users), a minimal
allow-listed environment (no API keys or tokens), a fresh temporary working directory, its own
session and process group, and that every process it started is killed when the run ends, however
it ends. It does not protect the file system or the network (the opt-in `strong` mode of
`isolation.py` adds namespaces where the platform has them).

The parent never hangs and never crashes: a timeout, an allocation beyond the limit, a segfault,
`os._exit`, a signal or a result that cannot travel back all come back as a `ChildOutcome` with a status, a
one-line error (secrets redacted) and, when it can be found, the line of the user file that ran.
"""

from __future__ import annotations

import json
import os
import platform
import pickle
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..infra.redact import is_secret_name, redact
from .isolation import current_mode, wrap
from .procs import adopt_orphans, freeze_and_kill, now_ticks, owned
from . import zygote as _zygote

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MEMORY_MB = 4096
KILL_GRACE_S = 3.0  # after the child's own watchdog should have fired and exited
MIN_RESULT_MB = 64  # the child's file-size limit is max(memory, 64 MiB): results up to that are read
STARTUP_LIMIT_S = 60.0  # interpreter + simulator imports before the limits are armed
TOKEN_ENV = "NKI_ASSIST_SANDBOX_ID"  # marks every process of one run (found and killed at its end)
PASS_ENV = "NKI_ASSIST_CHILD_ENV"  # comma list of extra variable names to pass (never secrets)
ENV_ALLOW = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "PYTHONHASHSEED", "PYTHONFAULTHANDLER",
                       "PYTHONDONTWRITEBYTECODE", "SYSTEMROOT"})
ENV_ALLOW_PREFIXES = ("LC_", "NEURON_", "NKI_PRECISE", "XLA_", "OMP_", "OPENBLAS_", "MKL_")

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
    in_user_code: bool = False  # the limits were armed: the task (user code) had started
    leftovers: int = 0  # processes of the run still alive at its end (killed)
    sandbox: str = "basic"


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
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:  # a zygote that does not report the exit (a kernel sent it SIGSTOP)
        gone = getattr(proc, "abandon", None)
        if gone is None:
            proc.wait()  # a killed process of ours: the kernel reaps it at once
        else:
            gone()


def _tail(path: Path, limit: int = 4000) -> str:
    """The last `limit` bytes of a file the run wrote, never the whole of it (a kernel may print gigabytes)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - limit))
            return fh.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _end_run(proc: subprocess.Popen, token: str, since: int) -> int:
    """Kill everything the run started: its process group and session, any descendant that left
    them (found by the run's token, or re-parented to nki-assist, a child subreaper), stopping each
    before the kill so none can fork away. Returns how many were still alive."""
    _kill(proc)
    return freeze_and_kill(root=proc.pid, token=token, since=max(0, since - 1))


def _wait(proc: subprocess.Popen, armed: Path, timeout_s: float, stop=None) -> bool:
    """Wait for the child; SIGKILL its group when it overstays, or when `stop` (a threading.Event) is set.
    True when it had to be killed.

    The deadline is timeout + grace from the moment the child armed its own watchdog (start-up on a
    loaded machine is not the kernel's time), and at most STARTUP_LIMIT_S before that."""
    limited = bool(timeout_s and timeout_s > 0)
    if not limited and stop is None:
        proc.wait()
        return False
    start = time.monotonic()
    deadline = start + STARTUP_LIMIT_S + timeout_s + KILL_GRACE_S if limited else float("inf")
    armed_seen = False
    while True:
        try:
            proc.wait(timeout=0.05)
            return False
        except subprocess.TimeoutExpired:
            pass
        if stop is not None and stop.is_set():  # the caller gave up on the run (Ctrl-C in another thread)
            _kill(proc)
            return True
        now = time.monotonic()
        if limited and not armed_seen and armed.exists():
            armed_seen = True
            deadline = now + timeout_s + KILL_GRACE_S
        if now > deadline:
            _kill(proc)
            return True


def _child_path() -> list[str]:
    """The parent's import path, so the child sees the same modules (stand-ins included)."""
    return [p for p in sys.path if p and os.path.isdir(p)]


def child_env(extra: dict[str, str] | None = None, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The child's environment: an allow-list of the parent's (locale, PATH, Neuron/NKI and BLAS
    settings, names listed in NKI_ASSIST_CHILD_ENV), never a secret-named variable."""
    environ = dict(os.environ if environ is None else environ)
    wanted = {n.strip() for n in environ.get(PASS_ENV, "").split(",") if n.strip()}
    env = {k: v for k, v in environ.items()
           if (k in ENV_ALLOW or k.startswith(ENV_ALLOW_PREFIXES) or k in wanted) and not is_secret_name(k)}
    env.update({k: v for k, v in (extra or {}).items() if not is_secret_name(k)})
    return env


def _zygote_for(sys_path: list[str], env: dict[str, str] | None = None):
    """A warm zygote for one run (inside `warm_sandbox()`, basic mode only; one run at a
    time each: the per-run sweep by the zygote's token relies on it), else a context of None. A run with its
    own `env` (BLAS pinned for a reference) gets a zygote started with it: NumPy reads those settings when it
    loads, so a zygote started without them would hand the run the host's BLAS kernel."""
    if current_mode() != "basic" or not _zygote.active():
        return nullcontext()
    base = child_env(env)
    return _zygote.checkout((sys.executable, tuple(sys_path), tuple(sorted(base.items()))), base, sys_path)


# The reference is user code: its float32/float64 matmuls (the gpu-model is the reference at float32)
# run on the host's BLAS, whose kernel family and thread count change the last bits. Its child gets
# one fixed OpenBLAS kernel family (the x86-64 baseline, or ARMv8) and one thread, and MKL its
# reproducible mode, so the same reference gives the same bits on every host with the same NumPy.
# (Other BLAS libraries, e.g. Apple Accelerate, have no such switch: docs/architecture.md.)
_CORETYPE = {"x86_64": "Prescott", "amd64": "Prescott", "aarch64": "ARMV8", "arm64": "ARMV8"}


def blas_env() -> dict[str, str]:
    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MKL_CBWR": "COMPATIBLE"}
    core = _CORETYPE.get(platform.machine().lower())
    if core:
        env["OPENBLAS_CORETYPE"] = core
    return env


def prestart() -> None:
    """Start a warm zygote now, so its imports overlap the caller's work (warm_sandbox calls it); pinned
    like the review's runs (the batched child and the reference run with `blas_env`)."""
    try:
        with _zygote_for(_child_path(), blas_env()):
            pass
    except OSError:
        pass  # the first run starts one, or runs in a fresh process


@contextmanager
def warm_sandbox(enabled: bool = True):
    """Within the block (one review, every port of an eval) runs fork from a warm zygote that paid
    the child's imports once (toolchain/zygote.py), started at once so its imports overlap the caller's."""
    with _zygote.scope(enabled) as first:
        if first:
            prestart()
        yield


def run_in_child(call: str, kwargs: dict[str, Any], *, timeout_s: float = DEFAULT_TIMEOUT_S,
                 memory_mb: int = DEFAULT_MEMORY_MB, watch: str | None = None,
                 env: dict[str, str] | None = None, preload: tuple[str, ...] = (), stop=None,
                 fresh: bool = False, nproc_margin: int | None = None) -> ChildOutcome:
    """Call `call` ("module:function") with `kwargs` in a child process and return what happened.

    Paths in `kwargs` must be absolute (the child runs in a temporary directory). `preload` modules
    are imported before the limits start. `stop` (a threading.Event), when set from another thread,
    ends the run as its deadline would. `fresh`: a new interpreter even inside `warm_sandbox()`. `nproc_margin`: tasks
    the run may add for a non-root user (a whole program's processes, `nki-assist run`; default
    child.NPROC_MARGIN). Raises `isolation.SandboxUnavailable` only when the strong
    mode was selected and has become unusable."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="nki-assist-") as tmp:
        job = Path(tmp)
        work = job / "work"
        work.mkdir()
        task = {"call": call, "kwargs": kwargs, "timeout_s": timeout_s, "memory_mb": memory_mb,
                "watch": os.path.abspath(watch) if watch else None, "env": env or {},
                "sys_path": _child_path(), "preload": list(preload), "nproc_margin": nproc_margin}
        try:
            with open(job / "task.pkl", "wb") as fh:  # streamed: no second in-memory copy of the arguments
                pickle.dump(task, fh, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            return ChildOutcome("crashed", error=f"cannot pass arguments to the child: {type(exc).__name__}: {exc}")
        token = secrets.token_hex(12)
        cenv = child_env(env)  # from the start: BLAS settings are read when NumPy loads
        cenv.update({"PYTHONPATH": os.pathsep.join(task["sys_path"]), TOKEN_ENV: token, "HOME": str(work),
                     "TMPDIR": str(work), "PYTHONFAULTHANDLER": "1"})
        command, mode = wrap([sys.executable, "-m", "nki_assist.toolchain.child", str(job)], str(job), str(work))
        with open(job / "stdout.txt", "wb") as out, open(job / "stderr.txt", "wb") as err, \
                (nullcontext() if fresh else _zygote_for(task["sys_path"], env)) as zy:
            started = now_ticks()
            adopt_orphans()  # orphans of the run come back to nki-assist, never to init
            try:
                proc = None
                if zy is not None:  # forked from the warm zygote: the state of a fresh child, no start-up
                    try:
                        # every process forked from the zygote carries its token, exec'd ones this env
                        cenv[TOKEN_ENV] = f"{zy.token}.{token}"
                        proc = zy.spawn(job, work, cenv)
                        token = zy.token
                    except _zygote.ZygoteGone:
                        cenv[TOKEN_ENV] = token  # a fresh process instead
                if proc is None:
                    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=cenv,
                                            start_new_session=True, cwd=work)
            except OSError as exc:
                return ChildOutcome("crashed", error=f"cannot start the child process: {exc}", sandbox=mode)
            killed = False
            with owned(proc.pid):  # a concurrent run's sweep leaves this one alone
                try:
                    killed = _wait(proc, job / "armed", timeout_s, stop)
                finally:  # every run ends with its whole process tree gone (Ctrl-C in the parent included)
                    leftovers = _end_run(proc, token, started)
        out = _outcome(job, proc.returncode, killed, timeout_s, watch, memory_mb)
        out.elapsed_s, out.leftovers, out.sandbox = time.perf_counter() - t0, leftovers, mode
        out.error = redact(out.error) if out.error else out.error
        out.traceback, out.stderr = redact(out.traceback), redact(out.stderr)
        return out


def _exit_record(job: Path) -> dict[str, int] | None:
    """The supervisor's exit.json ({"code": N} or {"signal": N}), None when absent or malformed."""
    try:
        raw = json.loads((job / "exit.json").read_text()[:200])
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if (isinstance(raw, dict) and len(raw) == 1 and next(iter(raw)) in ("code", "signal")
            and type(next(iter(raw.values()))) is int):
        return raw
    return None


def _outcome(job: Path, code: int | None, killed: bool, timeout_s: float, watch: str | None,
             memory_mb: int = DEFAULT_MEMORY_MB) -> ChildOutcome:
    """Read what the supervisor and the worker left in the job directory."""
    stderr = _tail(job / "stderr.txt")
    dump = _tail(job / "timeout.txt", 64_000)
    armed = (job / "armed").exists()
    ended = _exit_record(job)  # None: the supervisor did not finish (killed by the parent, or by user code)
    if (job / "result.json").exists() and ended is not None:
        from . import wire  # deferred: NumPy; `review` starts the warm sandbox before its heavy imports

        try:  # parsed and validated, never unpickled: the worker that wrote it ran user code (wire.py)
            payload = wire.read(job, max(memory_mb, MIN_RESULT_MB) * 2**20)
        except wire.WireError as exc:
            return ChildOutcome("crashed", error=f"unreadable result: {exc}", stderr=stderr, in_user_code=armed)
        status = payload["status"]
        if status == "error" and payload.get("memory"):
            status = "out-of-memory"
        if status == "error" and payload.get("nproc"):  # a fork bomb: the kernel's fault, not the backend's
            return ChildOutcome("crashed", error=payload.get("error"), line=payload.get("line"),
                                traceback=payload.get("traceback", ""), stderr=stderr, in_user_code=True)
        return ChildOutcome(status, value=payload.get("value"), error=payload.get("error"),
                            line=payload.get("line"), traceback=payload.get("traceback", ""),
                            stderr=stderr, in_user_code=armed)
    if killed or "Timeout (" in dump:
        return ChildOutcome("timeout", error=f"no result after {timeout_s:g} s (wall-time limit)",
                            line=timeout_line(dump, watch), traceback=dump[-4000:], stderr=stderr,
                            in_user_code=armed)
    line = timeout_line(stderr, watch)
    if ended is None:
        how = f"killed by {_signal_name(code)}" if code is not None and code < 0 else f"exited with code {code}"
        return ChildOutcome("crashed", error=f"the sandbox supervisor was {how} before the run finished "
                            "(user code may have signalled its parent)", line=line, stderr=stderr,
                            in_user_code=armed)
    if "signal" in ended:
        name = _signal_name(-int(ended["signal"]))
        hint = {"SIGKILL": " (the system out-of-memory killer, or the code killed itself)",
                "SIGXCPU": " (CPU-time limit)", "SIGXFSZ": " (file-size limit)"}.get(name, "")
        return ChildOutcome("crashed", error=f"process killed by {name}{hint}", line=line, stderr=stderr,
                            in_user_code=armed)
    last = stderr.strip().splitlines()[-1] if stderr.strip() else "no output"
    return ChildOutcome("crashed", error=f"process exited with code {ended.get('code')} without a result "
                        f"(os._exit or a native exit): {last[:300]}", line=line, stderr=stderr, in_user_code=armed)
