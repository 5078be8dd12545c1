"""Finding and killing the processes a sandboxed run left behind (Linux /proc; no-ops elsewhere).

A run's processes are recognised three ways, so a descendant that left the process group (setsid)
is still found: its session, its process group, or the run's token in its environment (inherited
by every descendant unless it replaces its whole environment).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

PROC = Path("/proc")
SWEEP_ROUNDS = 20  # a forking process may add children between two scans


def now_ticks() -> int:
    """The current time in the units of a process's start time (clock ticks since boot)."""
    try:
        return int(float(PROC.joinpath("uptime").read_text().split()[0]) * os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0


def _stat(pid: int) -> tuple[int, int, int, int] | None:
    """(ppid, pgid, sid, start ticks) of a live process; None when it is gone, a zombie or unreadable."""
    try:
        raw = (PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2:].split()  # after "pid (comm) "; comm may contain spaces
    if not fields or fields[0] in (b"Z", b"X"):  # dead: nothing left to kill, only to reap
        return None
    try:
        return int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19])
    except (IndexError, ValueError):
        return None


def _pids() -> list[int]:
    try:
        return [int(p) for p in os.listdir(PROC) if p.isdigit()]
    except OSError:
        return []


def _has_token(pid: int, token: bytes) -> bool:
    try:
        return token in (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return False


def members(*, sid: int | None = None, token: str | None = None, exclude: set[int] | None = None,
            since: int = 0) -> list[int]:
    """Live processes in session `sid` (or process group `sid`), or carrying `token` in their
    environment; only those started at or after `since` (ticks) can belong to a run."""
    me = {os.getpid(), *(exclude or ())}
    needle = token.encode() if token else None
    found = []
    for pid in _pids():
        if pid in me:
            continue
        st = _stat(pid)
        if st is None or st[3] < since:
            continue
        if sid is not None and sid in (st[1], st[2]):
            found.append(pid)
        elif needle is not None and _has_token(pid, needle):
            found.append(pid)
    return found


def children_of(pid: int) -> list[int]:
    """Live children of `pid`: from /proc/PID/task/*/children when the kernel has it (no scan)."""
    try:
        found: list[int] = []
        for tid in os.listdir(PROC / str(pid) / "task"):
            found += [int(c) for c in (PROC / str(pid) / "task" / tid / "children").read_text().split()]
        return [c for c in found if _stat(c) is not None]
    except (OSError, ValueError):
        return [p for p in _pids() if (st := _stat(p)) is not None and st[0] == pid]


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children first-level first)."""
    out, todo = [], [pid]
    while todo:
        kids = children_of(todo.pop())
        out += kids
        todo += kids
    return out


def kill_all(pids: list[int]) -> int:
    """SIGKILL each pid; the number that were still there."""
    n = 0
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            n += 1
        except (ProcessLookupError, PermissionError):
            pass
    return n


def sweep(*, sid: int | None = None, token: str | None = None, exclude: set[int] | None = None,
          since: int = 0) -> int:
    """Kill every process of a run until none is left (bounded rounds); the number killed."""
    if not PROC.is_dir():
        return 0
    total = 0
    for _ in range(SWEEP_ROUNDS):
        found = members(sid=sid, token=token, exclude=exclude, since=since)
        if not found:
            break
        total += kill_all(found)
        time.sleep(0.01)
    return total
