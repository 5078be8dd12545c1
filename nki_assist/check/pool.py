"""Checking many files at once: a process pool sized to the usable cores.

Workers receive each file's bytes (read once, by the parent, which also hashed them for the cache) and
return the result's JSON entry, the form the cache stores, so results cross the process boundary as
plain data and the parent need not import the engine. Results come back in the order of the input,
whatever order the workers finish in. A pool is only worth its start-up for enough work: below
`MIN_PARALLEL_BYTES` the caller checks in-process.
"""

from __future__ import annotations

import gc
import os
import signal
from contextlib import contextmanager
from typing import Any, Callable, Iterator

MIN_PARALLEL_BYTES = 96_000  # ~2,500 lines (~60 ms of checking): less is faster without a pool
# indexing for the project model costs ~1/8 of checking per byte: a pool pays for itself later
MIN_PARALLEL_INDEX_BYTES = 600_000
MIN_PARALLEL_FILES = 2


def usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


_BATCH = [False]  # inside `batch_gc` (inherited by forked workers)


@contextmanager
def batch_gc() -> Iterator[None]:
    """The garbage collector's policy for checking many files: the heap that exists before (the engine's
    modules, the project model) is frozen out of its reach and automatic collections are off; instead
    `file_done` collects the youngest generation after every file, which holds all that file's garbage.

    With the default policy every full collection walked the whole long-lived heap again: about a third
    of a cold check's CPU on AWS's nki-library. The cycles a file leaves (pyflakes' scopes, ast nodes
    with parent links) are still freed, file by file. Forked workers inherit the frozen heap (which also
    keeps its pages shared: collections no longer write to them) and the policy. The previous state is
    restored afterwards; left alone when someone else already froze objects."""
    if _BATCH[0] or gc.get_freeze_count():
        yield
        return
    was_enabled = gc.isenabled()
    gc.disable()
    gc.freeze()
    _BATCH[0] = True
    try:
        yield
    finally:
        _BATCH[0] = False
        gc.unfreeze()
        if was_enabled:
            gc.enable()


def file_done() -> None:
    """After one file of a batch: free its garbage (a young-generation collection: milliseconds)."""
    if _BATCH[0]:
        gc.collect(0)


def refreeze() -> None:
    """Inside a batch, after building what every file reads (the project model): move it out of the
    collector's reach too, before workers fork. No collection first: what was built is nearly all alive
    (the modules' syntax trees), and walking it cost ~0.2 s of serial time on nki-library for the few
    cycles it would free."""
    if _BATCH[0]:
        gc.freeze()


def worth_a_pool(sizes: list[int], jobs: int, min_bytes: int | None = None) -> bool:
    """Enough work for a pool of `jobs` (`min_bytes`: MIN_PARALLEL_BYTES, the threshold for checking)."""
    return jobs > 1 and len(sizes) >= MIN_PARALLEL_FILES and \
        sum(sizes) >= (MIN_PARALLEL_BYTES if min_bytes is None else min_bytes)


