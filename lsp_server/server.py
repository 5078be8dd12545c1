"""The nki-assist language server (pygls 2): wiring between LSP and the modules of this package.

Checks run debounced in a thread pool; a result is published only if the document still has the
version that was analysed. One store publishes diagnostics by push, or serves them by pull when the
client supports `textDocument/diagnostic` (never both).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls import uris
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from . import __version__, engine
from .actions import KINDS as ACTION_KINDS
from .actions import code_actions, wants_kind
from .diagnostics import note_diagnostic, to_diagnostic
from .documents import use_editor_documents
from .hover import diagnostic_text, item_hover
from .lens import REVIEW_COMMAND, code_lenses
from .memory import freeze_survivors, release_closed, release_memory, trim
from .navigation import Place, name_places
from .navigation_handlers import _kernel_view, definition, references
from .positions import from_lsp_position
from .project_sync import ProjectSync
from .protocol import AnsweringProtocol
from .proven_fix import proven_fix_actions
from .review_handlers import review_port_command
from .run_command import RUN_COMMAND, run_command
from .scheduler import Scheduler
from .settings import SECTION, Settings, parse_settings
from .store import DiagnosticsStore
from .symbols import document_symbols, inlay_hints
from .transport import serve_stdio
from .workspace_check import WorkspaceChecker, report_items

log = logging.getLogger("nki_assist.lsp")


FIRST_RESULT_WAIT_SECONDS = 5.0  # a request for a document never checked yet waits this long for it


PULL_FRESH_WAIT_MIN, PULL_FRESH_WAIT_MAX = 0.3, 0.5  # a pull for a newer version than the last result


RELEASE_AFTER_CHECKS = 50  # checks between two page trims when edits settle


FULL_COLLECT_AFTER_CHECKS = 1000  # checks between two full collections when edits settle (memory.py)


CHECK_WORKERS = 2  # a hung check keeps one worker; the other takes over (scheduler.py)


RELEASE_DELAY_SECONDS = 1.0  # after the last didClose of a burst


class NkiAssistServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("nki-assist", __version__, protocol_cls=AnsweringProtocol)
        self.settings = Settings()
        self.executor = ThreadPoolExecutor(max_workers=CHECK_WORKERS, thread_name_prefix="nki-assist-check")
        self.review_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nki-assist-review")
        self.store = DiagnosticsStore(publish=self.text_document_publish_diagnostics)
        self.scheduler = Scheduler(run=self._check, workers=CHECK_WORKERS)
        self.scheduler.on_idle = self._settled
        self._lens_refresh = False  # client supports workspace/codeLens/refresh
        self._inlay_refresh = False  # client supports workspace/inlayHint/refresh
        self.perf: dict[str, dict[str, dict]] = {}  # NKI file path -> kernel (or "*") -> performance
        self.proven: dict[str, list] = {}  # kernel file name -> last review's findings with a proven diff
        self.review_lock = asyncio.Lock()
        self.run_diagnostics: dict[str, list] = {}  # uri -> diagnostics of the last `nki-assist.runCommand`
        self._tokens = itertools.count(1)
        self._trim: asyncio.TimerHandle | None = None
        self._checks_since_release = 0
        self._checks_since_collect = 0
        self._places: dict[str, tuple[int | None, dict[str, list[Place]]]] = {}  # uri -> (version, names)
        self.disk = WorkspaceChecker()
        self.project = ProjectSync(self)  # the workspace's project model: findings as `check <folder>` gives them
        self.disk.model = self.project.model

    def start_io(self, stdin=None, stdout=None) -> None:
        serve_stdio(self, stdin, stdout)

    # -- documents ---------------------------------------------------------------------------
    def document(self, uri: str) -> TextDocument | None:
        """The open document, never one read from disk (closed documents are not analysed)."""
        return self.workspace.text_documents.get(unquote(uri))

    @staticmethod
    def path_of(doc: TextDocument) -> str | None:
        """The file path of a `file:` document; None for `untitled:` and other schemes."""
        return uris.to_fs_path(doc.uri) if doc.uri.startswith("file:") else None

    def schedule(self, uri: str, delay: float) -> None:
        self.scheduler.request(uri, delay)

    async def _check(self, uri: str) -> None:
        """Check the document's current version (the scheduler calls this when a worker is free)."""
        doc = self.document(uri)
        if doc is None:
            return  # closed while due: do not recreate its state
        version, text, settings = doc.version, doc.source, self.settings
        path, codec = self.path_of(doc), doc.position_codec
        loop = asyncio.get_running_loop()
        try:
            analysis, diagnostics = await loop.run_in_executor(
                self.executor, _analyze_and_convert, uri, path, doc.language_id, version, text, settings, codec,
                self.project.model)
        except RuntimeError:  # the pool is shut down: the server is exiting
            return
        self.scheduler.measured(uri, analysis.seconds)
        self._checks_since_release += 1
        self._checks_since_collect += 1
        freeze_survivors()  # the garbage collector never walks the kept analyses again (memory.py)
        doc = self.document(uri)
        if doc is None or doc.version != version or settings is not self.settings:
            return  # superseded: the edit (or settings change) that made it stale marked the document due
        self._publish(uri, analysis, diagnostics)
        self.project.checked(analysis)
        if analysis.nki_file is not None:
            if self._lens_refresh:
                self.workspace_code_lens_refresh(None)
            if self._inlay_refresh:
                self.workspace_inlay_hint_refresh(None)

    async def editor_analysis(self, uri: str) -> engine.Analysis | None:
        """The last good analysis, never waiting for a re-check: only a document that was never
        checked yet waits (briefly) for its first result."""
        entry = self.store.get(uri)
        if entry is None and self.scheduler.busy(uri):
            entry = await self.store.wait_for(uri, None, FIRST_RESULT_WAIT_SECONDS, mark_stale=False)
        return entry.analysis if entry is not None else None

    def _publish(self, uri: str, analysis: engine.Analysis, diagnostics: list[types.Diagnostic]) -> None:
        if analysis.error:
            self.window_log_message(types.LogMessageParams(
                type=types.MessageType.Error, message=f"nki-assist: check of {uri} failed: {analysis.error}"))
        for note in analysis.notes:
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Info,
                                                           message=f"nki-assist: {uri}: {note}"))
        self.store.set(uri, analysis.version, diagnostics + self.run_diagnostics.get(uri, []), analysis)

    def places(self, doc: TextDocument) -> dict[str, list[Place]]:
        """Where each identifier of the document's current text occurs (cached per version)."""
        cached = self._places.get(doc.uri)
        if cached is not None and cached[0] == doc.version:
            return cached[1]
        places = name_places(doc.source)
        self._places[doc.uri] = (doc.version, places)
        return places

    def nki_documents(self):
        """(document, analysis) for every open document whose last analysis parsed NKI kernels."""
        for uri in list(self.workspace.text_documents):
            doc, entry = self.document(uri), self.store.get(uri)
            if doc is not None and entry is not None and entry.analysis is not None \
                    and entry.analysis.nki_file is not None:
                yield doc, entry.analysis

    def _settled(self) -> None:
        """Every due check ran: give the pages of superseded analyses back (no collection: memory.py)."""
        if self._checks_since_collect >= FULL_COLLECT_AFTER_CHECKS:
            # frozen objects are never collected: now and then, when idle, collect whatever cycles
            # were frozen with them (none from analyses were seen; this bounds the rest)
            self._checks_since_collect = self._checks_since_release = 0
            release_memory()
        elif self._checks_since_release >= RELEASE_AFTER_CHECKS:
            self._checks_since_release = 0
            trim()

    def schedule_release(self) -> None:
        _schedule_release(self)

    # -- settings ----------------------------------------------------------------------------
    def apply_settings(self, raw: Any) -> bool:
        """Adopt the client's settings; True when they changed."""
        settings, problems = parse_settings(raw)
        changed = settings != self.settings
        if changed:
            self.settings = settings
        for problem in problems:
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning,
                                                             message=f"nki-assist: {problem}"))
        return changed

    async def pull_settings(self) -> bool:
        """Re-read `nki-assist.*` through workspace/configuration; True when it changed."""
        caps = self.client_capabilities.workspace
        if not (caps and caps.configuration):
            return False
        scope = self.workspace.root_uri
        try:
            result = await self.workspace_configuration_async(types.ConfigurationParams(
                items=[types.ConfigurationItem(section=SECTION, scope_uri=scope)]))
        except Exception as exc:
            log.warning("workspace/configuration failed: %s", exc)
            return False
        return self.apply_settings(result[0] if result else None)

    def reanalyze_all(self) -> None:
        for uri in list(self.workspace.text_documents):
            self.schedule(uri, 0)

    def target(self, analysis: engine.Analysis | None):
        # deferred: the server answers `initialize` before the engine is imported (start-up time)
        from nki_assist.api.hardware import get_target

        return get_target(getattr(analysis, "target", None) or self.settings.target)

    def roots(self) -> list[str]:
        roots = [uris.to_fs_path(f.uri) for f in self.workspace.folders.values()]
        if not roots and self.workspace.root_path:
            roots = [self.workspace.root_path]
        return [r for r in roots if r]


