"""A warm sandbox: a fork server ("zygote") that pays the interpreter and simulator imports once.

`with sandbox.warm_sandbox():` (one review, or every port of an `eval`) starts one zygote process with the
child's imports done (NumPy, ml_dtypes, the simulator, the task modules), and never runs user code
in it. Each sandboxed run asks it for a fresh `fork()`: the forked process takes its own session,
working directory, environment and output files, then does exactly what a freshly started
`python -m nki_assist.toolchain.child` does (supervisor + worker, limits armed per run). So every run
still starts from the same untouched state (a kernel that patches NumPy or the simulator changes only
its own copy), and the parent's timeouts, limits and process sweeps apply per run as before.

Containment kept: the zygote runs with the child's allow-listed environment, dies with nki-assist
(PR_SET_PDEATHSIG, and it exits when its request pipe closes), is not a subreaper (orphans of a run
still come back to nki-assist), serves one run at a time, and is marked as nki-assist's own process so
no sweep takes it for a stray. Every process forked from it carries the zygote's token in its
environment block, and a run's exec'd descendants carry it in their (per-run) environment too, so the
per-run sweep by token finds both. The `strong` mode (namespaces) keeps one fresh process per run.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

from . import procs

PRELOAD = ("numpy", "ml_dtypes", "nki_assist.toolchain.child", "nki_assist.toolchain.builtin",
           "nki_assist.numerics.scenarios", "nki_assist.numerics.refchild", "nki_assist.numerics.refbatch",
           "nki_assist.sim", "nki_assist.sim.runner")
DISABLE_ENV = "NKI_ASSIST_NO_ZYGOTE"  # "1": one fresh process per run, as before (A/B, debugging)
PR_SET_PDEATHSIG = 1
POLL_S = 0.2
SPAWN_TIMEOUT_S = 30.0  # a fork takes milliseconds; a zygote this slow is stopped or hung


class ZygoteGone(RuntimeError):
    """The zygote died or stopped answering; the run is reported as crashed and the next run starts a new one."""


class ZygoteRun:
    """One forked run, with the part of `subprocess.Popen`'s interface the sandbox uses."""

    def __init__(self, zygote: "Zygote", pid: int):
        self.zygote, self.pid, self.returncode = zygote, pid, None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self.zygote._exit_status(self.pid, timeout)
        return self.returncode

    def abandon(self) -> None:
        """The zygote did not report the run's end after it was killed (stopped, or hung): it is killed with
        its runs, and the next run starts a new one."""
        self.zygote.broken = True
        self.zygote.proc.kill()
        self.returncode = -signal.SIGKILL