def run_parallel(work: Callable[[tuple[str, bytes, Any]], Any], items: list[tuple[str, bytes]], options: Any,
                 jobs: int, on_failure: Callable[[str, BaseException], Any],
                 meanwhile: Callable[[], None] | None = None,
                 helper: Callable[[tuple[str, bytes]], Any] | None = None) -> list:
    """`work((path, data, options))` (a module-level function: it is sent to the workers by name) for
    every `(path, data)` item, in input order, run by `jobs` worker processes. `meanwhile()` runs in this
    process while the workers work (the parent is otherwise idle).

    With a `helper` (and fork), this process is one of the `jobs`: the pool has one worker less, and once
    `meanwhile()` is done this process claims the items no worker has started, smallest first (workers start
    with the biggest), and runs `helper(item)` on them: it may keep what only this process can use (the
    project index keeps those modules' syntax trees for the forked checkers). Items are claimed in shared
    memory, by whichever side starts them first (a queued job cannot be taken back: 3.11's pool mishandles
    cancelled jobs when a worker dies)."""
    import multiprocessing
    from concurrent.futures import BrokenExecutor, ProcessPoolExecutor

    # fork: workers start in milliseconds and inherit the parent's modules; spawn where there is no fork
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    order = sorted(range(len(items)), key=lambda i: -len(items[i][1]))  # biggest first: even finish
    out: list = [None] * len(items)
    claims = None
    if helper is not None and method == "fork" and jobs > 1:
        try:
            claims = context.Array("b", len(items))  # inherited by the workers, forked at the first submit
        except OSError:  # no shared memory here: the workers do it all
            claims = None
    helping = claims is not None
    workers = min(jobs - 1 if helping else jobs, len(items))
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_ignore_sigint)
    try:
        futures = {}
        if helping:
            _CLAIMS[0] = claims
        broken: BaseException | None = None
        try:
            for i in order:
                futures[i] = pool.submit(_claimed, (work, i, (items[i][0], items[i][1], options))) if helping \
                    else pool.submit(work, (items[i][0], items[i][1], options))
        except BrokenExecutor as exc:  # a worker died before every item was queued: the rest are not
            broken = exc
        if meanwhile is not None:
            meanwhile()
        taken: set[int] = set()
        if helping:
            for i in reversed(order):
                if not _claim(claims, i):
                    break  # a worker started it: it started every bigger one before
                out[i] = helper(items[i])  # type: ignore[misc]
                taken.add(i)
        for i, future in futures.items():
            try:
                result = future.result()
            except Exception as exc:  # a worker that died (killed, out of memory) costs its file only
                result = None if i in taken else on_failure(items[i][0], exc)
            if i not in taken:  # (a worker's answer for an item taken here is _TAKEN)
                out[i] = result
        for i in order:
            if i not in futures and i not in taken:  # never queued (the pool broke first)
                out[i] = on_failure(items[i][0], broken)  # type: ignore[arg-type]
    except BaseException:  # Ctrl-C: drop the queued files; the CLI reports the interrupt
        pool.shutdown(wait=False, cancel_futures=True)
        _CLAIMS[0] = None
        raise
    pool.shutdown(wait=True)
    _CLAIMS[0] = None
    return out  # type: ignore[return-value]


_CLAIMS: list = [None]  # the shared flags of the run in progress (one byte per item: 1 = started)
_TAKEN = "@taken"  # a worker's answer for an item this process claimed first


def _claim(claims, i: int, by: int = 1) -> bool:
    """Mark item `i` started (by worker `by`, where who matters) unless someone already did."""
    with claims.get_lock():
        if claims[i]:
            return False
        claims[i] = by
        return True


