"""The batch loop: skip what is done and unchanged, run the rest on a runner, record each result as it ends."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Protocol

from .keys import task_key
from .manifest import Task
from .progress import BatchProgress
from .rows import failed_row, row_from_review
from .store import BatchStore
from .task import BatchConfig, TaskResult


class Runner(Protocol):
    def run(self, items: list[tuple[Task, str]], cfg: BatchConfig, on_result, on_start=None) -> None: ...


@dataclass
class BatchSummary:
    total: int
    skipped: int
    reviewed: int = 0
    failed: int = 0
    seconds: float = 0.0
    rows: list[dict] = field(default_factory=list)


def record(store: BatchStore, task: Task, result: TaskResult) -> dict:
    """The result's review files and its row, written to the batch folder."""
    if result.status == "ok" and "json" in result.files:
        review = json.loads(result.files["json"])
        path = store.write_review(task.id, result.files)
        row = row_from_review(task.id, review, wall_s=result.wall_s, review_path=path, spec=task.spec, key=result.key)
    else:
        row = failed_row(task.id, result.status, result.message or result.status, wall_s=result.wall_s,
                         spec=task.spec, key=result.key)
    if task.submission:
        row["submission"] = task.submission
    store.append(row)
    return row


def run_batch(tasks: list[Task], cfg: BatchConfig, runner: Runner, store: BatchStore, *, force: bool = False,
              quiet: bool = False, progress_stream=None) -> BatchSummary:
    t0 = time.perf_counter()
    opts = cfg.key_options()
    keyed = [(t, task_key(t, opts)) for t in tasks]
    todo = [(t, k) for t, k in keyed if force or not store.done(t.id, k)]
    summary = BatchSummary(total=len(tasks), skipped=len(tasks) - len(todo))
    progress = BatchProgress(len(tasks), summary.skipped, quiet=quiet, stream=progress_stream)
    by_id = {t.id: t for t in tasks}

    def on_result(result: TaskResult) -> None:
        row = record(store, by_id[result.id], result)
        summary.reviewed += 1
        summary.failed += row["status"] != "ok"
        progress.result(result.id, row["status"], row.get("verdict"), result.wall_s)

    try:
        if todo:
            runner.run(todo, cfg, on_result)
    finally:
        progress.close()
        summary.rows = store.finish([t.id for t in tasks])
        summary.seconds = time.perf_counter() - t0
    return summary
