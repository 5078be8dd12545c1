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
    from concurrent.futures import ProcessPoolExecutor

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
        if helping:
            _CLAIMS[0] = claims
            futures = {i: pool.submit(_claimed, (work, i, (items[i][0], items[i][1], options))) for i in order}
        else:
            futures = {i: pool.submit(work, (items[i][0], items[i][1], options)) for i in order}
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
    except BaseException:  # Ctrl-C: drop the queued files; the CLI reports the interrupt
        pool.shutdown(wait=False, cancel_futures=True)
        _CLAIMS[0] = None
        raise
    pool.shutdown(wait=True)
    _CLAIMS[0] = None
    return out  # type: ignore[return-value]


_CLAIMS: list = [None]  # the shared flags of the run in progress (one byte per item: 1 = started)
_TAKEN = "@taken"  # a worker's answer for an item this process claimed first


def _claim(claims, i: int) -> bool:
    with claims.get_lock():
        if claims[i]:
            return False
        claims[i] = 1
        return True


def _claimed(job: tuple) -> Any:
    """A worker's job when this process helps: the item's work, unless this process claimed it first."""
    work, i, item = job
    if not _claim(_CLAIMS[0], i):
        return _TAKEN
    return work(item)


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the parent (one "interrupted" line, not a traceback per worker)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