def _claimed(job: tuple) -> Any:
    """A worker's job when this process helps: the item's work, unless this process claimed it first."""
    work, i, item = job
    if not _claim(_CLAIMS[0], i):
        return _TAKEN
    return work(item)


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the parent (one "interrupted" line, not a traceback per worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# --- two phases in one set of workers, each keeping what it learnt in the first for the second ------------


class _Job:
    """What the forked workers of `run_affine` inherit (nothing is pickled to start them)."""

    def __init__(self, first, first_items, setup, second, second_items):
        self.first, self.first_items, self.setup = first, first_items, setup
        self.second, self.second_items = second, second_items
        self.order1: list[int] = []
        self.claims1 = self.claims2 = None
        self.ends: list = []  # this process's ends of the workers' pipes (a worker closes those it inherits)
        self.mask: Any = None  # the signal mask a worker restores once it ignores Ctrl-C


_JOB: list = [None]
_STOPS = {signal.SIGINT, signal.SIGTERM}
_MAX_RESPAWNS = 8  # workers started again after deaths (each death costs at least the item it had started)


def run_affine(first: Callable[[tuple[str, bytes]], Any], first_items: list[tuple[str, bytes]],
               setup: Callable[[list], None], second: Callable[[tuple], Any], second_items: list[tuple],
               jobs: int, first_failed: Callable[[str, BaseException], Any],
               second_failed: Callable[[str, BaseException], Any]) -> list:
    """Two phases of work in one set of `jobs` forked workers, so that what a worker keeps of an item in the
    first phase (the project index keeps each module's syntax tree) serves the second phase of that item.

    Phase one: `first(item)` for every `first_items` entry, biggest first, each item started by whichever worker
    is free (claims in shared memory); its result goes to this process, pickled once, never unpickled here.
    Between the phases every worker receives all the first results (in input order) and runs
    `setup(results, mine)` (the project model is built there): `mine` are the indices of the items that worker
    did itself, whose results are None there (it kept its own). Phase two: `second(item)` for every
    `second_items` entry (`item[0]` is the path, `item[1]` the bytes); a worker starts with the items whose path
    it handled in phase one (and those nobody did), biggest first, then takes the others' not yet started,
    smallest first, so that both finish together. Returns the second results in input order.

    A worker that dies costs the item it was running: `first_failed(path, exc)` runs here instead (its result
    counts as the worker's would) and `second_failed(path, exc)` is that item's result; another worker is
    started while work is left. Ctrl-C stops every worker. Needs fork (the caller checks)."""
    import multiprocessing
    import pickle
    from multiprocessing.connection import wait

    context = multiprocessing.get_context("fork")
    job = _Job(first, first_items, setup, second, second_items)
    n1, n2 = len(first_items), len(second_items)
    job.order1 = sorted(range(n1), key=lambda i: -len(first_items[i][1]))
    job.claims1 = context.Array("i", max(n1, 1), lock=True)  # 0: not started; else the worker that started it
    job.claims2 = context.Array("i", max(n2, 1), lock=True)
    raw1: list[bytes | None] = [None] * n1
    out2: list = [None] * n2
    got2 = [False] * n2
    done1 = done2 = 0
    live: dict[int, tuple[Any, Any]] = {}  # worker id -> (process, this process's end of its pipe)
    started = [0]
    payload: list = [None]  # phase two's message, once phase one is done

    def spawn() -> None:
        wid = started[0] = started[0] + 1
        here, there = context.Pipe()
        process = context.Process(target=_affine_main, args=(wid, there), daemon=True)
        job.ends.append(here)  # (the worker closes it: EOF reaches a worker whose parent died)
        _JOB[0] = job
        # a Ctrl-C in the instant of the fork waits for this process (the worker starts with it ignored)
        job.mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, job.mask)
            _JOB[0] = None
            there.close()
        live[wid] = (process, here)
        if payload[0] is not None:
            _send(here, payload[0] + (_order2(job, wid, raw1_owner),))

    raw1_owner: list[int] = []  # phase one's worker per item (0: none, done here), read when phase two starts

    def start_phase_two() -> None:
        raw1_owner[:] = list(job.claims1[:n1])
        payload[0] = (pickle.dumps(raw1, protocol=pickle.HIGHEST_PROTOCOL),)
        for wid, (_, end) in live.items():
            _send(end, payload[0] + (_order2(job, wid, raw1_owner),))

    def lost(wid: int) -> None:
        """Worker `wid` is gone: the items it had started and not answered fail (here: phase one's is done here)."""
        nonlocal done1, done2
        exc = RuntimeError(f"worker process {live[wid][0].pid} exited with code {live[wid][0].exitcode}")
        for i in range(n1):
            if raw1[i] is None and job.claims1[i] == wid:
                raw1[i] = pickle.dumps(first_failed(first_items[i][0], exc), protocol=pickle.HIGHEST_PROTOCOL)
                done1 += 1
        for j in range(n2):
            if not got2[j] and job.claims2[j] == wid:
                out2[j], got2[j] = second_failed(second_items[j][0], exc), True
                done2 += 1

    if not n2:
        return []
    workers = min(jobs, max(n1, n2))
    try:
        for _ in range(workers):
            spawn()
        if n1 == 0:
            start_phase_two()
        while done2 < n2:
            if not live:
                if started[0] >= workers + _MAX_RESPAWNS:
                    break
                spawn()
            for end in wait([end for _, end in live.values()]):
                wid = next(w for w, (_, e) in live.items() if e is end)
                try:
                    tag, i, value = end.recv()
                except (EOFError, OSError):
                    process = live[wid][0]
                    process.join()
                    lost(wid)
                    end.close()
                    del live[wid]
                    if done1 == n1 and payload[0] is None:
                        start_phase_two()
                    if done2 < n2 and 0 in job.claims2[:n2] and len(live) < workers and \
                            started[0] < workers + _MAX_RESPAWNS:
                        spawn()  # work is left that nobody started: another worker takes the dead one's place
                    continue
                if tag == 1:
                    raw1[i] = value
                    done1 += 1
                elif tag == -1:  # phase one's work raised: handled as a death would be, the worker lives on
                    raw1[i] = pickle.dumps(first_failed(first_items[i][0], RuntimeError(value)),
                                           protocol=pickle.HIGHEST_PROTOCOL)
                    done1 += 1
                elif tag == 2:
                    out2[i], got2[i] = value, True
                    done2 += 1
                elif tag == -3:
                    raise RuntimeError(f"a check worker could not start checking: {value}")
                else:
                    out2[i], got2[i] = second_failed(second_items[i][0], RuntimeError(value)), True
                    done2 += 1
                if done1 == n1 and payload[0] is None:
                    start_phase_two()
        for j in range(n2):  # only when workers kept dying: what no worker answered fails
            if not got2[j]:
                out2[j] = second_failed(second_items[j][0], RuntimeError("no worker process left"))
    except BaseException:  # Ctrl-C: stop the workers; the CLI reports the interrupt
        for process, _ in live.values():
            process.terminate()
        for process, end in live.values():
            process.join()
            end.close()
        raise
    for process, end in live.values():
        process.join()
        end.close()
    return out2


