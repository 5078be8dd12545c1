"""Batch progress on stderr: a rich bar (done / failed / ETA) on a terminal, one line per finished task
otherwise (logs, CI)."""

from __future__ import annotations

import sys
import time

from ..infra.redact import neutralise


class BatchProgress:
    def __init__(self, total: int, skipped: int, quiet: bool = False, stream=None):
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.total, self.done, self.failed = total, skipped, 0
        self.t0 = time.monotonic()
        self.todo = total - skipped
        self.tty = not quiet and self.stream.isatty()
        self.bar = None
        if self.tty:
            from rich.console import Console  # deferred: rich only for a terminal
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("review"), BarColumn(), MofNCompleteColumn(),
                                TextColumn("failed {task.fields[failed]}"), TimeRemainingColumn(),
                                console=Console(file=self.stream), transient=False)
            self.bar.start()
            self.task = self.bar.add_task("batch", total=total, completed=skipped, failed=0)
        elif not quiet and skipped:
            print(f"{skipped} of {total} already done (unchanged); reviewing {self.todo}", file=self.stream)

    def eta(self) -> float | None:
        finished = self.done - (self.total - self.todo)
        if finished <= 0:
            return None
        return (time.monotonic() - self.t0) / finished * (self.total - self.done)

    def result(self, ident: str, status: str, verdict: str | None, wall_s: float) -> None:
        self.done += 1
        self.failed += status != "ok"
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done, failed=self.failed)
            return
        eta = self.eta()
        what = verdict if status == "ok" else status
        print(neutralise(f"[{self.done}/{self.total}] {ident}: {what} ({wall_s:.1f} s)"
                         + (f", failed {self.failed}" if self.failed else "")
                         + (f", ETA {eta:.0f} s" if eta is not None else "")), file=self.stream)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
