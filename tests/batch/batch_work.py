"""Work functions for the pool tests: a review that hangs, crashes, runs out of memory or raises (picklable:
the pool's processes import this module by name)."""

from __future__ import annotations

import os
import time

from nki_assist.batch.task import TaskResult


def behave(task, key, cfg) -> TaskResult:
    t0 = time.perf_counter()
    if task.id == "hang":
        time.sleep(3600)
    elif task.id == "exit":
        os._exit(3)
    elif task.id == "segv":
        import ctypes  # deferred: only this case touches ctypes

        ctypes.string_at(0)
    elif task.id == "hog":
        try:
            blob = bytearray(8 << 30)  # beyond the task memory limit
            return TaskResult(task.id, key, "ok", time.perf_counter() - t0, {"json": str(len(blob))})
        except MemoryError:
            return TaskResult(task.id, key, "out-of-memory", time.perf_counter() - t0, message="MemoryError")
    return TaskResult(task.id, key, "ok", time.perf_counter() - t0, {"json": "{}"}, message=str(os.getpid()))