def _analyze_and_convert(uri: str, path: str | None, language_id: str | None, version: int | None, text: str,
                         settings: Settings, codec, model=None) -> tuple[engine.Analysis, list[types.Diagnostic]]:
    """In a worker: check, compute the editor's per-kernel resources and convert the findings, so the
    event loop only stores the result (it stays free for hovers and code actions)."""
    analysis = engine.analyze(uri, path, language_id, version, text, settings, model=model)
    if analysis.language == "nki":
        engine.parse_for_editor(analysis, path, text)
    if analysis.error:
        return analysis, [note_diagnostic(
            f"nki-assist could not check this file ({analysis.error}); other files are unaffected. "
            "See the nki-assist output for details.")]
    if analysis.notes:
        return analysis, [note_diagnostic("nki-assist: " + note) for note in analysis.notes]
    lines = text.splitlines(keepends=True)
    diagnostics = []
    for finding in analysis.findings:
        try:
            diagnostics.append(to_diagnostic(finding, lines, doc_path=path, language=analysis.language,
                                             codec=codec))
        except Exception as exc:
            log.warning("cannot convert finding %r: %s", finding, exc)
    return analysis, diagnostics


def create_server() -> NkiAssistServer:
    """A fresh server with every feature registered (one per process, or per unit test)."""
    ls = NkiAssistServer()
    ls.feature(types.INITIALIZE)(initialize)
    ls.feature(types.INITIALIZED)(initialized)
    ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(did_change_configuration)
    ls.feature(types.TEXT_DOCUMENT_DID_OPEN)(did_open)
    ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)(did_close)
    ls.feature(types.TEXT_DOCUMENT_DID_SAVE)(did_save)
    ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(did_change_watched_files)
    ls.feature(types.TEXT_DOCUMENT_HOVER)(hover)
    ls.feature(types.TEXT_DOCUMENT_CODE_ACTION,
               types.CodeActionOptions(code_action_kinds=ACTION_KINDS))(code_action)
    ls.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))(code_lens)
    ls.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))(inlay_hint)
    ls.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)(document_symbol)
    ls.feature(types.TEXT_DOCUMENT_DEFINITION)(definition)
    ls.feature(types.TEXT_DOCUMENT_REFERENCES)(references)
    ls.command(REVIEW_COMMAND)(review_port_command)
    ls.command(RUN_COMMAND)(run_command)
    ls.feature(types.SHUTDOWN)(shutdown)
    return ls


