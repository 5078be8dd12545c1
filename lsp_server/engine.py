"""The server's only door onto the nki-assist engine (check, parse, resources, review).

Everything here runs in a worker thread, never on the event loop. Engine modules are imported
lazily so the server starts fast and keeps working while parts of the engine are missing. Tests
replace `analyze` (unit) or use the `NKI_ASSIST_LSP_TEST_FAULT` hook (end to end).
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .settings import Settings

# Test-only fault injection (documented in docs/lsp.md). NKI_ASSIST_LSP_TEST_FAULT is a comma list:
# "rule-crash" makes the check of a document containing CRASH_MARKER raise, "rule-hang" makes the
# check of a document containing HANG_MARKER block for HANG_SECONDS (or until shutdown).
FAULT_ENV = "NKI_ASSIST_LSP_TEST_FAULT"
CRASH_MARKER = "nki-assist-test-crash"
HANG_MARKER = "nki-assist-test-hang"
HANG_SECONDS = 20.0
STOP = threading.Event()  # set at shutdown so injected hangs end

# NKI files import the legacy (`neuronxcc.nki`) or the new (`nki`) package.
_NKI_IMPORT = re.compile(r"^[ \t]*(?:from|import)\s+(?:neuronxcc\.nki|neuronxcc\s+import\s+nki|nki)\b", re.M)
CUDA_SUFFIXES = (".cu", ".cuh")
CUDA_LANGUAGE_IDS = {"cuda-cpp", "cuda"}


def language_of(path: str | None, language_id: str | None, text: str) -> str | None:
    """"nki", "cuda" or None (not ours). Cheap: a suffix test and one regex scan."""
    suffix = Path(path).suffix.lower() if path else ""
    if suffix in CUDA_SUFFIXES or (not suffix and language_id in CUDA_LANGUAGE_IDS):
        return "cuda"
    if suffix in (".py", ".pyi") or (not suffix and language_id == "python"):
        return "nki" if _is_nki(text) else None
    return None


def _is_nki(text: str) -> bool:
    if "nki" not in text:
        return False
    try:
        # deferred: the server answers `initialize` before the engine is imported (start-up time)
        from nki_assist.parse.nki import is_nki_source
    except ImportError:
        return _NKI_IMPORT.search(text) is not None
    try:
        return bool(is_nki_source(text))
    except Exception:  # noqa: BLE001
        return _NKI_IMPORT.search(text) is not None


def check_path(path: str | None, uri: str, language: str) -> str:
    """The path handed to the engine: the real file path, or a pseudo path with the right suffix."""
    if path:
        return path
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", uri.split(":", 1)[-1]) or "untitled"
    return name + (".cu" if language == "cuda" else ".py")


@dataclass
class Analysis:
    """What one analysis of one document version produced."""

    uri: str
    version: int | None
    language: str | None
    target: str | None = None  # the hardware target the check used
    findings: list[Any] = field(default_factory=list)
    nki_file: Any = None  # parse_nki result (NKI files only), for hover and lens
    resources: dict[str, dict] = field(default_factory=dict)  # kernel name -> kernel_resources()
    notes: list[str] = field(default_factory=list)  # shown in the log, e.g. "file too large"
    error: str | None = None  # the engine failed; previous diagnostics are kept
    seconds: float = 0.0
    in_project: bool = False  # checked with the workspace's project model (else as a one-file project)
    context_digest: str | None = None  # of the context the check read (project_sync.py fills it when needed)


def _inject_fault(text: str) -> None:
    faults = os.environ.get(FAULT_ENV, "").split(",")
    if "rule-crash" in faults and CRASH_MARKER in text:
        raise RuntimeError("injected rule crash (NKI_ASSIST_LSP_TEST_FAULT=rule-crash)")
    if "rule-hang" in faults and HANG_MARKER in text:
        STOP.wait(HANG_SECONDS)


_WARM_UP_KERNEL = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def warm_up(a):
    out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out[0:128, 0:512], value=nl.load(a[0:128, 0:512]))
    return out
"""


def warm_up() -> float:
    """Import the engine and check a tiny kernel, so the first file the user opens does not wait for
    the imports (~0.3 s). Runs in a worker after `initialized`; never raises. Returns the seconds spent."""
    started = time.perf_counter()
    try:
        # deferred: the server answers `initialize` before the engine is imported (start-up time)
        import nki_assist.check as check

        check.check_text("warm_up_nki.py", _WARM_UP_KERNEL, check.CheckOptions(fail_on="never"))
    except Exception:  # noqa: BLE001 - a missing or broken engine is reported when a file is checked
        pass
    return time.perf_counter() - started


def load_file_config(path: str | None):
    """`[tool.nki-assist]` for a file on disk, or None (untitled, deleted, engine missing)."""
    if not path:
        return None
    try:
        # deferred: the server answers `initialize` before the engine is imported (start-up time)
        from nki_assist.config import load_config
    except ImportError:
        return None
    try:
        return load_config(Path(path).parent)
    except Exception:  # noqa: BLE001 - a broken config must not stop diagnostics
        return None


def check_options(settings: Settings, config):
    """CheckOptions from `[tool.nki-assist]` with the editor settings on top: the editor's target
    and select win when set, its ignore list is added."""
    # deferred: the server answers `initialize` before the engine is imported (start-up time)
    import nki_assist.check as check

    if config is not None and hasattr(check, "options_from_config"):
        options = check.options_from_config(config, target=settings.target,
                                            select=list(settings.select) or None)
    else:
        options = check.CheckOptions(target=settings.target or getattr(config, "target", None) or "trn2",
                                     select=list(settings.select) or getattr(config, "select", None),
                                     ignore=list(getattr(config, "ignore", None) or []))
    options.ignore = list(options.ignore) + list(settings.ignore)
    options.fail_on = "never"
    if settings.max_file_bytes:
        options.max_file_bytes = settings.max_file_bytes
    return options


