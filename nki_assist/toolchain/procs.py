"""Finding and killing the processes a sandboxed run left behind (Linux /proc; no-ops elsewhere).

A run's processes are recognised four ways, so a descendant that left the process group (setsid)
and replaced its environment is still found: its session, its process group, the run's token in its
environment, or being an orphan re-parented to nki-assist itself, which is made a child subreaper
(`adopt_orphans`) so that no descendant escapes to init. The kill stops every member and every
process group a member (or the zombie of one) belongs to (SIGSTOP: a stopped process cannot fork;
a signal to a group reaches a member forked at the same moment too), rescans until nothing new
appears, then SIGKILLs them. A process that re-forks every few milliseconds is never seen alive by
a /proc scan, but the zombies it leaves behind name its process group.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path

PROC = Path("/proc")
SWEEP_ROUNDS = 20  # freeze-then-kill passes (a pass may miss a process forked during its kill)
FREEZE_ROUNDS = 200  # scans of one freeze-then-kill pass (each stops what it finds)
PR_SET_CHILD_SUBREAPER = 36

_OWN: set[int] = set()  # children nki-assist started on purpose (sandbox runs, nvcc): never strays
_OWN_LOCK = threading.Lock()
_adopting = False


def adopt_orphans() -> bool:
    """Make this process a child subreaper (Linux): a run's orphans re-parent to it, not to init,
    so a process that left the run's session and environment is still found. True when in effect."""
    global _adopting
    if not _adopting:
        try:
            import ctypes

            _adopting = ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        except (OSError, AttributeError):
            _adopting = False
    return _adopting


@contextmanager
def owned(pid: int):
    """While the block runs, `pid` (a child nki-assist started) is not taken for a stray."""
    with _OWN_LOCK:
        _OWN.add(pid)
    try:
        yield
    finally:
        with _OWN_LOCK:
            _OWN.discard(pid)


def now_ticks() -> int:
    """The current time in the units of a process's start time (clock ticks since boot)."""
    try:
        return int(float(PROC.joinpath("uptime").read_text().split()[0]) * os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0


Entry = tuple[bool, int, int, int, int]  # (zombie, ppid, pgid, sid, start ticks)


def _entry(pid: int) -> Entry | None:
    try:
        raw = (PROC / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2:].split()  # after "pid (comm) "; comm may contain spaces
    try:
        return fields[0] in (b"Z", b"X"), int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19])
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


def _me() -> tuple[int, int, int]:
    me = os.getpid()
    try:
        return me, os.getpgid(0), os.getsid(0)
    except OSError:
        return me, -1, -1


def run_members(*, root: int | None, token: str | None, since: int,
                children: bool = False) -> tuple[set[int], set[int]]:
    """One scan for the processes of a run: (live pids, process groups). Members: `root`, its
    session and process group (`root` leads both), the token carriers, and strays re-parented to
    us (children of nki-assist outside its own session that it did not start on purpose; every
    child with `children`), with everything below them. Zombies count for the groups they name."""
    me, my_pgid, my_sid = _me()
    with _OWN_LOCK:
        own = set(_OWN) - {root}
    table = {pid: e for pid in _pids() if (e := _entry(pid)) is not None}
    needle = token.encode() if token else None
    found: set[int] = set()
    for pid, (zombie, ppid, pgid, sid, start) in table.items():
        if pid == me or pid in own or start < since:
            continue
        if (pid == root or (root is not None and root in (pgid, sid)) or (ppid == me and (children or sid != my_sid))
                or (not zombie and needle is not None and _has_token(pid, needle))):
            found.add(pid)
    kids: dict[int, list[int]] = {}
    for pid, e in table.items():
        kids.setdefault(e[1], []).append(pid)
    todo = list(found)
    while todo:
        for kid in kids.get(todo.pop(), ()):
            if kid not in found and kid != me and kid not in own:
                found.add(kid)
                todo.append(kid)
    live = {pid for pid in found if not table[pid][0]}
    groups = {table[pid][2] for pid in found} - {my_pgid, 0, 1}
    return live, groups


def _signal(pids: set[int], groups: set[int], sig: int) -> int:
    n = 0
    for g in groups:
        try:
            os.killpg(g, sig)
        except (ProcessLookupError, PermissionError):
            pass
    for pid in pids:
        try:
            os.kill(pid, sig)
            n += 1
        except (ProcessLookupError, PermissionError):
            pass
    return n


def _reap_strays(children: bool) -> None:
    """Collect the exit status of strays re-parented to us that have ended (killed or not), so a
    long-lived nki-assist (the language server) gathers no zombies. Never a child it started on
    purpose, nor one in its own session (a subprocess whose Popen will wait for it)."""
    me, _, my_sid = _me()
    with _OWN_LOCK:
        own = set(_OWN)
    for pid in _pids():
        e = _entry(pid)
        if e and e[0] and e[1] == me and pid not in own and (children or e[3] != my_sid):
            try:
                os.waitpid(pid, os.WNOHANG)
            except (ChildProcessError, OSError):
                pass


def freeze_and_kill(*, root: int | None, token: str | None, since: int, children: bool = False) -> int:
    """Kill every process of a run so that none can fork its way out: stop each one found and its
    process group, rescan until a scan finds nothing new, SIGKILL them all; repeat until a scan
    finds nobody. Returns how many live processes were killed."""
    if not PROC.is_dir():
        return 0
    killed: set[int] = set()
    for _ in range(SWEEP_ROUNDS):
        stopped: set[int] = set()
        groups: set[int] = set()
        for _ in range(FREEZE_ROUNDS):
            live, grp = run_members(root=root, token=token, since=since, children=children)
            fresh, new_groups = live - stopped, grp - groups
            if not fresh and not new_groups:
                break
            _signal(fresh, new_groups, signal.SIGSTOP)
            stopped |= fresh
            groups |= new_groups
        if not stopped and not groups:
            break
        _signal(stopped, groups, signal.SIGKILL)
        killed |= stopped
        time.sleep(0.005)  # let the kernel deliver SIGKILL before the next scan
        _reap_strays(children)
    _reap_strays(children)
    return len(killed)


def own(pid: int) -> None:
    """Mark a long-lived child nki-assist started (the warm sandbox's zygote) as never a stray."""
    with _OWN_LOCK:
        _OWN.add(pid)


def disown(pid: int) -> None:
    with _OWN_LOCK:
        _OWN.discard(pid)