def _supports_pull(caps: types.ClientCapabilities) -> bool:
    return bool(caps.text_document and caps.text_document.diagnostic)


def initialize(ls: NkiAssistServer, params: types.InitializeParams) -> None:
    use_editor_documents(ls.workspace)
    ls.apply_settings((params.initialization_options or {}).get("settings")
                      if isinstance(params.initialization_options, dict) else None)
    workspace_caps = params.capabilities.workspace
    ls._lens_refresh = bool(workspace_caps and workspace_caps.code_lens and workspace_caps.code_lens.refresh_support)
    ls._inlay_refresh = bool(workspace_caps and workspace_caps.inlay_hint and workspace_caps.inlay_hint.refresh_support)
    if _supports_pull(params.capabilities):
        ls.store.pull = True
        workspace = params.capabilities.workspace
        if workspace and workspace.diagnostics and workspace.diagnostics.refresh_support:
            ls.store.refresh = lambda: ls.workspace_diagnostic_refresh(None)
        if types.TEXT_DOCUMENT_DIAGNOSTIC not in ls.protocol.fm.features:
            ls.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DiagnosticOptions(
                identifier="nki-assist", inter_file_dependencies=False, workspace_diagnostics=True,
            ))(pull_diagnostics)
            ls.feature(types.WORKSPACE_DIAGNOSTIC)(workspace_diagnostic)