class Zygote:
    def __init__(self, key: tuple, env: dict[str, str], sys_path: list[str]):
        self.key, self.token = key, secrets.token_hex(12)
        self.home = tempfile.mkdtemp(prefix="nki-assist-zygote-")
        env = dict(env, PYTHONPATH=os.pathsep.join(sys_path), NKI_ASSIST_SANDBOX_ID=self.token,
                   HOME=self.home, TMPDIR=self.home, PYTHONFAULTHANDLER="1")
        procs.adopt_orphans()
        self.proc = subprocess.Popen([sys.executable, "-m", "nki_assist.toolchain.zygote", str(os.getpid())],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, cwd=self.home, start_new_session=True,
                                     bufsize=0)  # unbuffered: `select` must see every reply line
        procs.own(self.proc.pid)
        self.broken = False
        _live.add(self)

    def spawn(self, job: Path, work: Path, env: dict[str, str]) -> ZygoteRun:
        request = {"job": str(job), "work": str(work), "env": env}
        try:
            data = (json.dumps(request) + "\n").encode()
            while data:
                data = data[self.proc.stdin.write(data):]
            line = self._line(SPAWN_TIMEOUT_S)
        except subprocess.TimeoutExpired as exc:  # stopped (SIGSTOP from a kernel) or hung: a fresh process instead
            self.broken = True
            raise ZygoteGone("the warm sandbox worker does not answer") from exc
        except (OSError, ValueError) as exc:
            self.broken = True
            raise ZygoteGone(f"the warm sandbox worker is gone ({exc})") from exc
        reply = json.loads(line)
        if "pid" not in reply:
            raise ZygoteGone(f"the warm sandbox worker could not fork: {reply.get('error')}")
        return ZygoteRun(self, int(reply["pid"]))

    def _line(self, timeout: float | None) -> bytes:
        fd = self.proc.stdout.fileno()
        if timeout is not None and not select.select([fd], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired("zygote run", timeout)
        line = self.proc.stdout.readline()  # raw pipe: reads up to the newline, never past it
        if not line:
            self.broken = True
            raise ZygoteGone("the warm sandbox worker ended")
        return line

    def _exit_status(self, pid: int, timeout: float | None) -> int:
        try:
            reply = json.loads(self._line(timeout))
        except ZygoteGone:
            return -signal.SIGKILL  # the run dies with the zygote (PR_SET_PDEATHSIG)
        if reply.get("exited") != pid:
            self.broken = True
            return -signal.SIGKILL
        return int(reply["code"])

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.kill()  # idle (no run in flight), possibly still importing: nothing to lose
        self.proc.wait()
        procs.disown(self.proc.pid)
        shutil.rmtree(self.home, ignore_errors=True)  # empty unless something of a run wrote there
        _live.discard(self)


_lock = threading.Lock()
_scopes = 0  # open warm_sandbox() blocks, all threads together
_idle: list[Zygote] = []
_live: set[Zygote] = set()  # every zygote not closed yet, idle or running a job


@atexit.register
def _close_live() -> None:
    """A run ended by a signal leaves the zygote a worker thread had checked out unclosed (the thread dies with
    the interpreter, its `finally` never runs): kill it and remove its folder on the way out."""
    for z in list(_live):
        try:
            z.close()
        except Exception:  # noqa: BLE001 - best effort on the way out
            pass


def active() -> bool:
    return _scopes > 0


@contextmanager
def checkout(key: tuple, env: dict[str, str], sys_path: list[str]):
    """A warm zygote for this run's environment and import path, for this run alone (a concurrent run
    gets another); None outside `warm_sandbox()`."""
    z = None
    with _lock:
        if _scopes:
            while _idle:
                cand = _idle.pop()
                if cand.key == key and not cand.broken and cand.proc.poll() is None:
                    z = cand
                    break
                cand.close()
            if z is None:
                z = Zygote(key, env, sys_path)
    try:
        yield z
    finally:
        if z is not None:
            with _lock:
                keep = _scopes > 0 and not z.broken
                if keep:
                    _idle.append(z)
            if not keep:
                z.close()


@contextmanager
def scope(enabled: bool = True):
    """While a scope is open (in any thread) sandboxed runs fork from warm zygotes; nested and
    concurrent scopes share them, the last one to close ends them. Yields True when this scope should
    start one at once (the first; `sandbox.warm_sandbox` does). Close it in the thread that opened it:
    a zygote dies with the thread that started it (PR_SET_PDEATHSIG)."""
    global _scopes
    if not enabled or os.environ.get(DISABLE_ENV) == "1":
        yield False
        return
    with _lock:
        _scopes += 1
        first = _scopes == 1 and not _idle
    try:
        yield first
    finally:
        with _lock:
            _scopes -= 1
            done = list(_idle) if _scopes == 0 else []
            if done:
                _idle.clear()
        for z in done:
            z.close()


# ------------------------------------------------------------------------------------------------
# The zygote process itself.


def _die_with(parent: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)


def _become_run(req: dict, ready_w: int) -> None:
    """In the forked process: the state a fresh child would have, then the child's main. Never returns."""
    code = 70
    try:
        os.setsid()  # its own session and process group, as start_new_session gives a fresh child
        os.write(ready_w, b"1")
        os.close(ready_w)
        job, work = Path(req["job"]), req["work"]
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(job / "stdout.txt", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        err = os.open(job / "stderr.txt", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        for fd, target in ((null, 0), (out, 1), (err, 2)):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(work)
        os.environ.clear()
        os.environ.update(req["env"])
        if sys.path and sys.path[0] == _START_DIR:
            sys.path[0] = work  # `python -m` puts the working directory first
        np = sys.modules.get("numpy")
        if np is not None:
            np.random.seed()  # a fresh process would not share the zygote's global generator
        from . import child  # deferred: the zygote preloads it; only a forked run calls it

        # as `python -m nki_assist.toolchain.child JOBDIR` would have it
        sys.argv[:] = [child.__file__, str(job)]
        sys.modules["__main__"] = child
        code = child.main(str(job))
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


_START_DIR = os.getcwd()


def _wait_run(pid: int) -> bool:
    """Block until the run ends (True), or until nki-assist closes the request pipe or dies (False:
    the run is killed)."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    try:
        while True:
            ready = select.select([0] if pidfd is None else [0, pidfd], [], [], POLL_S if pidfd is None else None)[0]
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
            if 0 in ready:  # no request comes during a run: the pipe was closed
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
                return False
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _serve(parent: int) -> int:
    import importlib

    _die_with(parent)
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:
            pass  # the run imports it again and reports the error
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    while True:
        line = requests.readline()
        if not line:
            return 0
        req = json.loads(line)
        ready_r, ready_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError as exc:
            os.close(ready_r)
            os.close(ready_w)
            replies.write((json.dumps({"error": str(exc)}) + "\n").encode())
            replies.flush()
            continue
        if pid == 0:
            os.close(ready_r)
            _become_run(req, ready_w)
        os.close(ready_w)
        os.read(ready_r, 1)  # after setsid: the parent may signal the run's process group at once
        os.close(ready_r)
        replies.write((json.dumps({"pid": pid}) + "\n").encode())
        replies.flush()
        if not _wait_run(pid):
            return 1
        _, status = os.waitpid(pid, 0)
        replies.write((json.dumps({"exited": pid, "code": os.waitstatus_to_exitcode(status)}) + "\n").encode())
        replies.flush()


if __name__ == "__main__":
    sys.exit(_serve(int(sys.argv[1])))
