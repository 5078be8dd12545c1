"""In-process tests of the scheduler (newest first, one check per document, supersede a stuck check,
adaptive debounce) and of the editor documents' fast incremental edits."""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.workspace import TextDocument

from lsp_server.documents import EditorDocument
from lsp_server.scheduler import DEBOUNCE_MAX_S, DEBOUNCE_MIN_S, Scheduler

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.check_bench import generate


def test_adaptive_debounce_follows_the_measured_cost():
    s = Scheduler(run=None)
    assert s.debounce("a", None) == DEBOUNCE_MAX_S  # nothing measured yet
    assert s.debounce("a", 300) == 0.3  # a fixed setting wins
    s.measured("a", 0.010)
    assert s.debounce("a", None) == DEBOUNCE_MIN_S  # a cheap re-check: the floor
    s.measured("b", 0.060)
    assert s.debounce("b", None) == pytest.approx(0.070)  # the cost and a 10 ms margin
    s.measured("c", 2.0)
    assert s.debounce("c", None) == DEBOUNCE_MAX_S  # never more than 100 ms


def test_the_first_edit_after_a_pause_waits_for_nothing_and_a_burst_is_debounced():
    async def scenario():
        ran: list[float] = []

        async def run(uri):
            ran.append(asyncio.get_running_loop().time())

        s = Scheduler(run=run)
        s.measured("a", 0.040)  # adaptive debounce: 50 ms
        first = s.edit_delay("a", None)
        s.request("a", first)
        burst = s.edit_delay("a", None)  # 0 ms later: the same burst (and still due)
        await asyncio.wait_for(s.idle(), 2)
        again = s.edit_delay("a", None)  # right after the check: still inside the 50 ms window
        await asyncio.sleep(0.06)
        paused = s.edit_delay("a", None)  # a pause longer than the debounce
        fixed = s.edit_delay("a", 300)  # a fixed setting always waits
        return first, burst, again, paused, fixed, len(ran)

    first, burst, again, paused, fixed, checks = asyncio.run(scenario())
    assert (first, paused, fixed) == (0.0, 0.0, 0.3) and checks == 1
    assert burst == pytest.approx(0.050) and again == pytest.approx(0.050)


def test_newest_edit_is_checked_first_and_each_document_once():
    order: list[str] = []

    async def scenario():
        gate = asyncio.Event()

        async def run(uri):
            order.append(uri)
            if uri == "blocker":
                await gate.wait()

        s = Scheduler(run=run, workers=1)
        s.request("blocker", 0)
        await asyncio.sleep(0)
        for uri in ["old", "middle", "old", "new"]:  # "old" edited twice: still one check
            s.request(uri, 0)
            await asyncio.sleep(0.001)
        gate.set()
        await asyncio.wait_for(s.idle(), 2)

    asyncio.run(scenario())
    assert order == ["blocker", "new", "old", "middle"]


async def until(predicate, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.005)


def test_a_stuck_check_is_superseded_by_a_newer_version(monkeypatch):
    import lsp_server.scheduler as scheduler

    monkeypatch.setattr(scheduler, "SUPERSEDE_AFTER_S", 0.5)
    started: list[float] = []

    async def scenario():
        stuck = asyncio.Event()
        loop = asyncio.get_running_loop()

        async def run(uri):
            started.append(loop.time())
            if len(started) == 1:
                await stuck.wait()  # the first check never ends by itself

        s = Scheduler(run=run, workers=2)
        s.request("doc", 0)
        await until(lambda: len(started) == 1)
        s.request("doc", 0)  # an edit while the first check runs: waits, then supersedes it
        await asyncio.sleep(0.05)
        assert len(started) == 1
        await until(lambda: len(started) == 2)
        assert started[1] - started[0] >= 0.5
        assert len(s.abandoned) == 1
        s.request("other", 0)  # the stuck check still holds one of the two workers
        await until(lambda: len(started) == 3)
        stuck.set()
        await asyncio.wait_for(s.idle(), 2)
        assert not s.abandoned and not s.running

    asyncio.run(scenario())


def test_editor_documents_apply_edits_exactly_like_pygls():
    rng = random.Random(30)
    texts = [generate(60), "a\nb\r\nc\n", "", "x", "αβ😀\nz\n\n", "a\rb\r\r\nc"]
    for _ in range(300):
        text = rng.choice(texts)
        ours, theirs = EditorDocument("file:///a.py", text), TextDocument("file:///a.py", text)
        for _ in range(20):
            n = len(theirs.lines)
            sl = rng.randint(0, n)
            el = rng.randint(sl, n)
            sc = rng.randint(0, 12)
            ec = rng.randint(0, 12) if el > sl else rng.randint(sc, sc + 12)
            change = types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=sl, character=sc),
                                  end=types.Position(line=el, character=ec)),
                text=rng.choice(["", "x", "\n", "ab\ncd", "😀", "\r\n", "F = 3\n    ", "\r", "q\r"]))
            ours.apply_change(change)
            theirs.apply_change(change)
            assert ours.source == theirs.source
            assert tuple(ours.lines) == tuple(theirs.lines)


def test_one_check_at_a_time_unless_the_running_one_is_overdue(monkeypatch):
    import lsp_server.scheduler as scheduler

    monkeypatch.setattr(scheduler, "SUPERSEDE_AFTER_S", 0.5)
    events: list[tuple[str, str]] = []

    async def scenario():
        slow = asyncio.Event()
        gate = asyncio.Event()
        loop = asyncio.get_running_loop()

        async def run(uri):
            events.append(("start", uri))
            await (slow.wait() if uri == "slow" else gate.wait() if uri == "a" else asyncio.sleep(0))
            events.append(("end", uri))

        s = Scheduler(run=run, workers=2)
        s.request("a", 0)
        s.request("x", 0)
        await asyncio.sleep(0.001)
        s.request("y", 0)
        await asyncio.sleep(0.02)
        assert events == [("start", "a")]  # x and y wait for the one check in time
        gate.set()
        await asyncio.wait_for(s.idle(), 2)
        assert events == [("start", "a"), ("end", "a"), ("start", "y"), ("end", "y"), ("start", "x"), ("end", "x")]
        events.clear()
        s.request("slow", 0)
        started = loop.time()
        s.request("d", 0)
        await asyncio.sleep(0.05)
        assert events == [("start", "slow")]  # "slow" is still in time: "d" waits
        await until(lambda: ("end", "d") in events)  # "slow" became overdue: the other worker took "d"
        assert loop.time() - started >= 0.5
        slow.set()
        await asyncio.wait_for(s.idle(), 2)

    asyncio.run(scenario())