async def initialized(ls: NkiAssistServer, params: types.InitializedParams) -> None:
    try:
        ls.executor.submit(engine.warm_up)  # imports the engine while the client is still opening files
    except RuntimeError:  # the pool is shut down: the server is exiting
        pass
    asyncio.ensure_future(ls.project.start())  # the project model, in its own worker
    await ls.project.register_watch()
    caps = ls.client_capabilities.workspace
    if caps and caps.did_change_configuration and caps.did_change_configuration.dynamic_registration:
        try:
            await ls.client_register_capability_async(types.RegistrationParams(registrations=[
                types.Registration(id="nki-assist-config", method=types.WORKSPACE_DID_CHANGE_CONFIGURATION,
                                   register_options={"section": SECTION})]))
        except Exception as exc:
            log.warning("cannot register for configuration changes: %s", exc)
    if await ls.pull_settings():
        ls.reanalyze_all()  # documents opened before the settings arrived


async def did_change_configuration(ls: NkiAssistServer, params: types.DidChangeConfigurationParams) -> None:
    if await ls.pull_settings():
        ls.reanalyze_all()  # documents opened before the settings arrived


def did_open(ls: NkiAssistServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, 0)


def did_change(ls: NkiAssistServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.schedule(uri, ls.scheduler.edit_delay(uri, ls.settings.debounce_ms))


def did_save(ls: NkiAssistServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.project.files_changed()


def did_change_watched_files(ls: NkiAssistServer, params: types.DidChangeWatchedFilesParams) -> None:
    ls.project.files_changed()


def did_close(ls: NkiAssistServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.project.closed(uris.to_fs_path(uri) if uri.startswith("file:") else None)
    ls.scheduler.forget(uri)
    ls.store.clear(uri)
    ls._places.pop(uri, None)
    engine.forget(uri)
    ls.schedule_release()


def _schedule_release(ls: NkiAssistServer) -> None:
    """Give freed memory back to the system once closes settle (one timer for a burst of closes). What a
    closed document held is freed by reference counting, so no full collection (it walks every open
    document's objects: seconds on the event loop with many open; memory.py)."""
    if ls._trim is not None:
        ls._trim.cancel()
    ls._trim = asyncio.get_running_loop().call_later(RELEASE_DELAY_SECONDS, release_closed)


async def pull_diagnostics(ls: NkiAssistServer, params: types.DocumentDiagnosticParams):
    uri = params.text_document.uri
    doc = ls.document(uri)
    if doc is None:
        return ls.store.report(None, None)
    entry = ls.store.get(uri)
    if entry is None:  # never checked yet: wait for the first result
        entry = await ls.store.wait_for(uri, doc.version, FIRST_RESULT_WAIT_SECONDS)
    elif entry.version != doc.version:
        # A re-check is due or running: wait about what it costs, then answer from the last result
        # (the store asks the client to pull again when the fresh one lands).
        cost = ls.scheduler.cost.get(uri, 0.0)
        wait = min(PULL_FRESH_WAIT_MAX, max(PULL_FRESH_WAIT_MIN, 3 * cost + ls.scheduler.debounce(
            uri, ls.settings.debounce_ms)))
        entry = await ls.store.wait_for(uri, doc.version, wait)
    return ls.store.report(entry, params.previous_result_id)


async def hover(ls: NkiAssistServer, params: types.HoverParams) -> types.Hover | None:
    uri, pos = params.text_document.uri, params.position
    analysis = await ls.editor_analysis(uri)
    doc, entry = ls.document(uri), ls.store.get(uri)
    if doc is None or entry is None:
        return None
    parts = []
    for diagnostic in entry.diagnostics:
        r = diagnostic.range
        if (r.start.line, r.start.character) <= (pos.line, pos.character) <= (r.end.line, r.end.character):
            data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
            if data.get("rule"):
                parts.append(diagnostic_text(data["rule"], diagnostic.message, data.get("fix")))
    if analysis is not None and analysis.nki_file is not None:
        lines = doc.lines
        line, col = from_lsp_position(lines, pos, doc.position_codec)
        try:
            text = item_hover(analysis.nki_file, line, col, lines[line - 1] if line <= len(lines) else "",
                              ls.target(analysis))
        except Exception as exc:
            log.warning("hover failed: %s", exc)
            text = None
        if text:
            parts.insert(0, text)
    if not parts:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown,
                                                    value="\n\n---\n\n".join(parts)))


def code_action(ls: NkiAssistServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    doc = ls.document(params.text_document.uri)
    if doc is None:
        return None
    entry = ls.store.get(doc.uri)
    current = entry is not None and entry.analysis is not None and entry.version == doc.version
    actions = code_actions(doc.uri, doc.lines, params.context.diagnostics, doc.position_codec,
                           only=params.context.only, findings=entry.analysis.findings if current else ())
    if wants_kind(params.context.only, types.CodeActionKind.QuickFix.value):
        actions += proven_fix_actions(doc.uri, doc.path, doc.lines, ls.proven, params.range, doc.position_codec)
    return actions or None


async def code_lens(ls: NkiAssistServer, params: types.CodeLensParams) -> list[types.CodeLens] | None:
    uri = params.text_document.uri
    doc, analysis = await _kernel_view(ls, uri)
    if doc is None:
        return None
    path = ls.path_of(doc)
    perf = ls.perf.get(str(Path(path).resolve())) if path else None
    return code_lenses(uri, doc.lines, analysis.nki_file, analysis.resources, perf or {},
                       ls.target(analysis), doc.position_codec)


async def inlay_hint(ls: NkiAssistServer, params: types.InlayHintParams) -> list[types.InlayHint] | None:
    uri = params.text_document.uri
    doc, analysis = await _kernel_view(ls, uri)
    if doc is None:
        return None
    return inlay_hints(analysis.nki_file, doc.lines, params.range.start.line + 1, params.range.end.line + 1,
                       ls.target(analysis), doc.position_codec)


async def document_symbol(ls: NkiAssistServer, params: types.DocumentSymbolParams) -> list[types.DocumentSymbol] | None:
    uri = params.text_document.uri
    doc, analysis = await _kernel_view(ls, uri)
    if doc is None:
        return None
    return document_symbols(analysis.nki_file, doc.lines, doc.position_codec)


async def workspace_diagnostic(ls: NkiAssistServer, params: types.WorkspaceDiagnosticParams):
    """Open documents from the store; the other NKI/CUDA files of the workspace folders, checked on disk."""
    previous = {p.uri: p.value for p in params.previous_result_ids or []}
    entries, open_paths = [], set()
    for uri in list(ls.workspace.text_documents):
        doc, entry = ls.document(uri), ls.store.get(uri)
        if doc is None:
            continue
        path = ls.path_of(doc)
        if path:
            open_paths.add(str(Path(path).resolve()))
        if entry is not None and entry.analysis is not None and entry.analysis.language is not None:
            entries.append((doc.uri, entry.version, entry.result_id, entry.diagnostics))
    loop = asyncio.get_running_loop()
    codec = ls.workspace.position_codec
    try:
        disk = await loop.run_in_executor(ls.executor, ls.disk.check, ls.roots(), ls.settings, open_paths, codec)
    except RuntimeError:  # the pool is shut down: the server is exiting
        disk = []
    entries.extend((uri, None, result.result_id, result.diagnostics) for uri, result in disk)
    return types.WorkspaceDiagnosticReport(items=report_items(entries, previous))


def shutdown(ls: NkiAssistServer, params: Any) -> None:
    engine.STOP.set()
    ls.scheduler.cancel_all()
    ls.project.shutdown()
    ls.executor.shutdown(wait=False, cancel_futures=True)
    ls.review_executor.shutdown(wait=False, cancel_futures=True)
