"""The port review behind the `nki-assist.reviewPort` command (runs in a worker thread).

Executing a kernel is executing user code, so the simulator only runs when the user enabled
`nki-assist.execution.enabled`; the review is asked to skip it otherwise, and refused when the
installed engine cannot skip it.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .settings import Settings

PORT_SPEC = "port.toml"
REFRESH_WAIT_SECONDS = 10.0
# Keyword names a review_port may use for "run the simulator or not".
_EXECUTION_KWARGS = ("simulate", "execute", "execution", "run_kernel")


class ReviewUnavailable(Exception):
    """The port review (or the markdown report) is not part of this installation."""


class ReviewRefused(Exception):
    """The review cannot run with the current settings; the message says what to change."""


class ReviewCancelled(Exception):
    pass


@dataclass
class ReviewOutcome:
    spec: Path
    markdown: str
    output: Path
    review: Any

    def performance(self) -> dict:
        perf = getattr(self.review, "performance", None)
        if perf is None:
            return {}
        return perf.model_dump() if hasattr(perf, "model_dump") else dict(perf)

    def nki_path(self) -> Path | None:
        nki = getattr(getattr(self.review, "port", None), "nki", None)
        if not nki:
            return None
        path = Path(nki)
        return path if path.is_absolute() else (self.spec.parent / path).resolve()

    def summary(self) -> dict:
        assessment = getattr(self.review, "assessment", None)
        perf = self.performance()
        return {
            "spec": str(self.spec),
            "output": str(self.output),
            "uri": self.output.resolve().as_uri(),
            "markdown": self.markdown,
            "verdict": getattr(assessment, "verdict", None),
            "findings": len(getattr(self.review, "findings", None) or []),
            "mfu_estimated_percent": perf.get("mfu_estimated_percent"),
            "bottleneck": perf.get("bottleneck"),
        }


def _mentions(spec: Path, file_name: str) -> bool:
    try:
        text = spec.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return "[port]" in text and re.search(rf"['\"]([^'\"]*/)?{re.escape(file_name)}['\"]", text) is not None


def find_port_spec(doc_path: str | None, configured: str | None, roots: list[str]) -> Path | None:
    """The port spec to review: the setting, else a `port.toml` (or a `[port]` TOML naming this
    file) beside the document or in a parent directory up to the workspace root."""
    if configured:
        candidate = Path(os.path.expanduser(configured))
        if not candidate.is_absolute() and roots:
            candidate = Path(roots[0]) / candidate
        return candidate if candidate.is_file() else None
    if not doc_path:
        return None
    doc = Path(doc_path)
    stops = {Path(r).resolve() for r in roots}
    directory = doc.parent
    for _ in range(20):
        if (directory / PORT_SPEC).is_file():
            return directory / PORT_SPEC
        try:
            for spec in sorted(directory.glob("*.toml")):
                if spec.name != "pyproject.toml" and _mentions(spec, doc.name):
                    return spec
        except OSError:
            pass
        if directory.resolve() in stops or directory.parent == directory:
            break
        directory = directory.parent
    return None


def _load_engine() -> tuple[Callable, Callable]:
    try:
        # deferred: the server answers `initialize` before the engine is imported (start-up time)
        from nki_assist.report.markdown import render_markdown
        from nki_assist.review import review_port
    except ImportError as exc:
        raise ReviewUnavailable(
            f"Port review is not available in this nki-assist installation ({exc}). "
            "Static diagnostics, hover and code lens still work."
        ) from None
    return review_port, render_markdown


def review_kwargs(review_port: Callable, settings: Settings, target: str | None,
                  progress: Callable | None, cancel: threading.Event | None) -> dict[str, Any]:
    """Keyword arguments for `review_port`, for both shapes of its API: flat keywords
    (`target=, llm=, simulate=`) or a `ReviewOptions` object passed as `options=` (with `run=`)."""
    try:
        params = inspect.signature(review_port).parameters
    except (TypeError, ValueError):
        params = {}
    accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

    def accepts(name: str) -> bool:
        return accepts_any or name in params

    kwargs: dict[str, Any] = {k: v for k, v in (("progress", progress), ("cancel", cancel)) if accepts(k)}
    llm = {"llm": settings.llm_provider}
    if settings.llm_provider != "none":
        llm.update({k: v for k, v in (("model", settings.llm_model), ("base_url", settings.llm_base_url)) if v})
    if "options" in params:
        options_cls = _options_class()
        if options_cls is not None:
            kwargs["options"] = options_cls(target=target, run=settings.execution_enabled, **llm)
            return kwargs
    kwargs.update({k: v for k, v in {"target": target, **llm}.items() if accepts(k)})
    switch = next((name for name in _EXECUTION_KWARGS if name in params), None)
    if switch:
        kwargs[switch] = settings.execution_enabled
    elif not settings.execution_enabled:
        raise ReviewRefused(
            "This review would run the kernel in the simulator, and execution is disabled. Enable "
            "`nki-assist.execution.enabled` for this workspace if you trust the kernel code.")
    return kwargs


def _options_class():
    try:
        # deferred: the server answers `initialize` before the engine is imported (start-up time)
        from nki_assist.review import ReviewOptions
    except ImportError:
        return None
    return ReviewOptions


def output_path(spec: Path, settings: Settings) -> Path:
    base = Path(settings.review_output_dir).expanduser() if settings.review_output_dir else (
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nki-assist" / "reviews")
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError:
        base = Path(tempfile.gettempdir()) / "nki-assist-reviews"
        base.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", spec.parent.name + "-" + spec.stem)
    return base / f"{stem}-review.md"


def run_review(spec: Path, settings: Settings, *, target: str | None = None,
               progress: Callable[[str, float | None], None] | None = None,
               cancel: threading.Event | None = None) -> ReviewOutcome:
    review_port, render_markdown = _load_engine()
    if settings.llm_provider == "openai":
        try:
            # deferred: the server answers `initialize` before the engine is imported (start-up time)
            from nki_assist.infra.extras import require

            require("openai", "The LLM drafter (nki-assist.llm.provider = openai)")
        except ImportError as exc:
            raise ReviewRefused(str(exc)) from None
    kwargs = review_kwargs(review_port, settings, target, progress, cancel)
    review = review_port(str(spec), **kwargs)
    review = getattr(review, "review", review)  # ReviewResult wraps the Review
    if cancel is not None and cancel.is_set():
        raise ReviewCancelled("review cancelled")
    markdown = _redact(render_markdown(review))
    out = output_path(spec, settings)
    out.write_text(markdown, encoding="utf-8")
    return ReviewOutcome(spec=spec, markdown=markdown, output=out, review=review)


def _redact(text: str) -> str:
    """No API key or token in the written review (the engine may be missing: then unchanged)."""
    try:
        # deferred: the server answers `initialize` before the engine is imported (start-up time)
        from nki_assist.infra.redact import redact
    except ImportError:
        return text
    return redact(text)


async def refresh_open_documents(ls: Any) -> None:
    """Re-check every open document after a review, publish the results again (push) or ask the
    client to pull again (pull). The review opens its markdown with showDocument, which hides the
    kernel's buffer; Neovim otherwise keeps that hidden buffer's diagnostics from before the review."""
    ls.reanalyze_all()
    try:
        await asyncio.wait_for(ls.scheduler.idle(), REFRESH_WAIT_SECONDS)
    except asyncio.TimeoutError:
        pass
    if ls.store.pull and ls.store.refresh is not None:
        ls.store.refresh()