_CACHES: dict[str, Any] = {}  # uri -> ParseCache: the work an edit of that document can reuse
_CACHES_LOCK = threading.Lock()


def _cache_for(uri: str):
    try:
        # deferred: the server answers `initialize` before the engine is imported (start-up time)
        from nki_assist.parse.reuse import ParseCache
    except ImportError:
        return None
    with _CACHES_LOCK:
        cache = _CACHES.get(uri)
        if cache is None:
            cache = _CACHES[uri] = ParseCache()
        return cache


def forget(uri: str) -> None:
    """The document closed: drop its reusable parse work."""
    with _CACHES_LOCK:
        _CACHES.pop(uri, None)


def _run_check(path: str, text: str, options, result: Analysis, reuse: bool = True, model=None) -> None:
    # deferred: the server answers `initialize` before the engine is imported (start-up time)
    import nki_assist.check as check

    _inject_fault(text)
    if not hasattr(check, "check_text"):  # the minimal engine API
        result.findings = list(check.check_source(path, text, options))
        return
    cache = _cache_for(result.uri) if reuse else None
    if model is not None and result.language == "nki":
        # the file's slice of the workspace's project, as `check <folder>` gives it; None: checked alone
        options.project = _project(model, path, text, cache, reuse)
        result.in_project = options.project is not None
    outcome = check.check_text(path, text, options, cache=cache)
    result.findings = list(outcome.findings)
    if result.language == "nki":
        result.nki_file = getattr(outcome, "parsed", None)  # reused for hover and lens: no second parse
    if outcome.status == "error":  # e.g. a rule raised: the engine isolated it, we say so
        result.error = outcome.reason
    elif outcome.status == "skipped" and outcome.notes:
        result.notes.append(outcome.reason)


def _project(model, path: str, text: str, cache, reuse: bool):
    """The project a check of `path` reads: the open document indexed from its text (`reuse`), a file on disk
    as the model indexed it; None outside the model."""
    if not reuse:
        return model.project_of(path)
    if cache is None:
        return model.project_for(path, text)
    with cache.lock:  # the index reuses the document's Python-level memo, as its check does
        return model.project_for(path, text, cache)


def _index_only(model, path: str, text: str) -> bool:
    try:
        return model.project_for(path, text) is not None
    except Exception:  # noqa: BLE001 - an index that fails leaves the last one
        return False


def analyze(uri: str, path: str | None, language_id: str | None, version: int | None, text: str,
            settings: Settings, reuse: bool = True, model=None) -> Analysis:
    """Check one document version. Never raises: failures land in `Analysis.error`. `reuse` keeps the
    parse work an edit of this open document can reuse (until `forget`); a file checked on disk keeps none.
    With `model` (project_model.WorkspaceModel), a file it holds is checked with its slice of the project."""
    started = time.perf_counter()
    language = language_of(path, language_id, text)
    result = Analysis(uri=uri, version=version, language=language)
    if language is None:
        if model is not None and reuse and path and model.contains(path):
            # a module without NKI (constants, helpers) still tells the others' checks what it defines
            result.in_project = _index_only(model, path, text)
        return result
    try:
        config = load_file_config(path)
        limit = settings.max_file_bytes or getattr(config, "max_file_bytes", None) or 5_000_000
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > limit:
            result.notes.append(f"{size / 1e6:.1f} MB is above the {limit / 1e6:.1f} MB limit "
                                "(max-file-bytes); nki-assist skipped this file")
            return result
        options = check_options(settings, config)
        result.target = options.target
        engine_path = check_path(path, uri, language)
        _run_check(engine_path, text, options, result, reuse, model if path else None)
    except Exception as exc:  # noqa: BLE001 - one bad check never takes the server down
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        result.seconds = time.perf_counter() - started
    return result


def parse_for_editor(analysis: Analysis, path: str | None, text: str) -> Analysis:
    """Fill `nki_file` and `resources` (hover, code lens). Separate from `analyze` so diagnostics
    are published before this second parse runs."""
    if analysis.language == "nki" and not analysis.error and not analysis.notes:
        engine_path = check_path(path, analysis.uri, "nki")
        analysis.nki_file, analysis.resources = _parse_nki(text, engine_path, analysis.target or "trn2",
                                                           analysis.nki_file)
    return analysis


def _parse_nki(text: str, path: str, target_name: str, parsed: Any = None) -> tuple[Any, dict[str, dict]]:
    """Parsed kernels (`parsed` when the check already made them) and per-kernel resources;
    (None, {}) when the parser is missing or fails."""
    try:
        # deferred: the server answers `initialize` before the engine is imported (start-up time)
        from nki_assist.api.hardware import get_target
        from nki_assist.parse.nki import kernel_resources, parse_nki
    except ImportError:
        return None, {}
    try:
        nki_file = parsed if parsed is not None else parse_nki(text, path)
    except Exception:  # noqa: BLE001 - half-typed code; findings already cover syntax problems
        return None, {}
    target = get_target(target_name)
    resources = {}
    for kernel in getattr(nki_file, "kernels", None) or []:
        try:
            resources[kernel.name] = dict(kernel_resources(kernel, target))
        except Exception:  # noqa: BLE001
            continue
    return nki_file, resources
