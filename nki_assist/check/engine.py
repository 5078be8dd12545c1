"""Checking one file: the language's front end and rules, then selection, suppressions and fixes.

`check_source` checks one text (the language server calls it on every change); `check_file` reads and checks
one path. Neither raises on bad input: unreadable, binary, oversized or undecodable files become
notes/errors in the result, and a front end or rule that crashes becomes a note for that file."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..api.hardware import get_target
from ..api.version import resolve_nki_version
from ..parse.source import normalize_newlines
from .progress import long_file
from .options import CheckOptions, _severity_overrides, file_ignores, language_of, rule_enabled
from .read import NotRegularFile, _read, _size_limit_is_default, decode, decode_source, read_regular
from .results import FileResult

if TYPE_CHECKING:  # the Finding model (pydantic) loads only where a text is checked (start-up time)
    from ..findings import Finding


def _run_front_end(path: str, text: str, language: str, target, cache=None,
                   project=None, refused: tuple[int, int, str] | None = None,
                   say=lambda phase: None) -> tuple[list[Finding], dict | None, Any]:
    if language == "nki":
        # deferred: a language's grammar and rules load only when a file of it is checked (start-up time)
        from ..rules.nki.run import run_nki_rules

        if cache is not None and not cache.lock.acquire(blocking=False):
            cache = None  # another check of this document is running: this one runs cold
        try:
            # with a cache, the rules remember findings on the reused kernels: parse and rules under one lock
            nki_file = _parse_in_project(text, path, cache, project)
            if refused is not None and getattr(nki_file, "python_syntax_error", None) is None:
                nki_file.python_syntax_error = refused  # CPython refuses the bytes: NKI001 where it stops
            say("running the rules")
            return list(run_nki_rules(nki_file, target)), None, nki_file
        finally:
            if cache is not None:
                cache.lock.release()
    # deferred: a language's grammar and rules load only when a file of it is checked (start-up time)
    from ..parse.cuda import parse_cuda
    from ..rules.cuda.checks import run_cuda_rules

    cuda_file = parse_cuda(text, path)
    facts = None
    try:
        facts = cuda_file.to_json()
    except Exception:  # facts are a bonus; findings still count
        facts = None
    return list(run_cuda_rules(cuda_file, target)), facts, cuda_file


def _with_nki_version(target, path: str, explicit: str | None):
    """The hardware target carrying the NKI version this file is held to (explicit, else its pins)."""
    return replace(target, nki_version=resolve_nki_version(explicit, path).version)


def _settle_versions(raw: list[Finding], path: str, language: str, target, parsed, options) -> list[Finding]:
    """Version-dependent findings tempered by what is known of the version (check/versioned.py): at most
    warnings on a guessed version; on a range pin, checked at its newest admitted version too."""
    if language != "nki":
        return raw
    # deferred: only NKI files settle versions (CUDA checks never load the API table)
    from .versioned import choice_for, settle

    choice = choice_for(path, options.nki_version)
    tree = parsed.project.module.tree if getattr(parsed, "project", None) is not None else None

    def at(version: str) -> list[Finding]:
        # deferred: a language's grammar and rules load only when a file of it is checked (start-up time)
        from ..rules.nki.run import run_nki_rules

        if tree is not None:
            parsed.project.module.tree = tree  # the first run released it
        return list(run_nki_rules(parsed, replace(target, nki_version=version)))

    return settle(raw, choice, at)


def _parse_in_project(text: str, path: str, cache, project):
    """Parse one NKI file with what the project model knows about it (roles, call sites, imported
    constants); a file outside the project is a one-file project."""
    # deferred: a language's grammar and rules load only when a file of it is checked (start-up time)
    from ..parse.nki import parse_nki
    from ..project import apply_context, context_for

    ctx = context_for(path, text, project, cache)
    nki_file = parse_nki(text, path, cache=cache, constants=ctx.imported_constants if ctx else None)
    return apply_context(nki_file, ctx)


def build_project(files: list[str], options: CheckOptions):
    """The project model of the .py files checked together: each file read once more, unreadable ones left out."""
    # deferred: a language's grammar and rules load only when a file of it is checked (start-up time)
    from ..project import Project

    sources = {}
    for path in files:
        if language_of(path) != "nki":
            continue
        try:
            sources[path] = decode(read_regular(path, options.max_file_bytes))[0]
        except (OSError, NotRegularFile):
            continue
    return Project.build(sources, keep_trees=True)


def check_text(path: str, text: str, options: CheckOptions, cache=None,
               refused: tuple[int, int, str] | None = None) -> FileResult:
    """Check one file's text; the result says whether it was checked, skipped or failed, and why.

    `refused`: where CPython refused the file's bytes (read.decode_source): NKI001 there, as for a syntax error.

    `cache` (a `parse.reuse.ParseCache`, one per document) makes repeated checks of an edited NKI
    file incremental; the findings are those of a cold check."""
    language = language_of(path)
    if language is None:
        return FileResult(path, None, "skipped", "not an NKI (.py) or CUDA (.cu, .cuh) file")
    text = normalize_newlines(text)  # \r\n and lone \r as CPython reads them; lines keep their numbers
    if len(text) > options.max_file_bytes:
        reason = (f"larger than max-file-bytes ({len(text):,} > {options.max_file_bytes:,}); "
                  "not checked")
        return FileResult(path, language, "skipped", reason, notes=[f"{path}: {reason}"],
                          unchecked=_size_limit_is_default(options))
    try:
        target = _with_nki_version(get_target(options.target), path, options.nki_version)
    except ValueError as exc:
        return FileResult(path, language, "error", str(exc))
    if language == "nki":
        try:
            # deferred: a language's grammar and rules load only when a file of it is checked (start-up time)
            from ..parse.nki import is_nki_source

            if not is_nki_source(text):
                return FileResult(path, language, "skipped", "no NKI import")
        except Exception as exc:
            reason = f"NKI detection failed ({type(exc).__name__}: {exc})"
            return FileResult(path, language, "error", reason)
    with long_file(path, text.count("\n") + 1) as say:  # progress when one file takes long (CLI only)
        try:
            raw, facts, parsed = _run_front_end(path, text, language, target, cache, options.project, refused, say)
            raw = _settle_versions(raw, path, language, target, parsed, options)
        except Exception as exc:  # a front-end or rule bug must not take the whole run down
            reason = f"internal error in the {language.upper()} checks ({type(exc).__name__}: {exc}); no findings"
            return FileResult(path, language, "error", reason)
        say("suppressions and fixes")
        findings, suppressed = _post_process(path, text, language, raw, options)
    return FileResult(path, language, "checked", findings=findings, suppressed=suppressed, cuda_facts=facts,
                      parsed=parsed, crashed=crashed_checks(raw))


def crashed_checks(findings: list[Finding]) -> list[str]:
    """The checks that raised, from the internal-error findings the rule runners make of a crash
    (rules/runner.py: evidence names the check and the exception)."""
    out = []
    for f in findings:
        ev = f.evidence if isinstance(f.evidence, dict) else {}
        if ev.get("check") and ("exception" in ev or "internal_error" in ev):
            out.append(f"{f.rule} {ev['check']}")
    return out


def _post_process(path: str, text: str, language: str, raw: list[Finding],
                  options: CheckOptions) -> tuple[list[Finding], list[Finding]]:
    # deferred: a run whose files all come from the cache never loads the engine (start-up time)
    from ..findings import dedupe, group_repeats
    from ..rules.registry import get
    from .autofix import attach_fixes
    from .suppress import UNUSED_BARE_RULE, UNUSED_RULE, apply_suppressions, parse_suppressions, unused_suppressions

    ignore = list(options.ignore) + file_ignores(path, options)

    def enabled(rule_id: str, name: str = "") -> bool:
        if not name:
            try:
                name = get(rule_id).name
            except KeyError:
                name = ""
        return rule_enabled(rule_id, name, options.select, ignore)

    findings = [f if f.file else f.model_copy(update={"file": path}) for f in dedupe(raw)]
    findings = [f for f in findings if enabled(f.rule, f.name)]
    sups = parse_suppressions(text, language)
    findings, suppressed = apply_suppressions(findings, sups)
    if sups and (enabled(UNUSED_RULE) or enabled(UNUSED_BARE_RULE)):
        unused = unused_suppressions(sups, path, language, is_enabled=enabled)
        # NA100 can be silenced on its line (`# noqa: NKI103, NA100`); a bare comment cannot silence the
        # report on itself (NA101, or NA100 for a bare CUDA comment)
        findings += [f for f in unused if enabled(f.rule)
                     and (sups[f.line].bare or not sups[f.line].matches(f.rule))]
    overrides = _severity_overrides(tuple(sorted(options.severity.items())))
    if overrides:
        findings = [f.model_copy(update={"severity": overrides[f.rule]}) if f.rule in overrides else f
                    for f in findings]
    findings.sort(key=lambda f: (f.line or 0, f.column or 0, f.rule))
    findings = attach_fixes(findings, text)
    if language == "nki":  # one finding per cause (same rule and message in one function); fixes stay apart
        findings = group_repeats(findings, _scope_reader(text))
    if language == "nki" and any(f.autofix is not None for f in findings):
        # deferred: only files with a fix read the project's version range (start-up time)
        from .autofix.versions import version_safety
        from .versioned import choice_for

        findings = version_safety(findings, choice_for(path, options.nki_version).oldest_admitted())
    return findings, suppressed


def _scope_reader(text: str):
    """finding -> its enclosing function, parsing the text on the first question only (most files have no repeat)."""
    # deferred: a run whose files all come from the cache never loads the engine (start-up time)
    from ..findings import function_scopes

    scopes: list = []

    def scope_of(f) -> str | None:
        if not scopes:
            scopes.append(function_scopes(text))
        return scopes[0](f.line) if scopes[0] is not None else None

    return scope_of


def check_source(path: str, text: str, options: CheckOptions) -> list[Finding]:
    """Findings for one file's text (language from the suffix); [] for files that are not NKI/CUDA."""
    try:
        return check_text(path, text, options).findings
    except Exception:  # never raises: check_text already guards the front ends
        return []


def check_file(path: str, options: CheckOptions) -> FileResult:
    """Read and check one file; every failure becomes the result's status and notes."""
    language = language_of(path)
    if language is None:
        reason = "not an NKI (.py) or CUDA (.cu, .cuh) file"
        return FileResult(path, None, "skipped", reason, notes=[f"{path}: {reason}; skipped"])
    data = _read(path, language, options)
    return data if isinstance(data, FileResult) else check_bytes(path, data, options)


def check_bytes(path: str, data: bytes, options: CheckOptions) -> FileResult:
    """Check a file's bytes (already read and found not binary)."""
    text, note, refused, _ = decode_source(data)
    result = check_text(path, text, options, refused=refused)
    if note:
        result.notes.insert(0, f"{path}: {note}")
    return result
