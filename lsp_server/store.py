"""One diagnostics store: analyses land here and leave either as push or as pull diagnostics.

The mode is fixed at initialize from the client's capabilities (pull when it advertises
`textDocument.diagnostic`), so the same results are never sent both ways. All methods run on the
event loop thread.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable

from lsprotocol import types


@dataclass
class Entry:
    version: int | None
    diagnostics: list[types.Diagnostic]
    analysis: Any = None  # engine.Analysis, kept for hover and code lens
    result_id: str = ""


@dataclass
class DiagnosticsStore:
    publish: Callable[[types.PublishDiagnosticsParams], None]
    refresh: Callable[[], None] | None = None  # workspace/diagnostic/refresh, when the client has it
    pull: bool = False
    entries: dict[str, Entry] = field(default_factory=dict)
    _counter: int = 0
    _waiters: dict[str, list[asyncio.Future]] = field(default_factory=dict)
    _stale_served: set[str] = field(default_factory=set)  # pulled before their analysis finished

    def set(self, uri: str, version: int | None, diagnostics: list[types.Diagnostic], analysis: Any = None) -> None:
        old = self.entries.get(uri)
        if old is not None and old.version == version and old.diagnostics == diagnostics:
            result_id = old.result_id  # same answer: a pulling client gets "unchanged"
        else:
            self._counter += 1
            result_id = str(self._counter)
        entry = Entry(version, diagnostics, analysis, result_id=result_id)
        self.entries[uri] = entry
        for fut in self._waiters.pop(uri, []):  # push mode too: a hover waiting for the first check (issue 44)
            if not fut.done():
                fut.set_result(entry)
        if self.pull:
            if uri in self._stale_served and self.refresh is not None:
                self._stale_served.discard(uri)
                self.refresh()
        else:
            self.publish(types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics))

    def clear(self, uri: str) -> None:
        """The document closed: forget it, and clear what the client shows (push mode)."""
        had = self.entries.pop(uri, None) is not None
        for fut in self._waiters.pop(uri, []):
            fut.cancel()
        if had and not self.pull:
            self.publish(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def get(self, uri: str) -> Entry | None:
        return self.entries.get(uri)

    async def wait_for(self, uri: str, version: int | None, timeout: float, mark_stale: bool = True) -> Entry | None:
        """The entry for `version` of `uri` (any version when None), waiting up to `timeout` s for a
        pending analysis; then the last entry there is (a pull then asks for a refresh when it lands)."""
        entry = self.entries.get(uri)
        if entry is not None and (version is None or entry.version == version):
            return entry
        fut = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(uri, []).append(fut)
        try:
            return await asyncio.wait_for(fut, timeout)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            if mark_stale:
                self._stale_served.add(uri)  # ask the client to pull again once the result lands
            return self.entries.get(uri)

    def report(self, entry: Entry | None, previous_result_id: str | None) -> types.DocumentDiagnosticReport:
        if entry is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[], result_id=None)
        if previous_result_id and previous_result_id == entry.result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=entry.result_id)
        return types.RelatedFullDocumentDiagnosticReport(items=entry.diagnostics, result_id=entry.result_id)
