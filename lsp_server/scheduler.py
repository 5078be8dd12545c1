"""Which document is checked next, and how long an edit waits before its check.

There is no queue of versions: an edit only marks its document due (after the debounce). When a
worker slot frees, the due document edited most recently is checked, and the check reads the text the
document has at that moment, so a version that was superseded while waiting is never checked and a
burst of edits to 50 documents costs at most one check per document. A document being checked is
not started again until that check ends; an edit during it marks it due again. All methods run on
the event loop thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

# Adaptive debounce: wait a little more than what a re-check of this document costs (a fixed margin, not a
# factor: the wait is added to every edit's latency, and keystrokes closer together than the re-check are
# coalesced either way), so a pause in typing is enough and a burst is not checked keystroke by keystroke.
DEBOUNCE_MARGIN_S = 0.01
DEBOUNCE_MIN_S = 0.025
DEBOUNCE_MAX_S = 0.1
EWMA = 0.3  # weight of the newest measurement
SUPERSEDE_AFTER_S = 1.0  # at least; and at least 4x the document's usual check


@dataclass
class Scheduler:
    run: Callable[[str], Awaitable[None]]  # checks the document's current version
    workers: int = 2  # threads: a check that hangs keeps one, the other keeps serving
    concurrent: int = 1  # checks at once while they run in time: more only contend for the GIL
    due: dict[str, tuple[float, float]] = field(default_factory=dict)  # uri -> (due at, edited at)
    running: dict[str, asyncio.Task] = field(default_factory=dict)  # uri -> its newest check
    started: dict[str, float] = field(default_factory=dict)  # uri -> when its newest check started
    abandoned: set[asyncio.Task] = field(default_factory=set)  # superseded checks still holding a worker
    cost: dict[str, float] = field(default_factory=dict)  # uri -> smoothed seconds of one check
    edited: dict[str, float] = field(default_factory=dict)  # uri -> when its last check was requested
    _timer: asyncio.TimerHandle | None = None
    _idle: list[asyncio.Future] = field(default_factory=list)
    on_idle: Callable[[], None] | None = None  # called when the last due document was checked

    def debounce(self, uri: str, fixed_ms: int | None) -> float:
        """Seconds an edit of `uri` waits: the setting when fixed, else adaptive."""
        if fixed_ms is not None:
            return fixed_ms / 1000
        cost = self.cost.get(uri)
        if cost is None:
            return DEBOUNCE_MAX_S
        return min(DEBOUNCE_MAX_S, max(DEBOUNCE_MIN_S, cost + DEBOUNCE_MARGIN_S))

    def edit_delay(self, uri: str, fixed_ms: int | None) -> float:
        """Seconds this edit of `uri` waits. Adaptive: none for the first edit after a pause (nothing of the
        document running or due, its last edit older than its debounce), so a typing pause is answered after one
        re-check, not a debounce and a re-check; the debounce for the edits of a burst, which coalesce."""
        wait = self.debounce(uri, fixed_ms)
        if fixed_ms is not None or self.busy(uri):
            return wait
        last = self.edited.get(uri)
        return 0.0 if last is None or asyncio.get_running_loop().time() - last >= wait else wait

    def measured(self, uri: str, seconds: float) -> None:
        old = self.cost.get(uri)
        self.cost[uri] = seconds if old is None else (1 - EWMA) * old + EWMA * seconds

    def request(self, uri: str, delay: float) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        self.due[uri] = (now + max(0.0, delay), now)
        self.edited[uri] = now
        self._dispatch()

    def forget(self, uri: str) -> None:
        """The document closed: nothing more is checked for it (a running check ends unpublished)."""
        self.due.pop(uri, None)
        self.cost.pop(uri, None)
        self.edited.pop(uri, None)

    def busy(self, uri: str) -> bool:
        """A check of `uri` is running or due."""
        return uri in self.running or uri in self.due

    def _overdue_at(self, uri: str) -> float:
        """When the running check of `uri` has run far longer than this document's checks cost."""
        return self.started[uri] + max(SUPERSEDE_AFTER_S, 4 * self.cost.get(uri, 0.0))

    def _startable(self, uri: str) -> float:
        """When a check of due `uri` may start, given a check of it that may be running."""
        if uri not in self.running:
            return self.due[uri][0]
        return max(self.due[uri][0], self._overdue_at(uri))

    def _free_at(self, now: float) -> float | None:
        """When a worker may take a new check: now, later (when the one check in time becomes overdue),
        or None (every worker holds a check; the next to end dispatches)."""
        if len(self.running) + len(self.abandoned) >= self.workers:
            return None
        in_time = [self._overdue_at(uri) for uri in self.running if self._overdue_at(uri) > now]
        return now if len(in_time) < self.concurrent else min(in_time)

    def _dispatch(self) -> None:
        loop = asyncio.get_running_loop()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        now = loop.time()
        while self._free_at(now) == now:
            ready = [(edited, uri) for uri, (_, edited) in self.due.items() if self._startable(uri) <= now]
            if not ready:
                break
            _, uri = max(ready)  # newest edit first
            del self.due[uri]
            old = self.running.get(uri)
            if old is not None:
                self.abandoned.add(old)
            self.running[uri] = task = loop.create_task(self._run(uri))
            self.started[uri] = now
            task.add_done_callback(self.abandoned.discard)
        free = self._free_at(now)
        if self.due and free is not None:
            self._timer = loop.call_at(max(free, min(self._startable(uri) for uri in self.due)), self._dispatch)
        if not self.due and not self.running and not self.abandoned:
            for fut in self._idle:
                if not fut.done():
                    fut.set_result(None)
            self._idle.clear()
            if self.on_idle is not None:
                self.on_idle()

    async def _run(self, uri: str) -> None:
        try:
            await self.run(uri)
        except Exception:  # one failed check must not stop the others
            logging.getLogger("nki_assist.lsp").exception("check of %s failed", uri)
        finally:
            self.abandoned.discard(asyncio.current_task())
            if self.running.get(uri) is asyncio.current_task():
                del self.running[uri]
                self.started.pop(uri, None)
            self._dispatch()

    async def idle(self) -> None:
        """Until nothing is due or running (tests, benchmarks)."""
        if not self.due and not self.running:
            return
        fut = asyncio.get_running_loop().create_future()
        self._idle.append(fut)
        await fut

    def cancel_all(self) -> None:
        self.due.clear()
        if self._timer is not None:
            self._timer.cancel()
        for task in self.running.values():
            task.cancel()
