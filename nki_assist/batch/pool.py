"""The local runner: up to N reviews at once, each in its own process forked from a warm fork server.

A process per task (not a long-lived worker) so that a review that hangs, crashes or exhausts memory costs only
its own row: the pool kills it at the task timeout (SIGTERM, so the sandbox kills the kernel's processes, then
SIGKILL) and records the status; the next task gets a fresh process. The fork server imports the review engine
once, so a task starts in milliseconds.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from multiprocessing.connection import wait
from typing import Callable

from .manifest import Task
from .task import BatchConfig, TaskResult, run_task

PR_SET_PDEATHSIG = 1
KILL_GRACE_S = 5.0
PRELOAD = ["nki_assist.batch.task", "nki_assist.review.pipeline", "nki_assist.feedback", "nki_assist.report.markdown"]

Work = Callable[[Task, str, BatchConfig], TaskResult]


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _on_term(signum, frame) -> None:
    raise KeyboardInterrupt  # unwinds the review: the sandbox kills the kernel's process tree on the way out


def _child(work: Work, task: Task, key: str, cfg: BatchConfig, conn) -> None:
    try:
        # deferred: Linux only; elsewhere the fork server's exit is the only tie to the batch
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    signal.signal(signal.SIGTERM, _on_term)
    if cfg.task_memory_mb:
        # deferred: POSIX only
        import resource

        limit = cfg.task_memory_mb << 20
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    try:
        result = work(task, key, cfg)
    except KeyboardInterrupt:
        return
    try:
        conn.send(result)
    except (BrokenPipeError, OSError):
        pass  # the batch is gone
    finally:
        conn.close()


class LocalPool:
    """Runs tasks `jobs` at a time; `on_start(task)` and `on_result(result)` are called in this process."""

    def __init__(self, jobs: int, work: Work = run_task):
        self.jobs = max(1, jobs)
        self.work = work
        self.ctx = mp.get_context("forkserver")
        if work is run_task:
            self.ctx.set_forkserver_preload(PRELOAD)

    def run(self, items: list[tuple[Task, str]], cfg: BatchConfig, on_result: Callable[[TaskResult], None],
            on_start: Callable[[Task], None] | None = None) -> None:
        queue = list(reversed(items))
        running: dict[object, tuple] = {}  # reader -> (process, task, key, started, deadline)
        try:
            while queue or running:
                while queue and len(running) < self.jobs:
                    task, key = queue.pop()
                    reader, writer = self.ctx.Pipe(duplex=False)
                    proc = self.ctx.Process(target=_child, args=(self.work, task, key, cfg, writer),
                                            name=f"nki-assist-batch-{task.id}")
                    proc.start()
                    writer.close()
                    now = time.monotonic()
                    running[reader] = (proc, task, key, now, now + cfg.task_timeout_s)
                    if on_start:
                        on_start(task)
                soonest = min(v[4] for v in running.values())
                ready = wait(list(running) + [v[0].sentinel for v in running.values()],
                             timeout=max(0.0, soonest - time.monotonic()))
                for reader in list(running):
                    proc, task, key, started, deadline = running[reader]
                    result = None
                    if reader in ready or proc.sentinel in ready:
                        result = self._collect(reader, proc, task, key, started)
                    elif time.monotonic() >= deadline:
                        self._stop(proc)
                        result = TaskResult(task.id, key, "timeout", time.monotonic() - started,
                                            message=f"the review took longer than {cfg.task_timeout_s:g} s")
                    if result is not None:
                        reader.close()
                        del running[reader]
                        on_result(result)
        finally:
            for reader, (proc, *_) in running.items():  # interrupted: nothing left running
                self._stop(proc)
                reader.close()

    def _collect(self, reader, proc, task: Task, key: str, started: float) -> TaskResult:
        try:
            result = reader.recv()
        except (EOFError, OSError):
            result = None
        proc.join(KILL_GRACE_S)
        if result is not None:
            return result
        if proc.is_alive():
            self._stop(proc)
        code = proc.exitcode
        why = f"killed by {_signal_name(code)}" if code is not None and code < 0 else f"exit status {code}"
        if code == -signal.SIGKILL:
            why += " (perhaps the system's out-of-memory killer)"  # cannot tell from here: say so
        return TaskResult(task.id, key, "crashed", time.monotonic() - started,
                          message=f"the review process died: {why}")

    @staticmethod
    def _stop(proc) -> None:
        if proc.is_alive():
            proc.terminate()
            proc.join(KILL_GRACE_S)
        if proc.is_alive():
            proc.kill()
            proc.join(KILL_GRACE_S)


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1
