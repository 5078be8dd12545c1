"""The local pool (nki_assist/batch/pool.py): a review that hangs, crashes or exhausts memory costs only its own
row, and the pool keeps going."""

from __future__ import annotations

import time

from batch_work import behave

from nki_assist.batch.manifest import Task
from nki_assist.batch.pool import LocalPool
from nki_assist.batch.task import BatchConfig


def test_hang_crash_and_memory_cost_only_their_rows():
    ids = ["ok1", "hang", "exit", "segv", "hog", "ok2"]
    cfg = BatchConfig(task_timeout_s=4.0, task_memory_mb=1024)
    results = {}
    t0 = time.monotonic()
    LocalPool(2, work=behave).run([(Task(i, spec=""), f"k-{i}") for i in ids], cfg,
                                  lambda r: results.__setitem__(r.id, r))
    elapsed = time.monotonic() - t0
    assert sorted(results) == sorted(ids)
    status = {i: r.status for i, r in results.items()}
    assert status == {"ok1": "ok", "ok2": "ok", "hang": "timeout", "exit": "crashed", "segv": "crashed",
                      "hog": "out-of-memory"}
    assert "exit status 3" in results["exit"].message
    assert "SIGSEGV" in results["segv"].message
    assert "longer than 4 s" in results["hang"].message
    assert all(results[i].key == f"k-{i}" for i in ids)
    # each task had its own process, and the hang was stopped at its timeout, not waited out
    assert results["ok1"].message != results["ok2"].message
    assert elapsed < 30


def test_interrupted_pool_leaves_nothing_running():
    cfg = BatchConfig(task_timeout_s=60.0)
    started = []

    def on_start(task):
        started.append(task.id)
        if len(started) == 2:
            raise KeyboardInterrupt

    pool = LocalPool(2, work=behave)
    try:
        pool.run([(Task("hang", spec=""), "a"), (Task("hang", spec=""), "b")], cfg, lambda r: None, on_start)
    except KeyboardInterrupt:
        pass
    import multiprocessing

    assert [p for p in multiprocessing.active_children() if p.name.startswith("nki-assist-batch-")] == []
