"""`workspace/diagnostic`: the NKI and CUDA files of the workspace folders that are not open.

Open documents are served from the diagnostics store. Files on disk are checked once with the same
options as open documents and kept by (modification time, size) until they change, so a repeated
workspace pull costs a directory walk and `stat`s. Runs in a worker thread.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types
from pygls import uris

from . import engine
from .diagnostics import note_diagnostic, to_diagnostic
from .settings import Settings

MAX_FILES = 2000  # a workspace pull never walks into an unbounded tree


@dataclass
class DiskResult:
    key: tuple  # (mtime_ns, size, context digest in the workspace's project model or None)
    result_id: str
    diagnostics: list[types.Diagnostic]


@dataclass
class WorkspaceChecker:
    results: dict[str, DiskResult] = field(default_factory=dict)  # path -> result
    settings: Settings | None = None
    model: Any = None  # project_model.WorkspaceModel: files are checked with their slice of the project
    _counter: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def files(self, roots: list[str]) -> list[str]:
        try:
            # deferred: the server answers `initialize` before the engine is imported (start-up time)
            from nki_assist.check import CheckOptions, collect_files
        except ImportError:
            return []
        existing = [r for r in roots if os.path.isdir(r)]
        return collect_files(existing, CheckOptions())[0][:MAX_FILES] if existing else []

    def check(self, roots: list[str], settings: Settings, skip: set[str], codec=None) -> list[tuple[str, DiskResult]]:
        """(uri, result) for every checkable file under `roots` whose path is not in `skip`."""
        with self._lock:
            if settings != self.settings:
                self.results.clear()
                self.settings = settings
            out = []
            for path in self.files(roots):
                real = os.path.realpath(path)
                if real in skip:
                    continue
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                key = (st.st_mtime_ns, st.st_size, self.model.digest(path) if self.model is not None else None)
                result = self.results.get(real)
                if result is None or result.key != key:
                    result = self._check_one(path, key, settings, codec)
                    if result is None:
                        continue
                    self.results[real] = result
                out.append((uris.from_fs_path(path) or path, result))
            return out

    def _check_one(self, path: str, key: tuple, settings: Settings, codec=None) -> DiskResult | None:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        text = data.decode("utf-8", errors="replace")
        # reuse=False: a file that is not open keeps no parse cache (it was kept until the server exited)
        analysis = engine.analyze(uris.from_fs_path(path) or path, path, None, None, text, settings, reuse=False,
                                  model=self.model)
        if analysis.language is None:
            return None
        if analysis.error or analysis.notes:
            diagnostics = [note_diagnostic("nki-assist: " + (analysis.error or "; ".join(analysis.notes)))]
        else:
            lines = text.splitlines(keepends=True)
            diagnostics = []
            for finding in analysis.findings:
                try:
                    diagnostics.append(to_diagnostic(finding, lines, doc_path=path, language=analysis.language,
                                                     **({'codec': codec} if codec else {})))
                except Exception:
                    continue
        self._counter += 1
        return DiskResult(key, f"disk-{self._counter}", diagnostics)


def report_items(entries: list[tuple[str, Any, str, list[types.Diagnostic]]],
                 previous: dict[str, str]) -> list[types.WorkspaceDocumentDiagnosticReport]:
    """`entries`: (uri, version, result id, diagnostics); unchanged when the client has that result id."""
    items: list[types.WorkspaceDocumentDiagnosticReport] = []
    for uri, version, result_id, diagnostics in entries:
        if previous.get(uri) == result_id:
            items.append(types.WorkspaceUnchangedDocumentDiagnosticReport(uri=uri, version=version,
                                                                          result_id=result_id))
        else:
            items.append(types.WorkspaceFullDocumentDiagnosticReport(uri=uri, version=version, items=diagnostics,
                                                                     result_id=result_id))
    return items
