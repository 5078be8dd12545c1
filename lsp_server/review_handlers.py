"""The `nki-assist.reviewPort` command: a review of the port spec in a worker thread, with progress and
cancellation, its markdown shown to the client and its proven fixes kept for code actions."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls import uris
from pygls.lsp.server import LanguageServer  # the server's own subclass (server.py) registers these handlers

from .proven_fix import proven_findings
from .review import (
    ReviewCancelled,
    ReviewRefused,
    ReviewUnavailable,
    find_port_spec,
    refresh_open_documents,
    run_review,
)

log = logging.getLogger("nki_assist.lsp")


async def review_port_command(ls: LanguageServer, *args: Any) -> dict:
    """Review the port of the given (or only open) kernel; opens the markdown assessment."""
    uri = args[0] if args and isinstance(args[0], str) else None
    if uri is None and len(ls.workspace.text_documents) == 1:
        uri = next(iter(ls.workspace.text_documents))
    doc_path = uris.to_fs_path(uri) if uri else None
    spec = find_port_spec(doc_path, ls.settings.port_spec, ls.roots())
    if spec is None:
        where = f"`{ls.settings.port_spec}`" if ls.settings.port_spec else "beside this file or in a parent folder"
        return _fail(ls, f"nki-assist: no port spec found ({where}). Create a port.toml or set "
                         "`nki-assist.review.portSpec`.")
    if ls.review_lock.locked():
        return _fail(ls, "nki-assist: a port review is already running.")
    async with ls.review_lock:
        return await _run_review(ls, spec, uri)


def _fail(ls: LanguageServer, message: str, kind: types.MessageType = types.MessageType.Warning) -> dict:
    ls.window_show_message(types.ShowMessageParams(type=kind, message=message))
    return {"ok": False, "message": message}


async def _run_review(ls: LanguageServer, spec: Path, uri: str | None) -> dict:
    loop = asyncio.get_running_loop()
    cancel = threading.Event()
    token: str | None = None
    window = ls.client_capabilities.window
    if window and window.work_done_progress:
        token = f"nki-assist-review-{next(ls._tokens)}"
        try:
            await ls.work_done_progress.create_async(token)
            ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                title="nki-assist: port review", message=spec.name, percentage=0, cancellable=True))
            ls.work_done_progress.tokens[token].add_done_callback(lambda _f: cancel.set())
        except Exception as exc:
            log.warning("work done progress unavailable: %s", exc)
            token = None

    def progress(message: str, percent: float | None = None) -> None:  # called from the worker
        if token is not None and not cancel.is_set():
            pct = None if percent is None else max(0, min(100, int(percent)))
            loop.call_soon_threadsafe(ls.work_done_progress.report, token,
                                      types.WorkDoneProgressReport(message=message, percentage=pct))

    def end(message: str) -> None:
        if token is not None:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
            ls.work_done_progress.tokens.pop(token, None)

    entry = ls.store.get(uri) if uri else None
    target = getattr(entry.analysis, "target", None) if entry and entry.analysis else None

    def review():
        return run_review(spec, ls.settings, target=target or ls.settings.target, progress=progress, cancel=cancel)

    future = loop.run_in_executor(ls.review_executor, review)
    try:
        outcome = await asyncio.shield(future)
    except asyncio.CancelledError:  # $/cancelRequest for the command itself
        cancel.set()
        end("cancelled")
        raise
    except ReviewCancelled:
        end("cancelled")
        return {"ok": False, "cancelled": True, "message": "review cancelled"}
    except (ReviewUnavailable, ReviewRefused) as exc:
        end(str(exc))
        return _fail(ls, f"nki-assist: {exc}")
    except Exception as exc:
        end("failed")
        return _fail(ls, f"nki-assist: port review failed: {type(exc).__name__}: {exc}", types.MessageType.Error)
    if cancel.is_set():
        end("cancelled")
        return {"ok": False, "cancelled": True, "message": "review cancelled"}
    end("done")
    _remember_performance(ls, outcome)
    nki = outcome.nki_path()
    if nki is not None:
        ls.proven.pop(nki.name, None)  # this review's answer replaces the last one for its kernel
    ls.proven.update(proven_findings(outcome.review))
    summary = outcome.summary()
    window_caps = ls.client_capabilities.window
    if window_caps and window_caps.show_document and window_caps.show_document.support:
        try:
            await ls.window_show_document_async(types.ShowDocumentParams(uri=summary["uri"], take_focus=True))
        except Exception as exc:
            log.warning("window/showDocument failed: %s", exc)
    await refresh_open_documents(ls)
    return {"ok": True, **summary}


def _remember_performance(ls: LanguageServer, outcome) -> None:
    nki = outcome.nki_path()
    perf = outcome.performance()
    if nki is None or not perf:
        return
    kernel = getattr(getattr(outcome.review, "port", None), "nki_kernel", None) or "*"
    ls.perf.setdefault(str(nki), {})[kernel] = perf
    if ls._lens_refresh:
        ls.workspace_code_lens_refresh(None)