def _send(end, message) -> None:
    try:
        end.send(message)
    except OSError:  # the worker died meanwhile: its end of the pipe reads EOF, and it is replaced then
        pass


def _order2(job: _Job, wid: int, owner1: list[int]) -> list[int]:
    """Phase two's items in the order worker `wid` starts them: its own (whose path it handled in phase one)
    and nobody's, biggest first; then the other workers', smallest first (they start with their biggest)."""
    by_path = {job.first_items[i][0]: owner1[i] for i in range(len(owner1))}
    items = job.second_items
    size = [len(item[1]) for item in items]
    mine = [j for j, item in enumerate(items) if by_path.get(item[0], 0) in (0, wid)]
    theirs = [j for j, item in enumerate(items) if by_path.get(item[0], 0) not in (0, wid)]
    return sorted(mine, key=lambda j: -size[j]) + sorted(theirs, key=lambda j: size[j])


def _affine_main(wid: int, conn) -> None:
    """A worker of `run_affine`: phase one's items as claimed, then (with every result) `setup`, then phase two."""
    import pickle

    job: _Job = _JOB[0]
    _ignore_sigint()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the CLI's handler: a worker stopped is gone, silently
    signal.pthread_sigmask(signal.SIG_SETMASK, job.mask)
    for end in job.ends:  # the other workers' pipes, inherited: EOF must reach this process's parent alone
        end.close()
    mine: set[int] = set()  # phase one's items this worker answered
    for i in job.order1:
        if not _claim(job.claims1, i, wid):
            continue
        try:
            value = pickle.dumps(job.first(job.first_items[i]), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            conn.send((-1, i, f"{type(exc).__name__}: {exc}"))
            continue
        conn.send((1, i, value))
        mine.add(i)
    raw1, order2 = conn.recv()
    try:
        # the others' results (this worker kept its own, with what could not be sent)
        results = [None if i in mine else pickle.loads(blob) for i, blob in enumerate(pickle.loads(raw1))]
        job.setup(results, mine)
    except Exception as exc:  # as if it had failed in the caller's process: the run fails
        conn.send((-3, 0, f"{type(exc).__name__}: {exc}"))
        conn.close()
        return
    for j in order2:
        if not _claim(job.claims2, j, wid):
            continue
        try:
            value = job.second(job.second_items[j])
        except Exception as exc:
            conn.send((-2, j, f"{type(exc).__name__}: {exc}"))
            continue
        conn.send((2, j, value))
    conn.close()
