"""Checking many files at once: a process pool sized to the usable cores.

Workers receive each file's bytes (read once, by the parent, which also hashed them for the cache) and
return the result's JSON entry, the form the cache stores, so results cross the process boundary as
plain data and the parent need not import the engine. Results come back in the order of the input,
whatever order the workers finish in. A pool is only worth its start-up for enough work: below
`MIN_PARALLEL_BYTES` the caller checks in-process.
"""

from __future__ import annotations

import os
from typing import Any, Callable

MIN_PARALLEL_BYTES = 96_000  # ~2,500 lines (~60 ms of checking): less is faster without a pool
MIN_PARALLEL_FILES = 2


def usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def worth_a_pool(sizes: list[int], jobs: int) -> bool:
    return jobs > 1 and len(sizes) >= MIN_PARALLEL_FILES and sum(sizes) >= MIN_PARALLEL_BYTES


def run_parallel(work: Callable[[tuple[str, bytes, Any]], dict], items: list[tuple[str, bytes]], options: Any,
                 jobs: int, on_failure: Callable[[str, BaseException], dict]) -> list[dict]:
    """`work((path, data, options))` (a module-level function: it is sent to the workers by name) for
    every `(path, data)` item, in input order, run by `jobs` worker processes."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork: workers start in milliseconds and inherit the parent's modules; spawn where there is no fork
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    order = sorted(range(len(items)), key=lambda i: -len(items[i][1]))  # biggest first: even finish
    out: list[dict | None] = [None] * len(items)
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(items)), mp_context=multiprocessing.get_context(method),
                               initializer=_ignore_sigint)
    try:
        futures = {i: pool.submit(work, (items[i][0], items[i][1], options)) for i in order}
        for i, future in futures.items():
            try:
                out[i] = future.result()
            except Exception as exc:  # a worker that died (killed, out of memory) costs its file only
                out[i] = on_failure(items[i][0], exc)
    except BaseException:  # Ctrl-C: drop the queued files; the CLI reports the interrupt
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return out  # type: ignore[return-value]


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the parent (one "interrupted" line, not a traceback per worker)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
