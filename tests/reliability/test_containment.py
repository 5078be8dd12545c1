"""Issue 31 item 2: nothing a kernel starts outlives its run, even when it works at escaping.

Two tricks from the issue, each in the default and the strong sandbox:
- the worker cancels its watchdog, drops its parent-death signal, calls setsid and execs itself with
  an empty environment (no run token), then sleeps past the timeout: nki-assist kills the supervisor
  at the deadline and (before) the worker, re-parented to init, slept on;
- a grandchild leaves the session, drops the token the same way and re-forks every few milliseconds
  (a new pid each time, its parent exiting at once): before, it outran the supervisor's and the
  parent's kill-by-pid sweeps.
Every escapee stops by itself after 40 s so a failing test leaves nothing behind for long.
"""

from __future__ import annotations

import time
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from reliability_helpers import alive, make_port

from nki_assist.toolchain import isolation
from nki_assist.toolchain.builtin import BuiltinBackend

pytestmark = pytest.mark.usefixtures("sandbox_start")  # fresh process and warm zygote alike

MODES = ["basic", pytest.param("strong", marks=pytest.mark.skipif(
    isolation.strong_tool()[0] is None, reason=f"strong sandbox unavailable: {isolation.strong_tool()[1]}"))]

# Runs after exec with an empty environment: heartbeats into BEAT and logs each pid into PIDS.
SLEEPER = """import os, time
t0 = time.monotonic()
while time.monotonic() - t0 < 40:
    open({pids!r}, "a").write(f"{{os.getpid()}}\\n")
    open({beat!r}, "a").write("x")
    time.sleep(0.05)
"""

REFORKER = """import os, time
t0 = time.monotonic()
n = 0
while time.monotonic() - t0 < 40:
    if os.fork():
        os._exit(0)  # the parent leaves at once: the survivor is always a new pid
    n += 1
    if n % 20 == 0:
        open({pids!r}, "a").write(f"{{os.getpid()}}\\n")
        open({beat!r}, "a").write("x")
    time.sleep(0.002)
"""

OUTLIVE_SUPERVISOR = """import ctypes, faulthandler, os, sys
faulthandler.cancel_dump_traceback_later()
ctypes.CDLL(None).prctl(1, 0, 0, 0, 0)  # PR_SET_PDEATHSIG: none
os.setsid()
os.execve(sys.executable, [sys.executable, "-c", {code!r}], {{}})"""

REFORK_GRANDCHILD = """import os, sys, time
if os.fork() == 0:
    os.setsid()
    os.execve(sys.executable, [sys.executable, "-c", {code!r}], {{}})
time.sleep(0.5)"""


def _x() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((128, 512)).astype(ml_dtypes.bfloat16)


def _still_beating(beat: Path, pids: Path, mode: str, wait_s: float = 3.0) -> tuple[bool, list[int]]:
    """(heartbeat still growing, logged pids still alive) after the run, allowing `wait_s` for the
    kill. In strong mode the logged pids are the namespace's, meaningless here: the heartbeat decides."""

    def left() -> list[int]:
        if mode != "basic" or not pids.exists():
            return []
        return sorted({p for p in map(int, pids.read_text().split()) if alive(p)})

    deadline = time.monotonic() + wait_s
    while left() and time.monotonic() < deadline:
        time.sleep(0.05)
    size = beat.stat().st_size if beat.exists() else 0
    time.sleep(0.6)
    return (beat.stat().st_size if beat.exists() else 0) != size, left()


def _run(tmp_path: Path, wrapper: str, inner: str, mode: str, monkeypatch, timeout_s: float):
    monkeypatch.setattr(isolation, "_chosen", mode)
    beat, pids = tmp_path / "beat", tmp_path / "pids"
    code = inner.format(pids=str(pids), beat=str(beat))
    port = make_port(tmp_path / "port", wrapper.format(code=code))
    result = BuiltinBackend().run(str(port.parent / "row_sum_nki.py"), "row_sum", [_x()], timeout_s=timeout_s)
    return result, beat, pids


@pytest.mark.parametrize("mode", MODES)
def test_a_worker_cannot_outlive_its_killed_supervisor(tmp_path, mode, monkeypatch):
    result, beat, pids = _run(tmp_path, OUTLIVE_SUPERVISOR, SLEEPER, mode, monkeypatch, timeout_s=2)
    assert pids.exists(), "the escapee never started"
    assert result.status in ("timeout", "kernel-error"), (result.status, result.error)
    grew, left = _still_beating(beat, pids, mode)
    assert not left and not grew, f"still running: {left}"  # before: slept on for 40 s


@pytest.mark.parametrize("mode", MODES)
def test_a_reforking_grandchild_outside_the_session_is_stopped(tmp_path, mode, monkeypatch):
    result, beat, pids = _run(tmp_path, REFORK_GRANDCHILD, REFORKER, mode, monkeypatch, timeout_s=20)
    assert result.status == "ok", result.error  # the kernel itself returns normally
    assert pids.exists(), "the re-forker never started"
    grew, left = _still_beating(beat, pids, mode)
    assert not left and not grew, f"still running: {left}"  # before: forked on for 40 s
