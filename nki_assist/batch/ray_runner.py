"""The Ray runner: the same tasks as the local pool, as Ray tasks (`--ray [ADDRESS]`), for batches past one
machine. Ray schedules; this module only submits, waits and records. Each task's review runs in a Ray worker
and its kernels in the sandbox's child processes there, with the same time and memory limits as locally.

Results travel back to the driver (the review's rendered text), so workers need no shared file system; they
need the submission's files at the same paths (a shared checkout, or Ray's runtime_env working_dir).
"""

from __future__ import annotations

import time
from typing import Callable

from .manifest import Task
from .task import BatchConfig, TaskResult, run_task


def _ray():
    # deferred: Ray is an optional extra (`pip install 'nki-assist[ray]'`)
    from ..infra.extras import require

    return require("ray", "--ray")


class RayRunner:
    """Submits at most as many tasks as the cluster has CPUs (so a task's timeout counts from about its start);
    a task past its timeout is cancelled (its worker killed) and recorded as `timeout`, a dead worker as
    `crashed`, Ray's out-of-memory kill as `out-of-memory`."""

    def __init__(self, address: str | None = None, num_cpus: int = 2, work=run_task):
        self.address = address
        self.num_cpus = num_cpus
        self.work = work
        self.overhead_s: list[float] = []  # per task: Ray's round trip minus the review's own wall time

    def _init(self, ray) -> int:
        if not ray.is_initialized():
            if self.address:
                ray.init(address=self.address, log_to_driver=False)
            else:
                ray.init(num_cpus=self.num_cpus, include_dashboard=False, log_to_driver=False)
        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    def run(self, items: list[tuple[Task, str]], cfg: BatchConfig, on_result: Callable[[TaskResult], None],
            on_start: Callable[[Task], None] | None = None) -> None:
        ray = _ray()
        slots = self._init(ray)
        remote = ray.remote(num_cpus=1, max_retries=0)(self.work)
        queue = list(reversed(items))
        running: dict = {}  # ref -> (task, key, submitted)
        try:
            while queue or running:
                while queue and len(running) < slots:
                    task, key = queue.pop()
                    running[remote.remote(task, key, cfg)] = (task, key, time.monotonic())
                    if on_start:
                        on_start(task)
                soonest = min(v[2] for v in running.values()) + cfg.task_timeout_s
                ready, _ = ray.wait(list(running), num_returns=1, timeout=max(0.0, soonest - time.monotonic()))
                for ref in ready:
                    task, key, submitted = running.pop(ref)
                    on_result(self._get(ray, ref, task, key, submitted))
                now = time.monotonic()
                for ref, (task, key, submitted) in list(running.items()):
                    if now - submitted >= cfg.task_timeout_s:
                        ray.cancel(ref, force=True)
                        del running[ref]
                        on_result(TaskResult(task.id, key, "timeout", now - submitted,
                                             message=f"the review took longer than {cfg.task_timeout_s:g} s"))
        finally:
            for ref in running:
                ray.cancel(ref, force=True)

    def _get(self, ray, ref, task: Task, key: str, submitted: float) -> TaskResult:
        elapsed = time.monotonic() - submitted
        try:
            result = ray.get(ref)
        except ray.exceptions.OutOfMemoryError as exc:
            return TaskResult(task.id, key, "out-of-memory", elapsed, message=f"Ray's memory monitor: {exc}"[:500])
        except ray.exceptions.RayError as exc:  # a worker that died, a task that raised through Ray
            return TaskResult(task.id, key, "crashed", elapsed, message=f"{type(exc).__name__}: {exc}"[:500])
        self.overhead_s.append(max(0.0, elapsed - result.wall_s))
        return result

    def shutdown(self) -> None:
        ray = _ray()
        if ray.is_initialized():
            ray.shutdown()
