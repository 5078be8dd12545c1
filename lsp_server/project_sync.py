"""Keeps the open documents' diagnostics in step with the workspace's project model (project_model.py).

The model is built in its own worker thread after `initialized` (checks never wait for it: until it is ready a
document is checked alone). When it is ready, and when the project changed (an open document's check re-indexed
it, a file was saved, closed, created or deleted), `recheck_changed` compares each open document's context
digest in the current project with the one its last check read, and re-checks only those that differ.
Everything here runs on the event loop; digests are computed in the model's worker.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lsprotocol import types

from .project_model import WorkspaceModel

log = logging.getLogger("nki_assist.lsp")
RECHECK_DELAY_S = 0.3  # after the last check or file event of a burst
WATCH_ID = "nki-assist-watched-py"


class ProjectSync:
    def __init__(self, ls: Any) -> None:
        self.ls = ls
        self.model = WorkspaceModel()
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nki-assist-model")
        self._timer: asyncio.TimerHandle | None = None
        self._refresh = False  # the next pass re-reads the disk first
        self.built: asyncio.Event | None = None  # set when the build ended (made on the loop, in start)

    async def start(self) -> None:
        """Build the model in the background; when it is ready, re-check the documents whose context changed."""
        self.built = asyncio.Event()
        roots = self.ls.roots()
        if not roots:
            self.built.set()
            return
        loop = asyncio.get_running_loop()
        try:
            seconds = await loop.run_in_executor(self.executor, self.model.build, roots)
        except RuntimeError:  # the pool is shut down: the server is exiting
            return
        problem = self.model.problem
        message = problem or (f"project model ready: {len(self.model.order)} modules indexed in {seconds:.2f} s")
        self.ls.window_log_message(types.LogMessageParams(type=types.MessageType.Log, message=f"nki-assist: {message}"))
        self.built.set()
        if self.model.ready.is_set():
            await self._pass()

    async def register_watch(self) -> None:
        caps = self.ls.client_capabilities.workspace
        watched = caps.did_change_watched_files if caps else None
        if not (watched and watched.dynamic_registration):
            return
        try:
            await self.ls.client_register_capability_async(types.RegistrationParams(registrations=[
                types.Registration(id=WATCH_ID, method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                   register_options=types.DidChangeWatchedFilesRegistrationOptions(
                                       watchers=[types.FileSystemWatcher(glob_pattern="**/*.py")]))]))
        except Exception as exc:  # noqa: BLE001
            log.warning("cannot register for watched-file changes: %s", exc)

    # ---- triggers ---------------------------------------------------------------------------------
    def checked(self, analysis) -> None:
        """A check in the project ran: its module may have changed others' contexts."""
        if getattr(analysis, "in_project", False):
            self._later(refresh=False)

    def files_changed(self) -> None:
        """Saved, closed, created or deleted files: re-read the disk, then compare."""
        self._later(refresh=True)

    def closed(self, path: str | None) -> None:
        if self.model.close(path):
            self._later(refresh=True)

    def _later(self, refresh: bool) -> None:
        self._refresh = self._refresh or refresh
        if not self.model.ready.is_set():
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(
            RECHECK_DELAY_S, lambda: asyncio.ensure_future(self._pass()))

    # ---- the pass -----------------------------------------------------------------------------------
    async def _pass(self) -> None:
        self._timer = None
        if self.ls.scheduler.due or self.ls.scheduler.running:
            self._later(refresh=False)  # edits are being checked: compare once they settle
            return
        refresh, self._refresh = self._refresh, False
        docs = []
        for uri in list(self.ls.workspace.text_documents):
            doc, entry = self.ls.document(uri), self.ls.store.get(uri)
            if doc is None or entry is None or entry.analysis is None:
                continue
            path = self.ls.path_of(doc)
            if path and entry.analysis.language == "nki":
                docs.append((uri, path, entry.analysis))
        loop = asyncio.get_running_loop()
        try:
            stale = await loop.run_in_executor(self.executor, _stale, self.model, docs, refresh)
        except RuntimeError:
            return
        for uri in stale:
            if self.ls.document(uri) is not None and not self.ls.scheduler.busy(uri):
                self.ls.schedule(uri, 0)

    def shutdown(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self.executor.shutdown(wait=False, cancel_futures=True)


def _stale(model: WorkspaceModel, docs: list[tuple[str, str, Any]], refresh: bool) -> list[str]:
    """The uris whose context in the current project differs from the one their last check read."""
    if refresh:
        model.refresh()
    # deferred: the server answers `initialize` before the engine is imported (start-up time)
    from nki_assist.project import context_digest

    out = []
    for uri, path, analysis in docs:
        now = model.digest(path)
        if now is None:
            continue
        used = getattr(analysis, "context_digest", None)
        if used is None:
            ctx = getattr(analysis.nki_file, "project", None) if analysis.nki_file is not None else None
            if ctx is None:
                continue  # nothing parsed (an error, a skipped file): its next edit is checked in the project
            used = analysis.context_digest = context_digest(ctx)
        if used != now:
            out.append(uri)
    return out
