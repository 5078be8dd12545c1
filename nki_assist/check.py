"""The `check` engine: static findings for NKI and CUDA files, with selection and suppressions.

`check_source` checks one text (the language server calls it on every change); `check_paths` walks
files and directories for the CLI. Neither raises on bad input: unreadable, binary, oversized or
undecodable files become notes/errors in the report, and a front end or rule that crashes becomes a
note for that file.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from .api.version import resolve_nki_version
from .config import DEFAULT_MAX_FILE_BYTES
from .hardware import DEFAULT_TARGET, get_target
from .parse.source import normalize_newlines
from .severity import Severity

# The Finding model (pydantic), the rule registry and the fix builders are imported inside the functions
# that check a text: a run whose files all come from the cache never loads them (start-up time).

NKI_SUFFIXES = (".py",)
CUDA_SUFFIXES = (".cu", ".cuh")
BINARY_SNIFF_BYTES = 8192


@dataclass
class CheckOptions:
    target: str = "trn2"
    select: list[str] | None = None  # rule ids, id prefixes ("NKI1") or kebab names; None = all
    ignore: list[str] = field(default_factory=list)
    fail_on: str = "error"
    # Additive (config file): glob -> selectors, rule -> severity, size limit, glob base, walk excludes.
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    severity: dict[str, str] = field(default_factory=dict)
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    root: str | None = None
    exclude: list[str] = field(default_factory=list)
    extend_exclude: list[str] = field(default_factory=list)
    respect_gitignore: bool = True
    # target NKI version ("0.3"); None: inferred per file from the project's pins (api/version.py)
    nki_version: str | None = None
    # the project model of the files checked together (check_paths builds it; None: each file alone)
    project: Any = None


@dataclass
class FileResult:
    path: str
    language: str | None  # "nki" | "cuda" | None (not a checkable file)
    status: str  # "checked" | "skipped" | "error"
    reason: str = ""  # why skipped / what failed
    findings: list[Finding] = field(default_factory=list)
    suppressed: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    cuda_facts: dict[str, Any] | None = None
    parsed: Any = None  # the front end's NkiFile / CudaFile, so callers (the LSP) need not parse again
    unchecked: bool = False  # skipped although it is a kernel file (too large, binary, not a regular file)
    crashed: list[str] = field(default_factory=list)  # checks that raised on this file ("NKI001 check_x")

    @property
    def incomplete(self) -> str | None:
        """Why this file was not (fully) checked, or None: an error, an unchecked skip, a crashed check."""
        if self.status == "error":
            return self.reason
        if self.unchecked:
            return self.reason
        if self.crashed:
            return f"check(s) crashed: {', '.join(self.crashed)}; their findings are missing"
        return None

    def status_json(self) -> dict[str, Any]:
        return {"path": self.path, "language": self.language, "status": self.status,
                "reason": self.reason or None, "findings": len(self.findings),
                "suppressed": len(self.suppressed), "incomplete": self.incomplete}

    def to_entry(self) -> dict[str, Any]:
        """The JSON form the cache stores and pool workers return (everything but `parsed`)."""
        # deferred: the cache module is light (no pydantic)
        from .check_cache import ENTRY_VERSION

        return {"v": ENTRY_VERSION, "path": self.path, "language": self.language, "status": self.status,
                "reason": self.reason, "findings": [f.to_json() for f in self.findings],
                "suppressed": [f.to_json() for f in self.suppressed], "notes": list(self.notes),
                "cuda_facts": self.cuda_facts, "unchecked": self.unchecked, "crashed": list(self.crashed)}

    @classmethod
    def from_entry(cls, entry: dict[str, Any], lazy: bool = True) -> "FileResult":
        """A result from its JSON form; findings are `LazyFinding`s (no pydantic) unless `lazy` is False."""
        if lazy:
            # deferred: the cache module is light (no pydantic)
            from .check_cache import LazyFinding as make
        else:
            # deferred: pydantic only when the caller wants real Findings
            from .findings import Finding

            make = Finding.model_validate
        return cls(entry["path"], entry["language"], entry["status"], entry.get("reason", ""),
                   findings=[make(f) for f in entry["findings"]],
                   suppressed=[make(f) for f in entry["suppressed"]], notes=list(entry["notes"]),
                   cuda_facts=entry.get("cuda_facts"), unchecked=bool(entry.get("unchecked")),
                   crashed=list(entry.get("crashed") or ()))


@dataclass
class CheckReport:
    findings: list[Finding] = field(default_factory=list)  # sorted by file, line, column, rule
    files_checked: int = 0
    files_skipped: int = 0
    notes: list[str] = field(default_factory=list)
    cuda_facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # unreadable files, missing paths
    incomplete: list[str] = field(default_factory=list)  # "path: why" for files not (fully) checked
    files: list[FileResult] = field(default_factory=list)
    suppressed: list[Finding] = field(default_factory=list)
    target: str = "trn2"

    def add(self, result: FileResult) -> None:
        self.files.append(result)
        self.notes.extend(result.notes)
        if result.status == "checked":
            self.files_checked += 1
        elif result.status == "skipped":
            self.files_skipped += 1
        else:
            self.errors.append(f"{result.path}: {result.reason}")
        why = result.incomplete
        if why:
            self.incomplete.append(f"{result.path}: {why}")
        self.findings.extend(result.findings)
        self.suppressed.extend(result.suppressed)
        if result.cuda_facts is not None:
            self.cuda_facts[result.path] = result.cuda_facts

    def finish(self) -> "CheckReport":
        """Sort the findings by place and number them F1..Fn."""
        self.findings.sort(key=lambda f: (f.file or "", f.line or 0, f.column or 0, f.rule))
        self.findings = [f.model_copy(update={"id": f"F{i}"}) for i, f in enumerate(self.findings, 1)]
        return self

    def counts_by_severity(self) -> dict[str, int]:
        counts = {s.value: 0 for s in Severity}
        for f in self.findings:
            counts[f.severity.value] += 1
        return counts

    def counts_by_rule(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for f in self.findings:
            counts[f.rule] = counts.get(f.rule, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def summary(self) -> dict[str, Any]:
        return {"target": self.target, "files_checked": self.files_checked,
                "files_skipped": self.files_skipped, "findings": len(self.findings),
                "by_severity": self.counts_by_severity(), "by_rule": self.counts_by_rule(),
                "suppressed": len(self.suppressed), "notes": len(self.notes), "errors": len(self.errors),
                "incomplete": len(self.incomplete)}


def options_from_config(cfg, **overrides) -> "CheckOptions":
    """CheckOptions from a `nki_assist.config.Config`; keyword overrides (CLI flags) win when not None."""

    opts = CheckOptions(
        target=cfg.target or DEFAULT_TARGET,
        select=cfg.select,
        ignore=list(cfg.ignore),
        fail_on=cfg.fail_on or "error",
        per_file_ignores=dict(cfg.per_file_ignores),
        severity=dict(cfg.severity),
        max_file_bytes=cfg.max_file_bytes,
        root=str(cfg.root) if cfg.root else None,
        exclude=list(cfg.exclude),
        extend_exclude=list(cfg.extend_exclude),
        respect_gitignore=cfg.respect_gitignore,
        nki_version=getattr(cfg, "nki_version", None),
    )
    for key, value in overrides.items():
        if value is not None:
            setattr(opts, key, value)
    return opts


# --- selection ---------------------------------------------------------------------------------

def _selector_matches(selector: str, rule_id: str, name: str) -> bool:
    s = selector.strip()
    return s.upper() == "ALL" or rule_id.startswith(s.upper()) or s.lower() == name


def rule_enabled(rule_id: str, name: str, select: list[str] | None, ignore: list[str]) -> bool:
    if select is not None and not any(_selector_matches(s, rule_id, name) for s in select):
        return False
    return not any(_selector_matches(s, rule_id, name) for s in ignore)


def unknown_selectors(selectors: list[str]) -> list[str]:
    """Selectors that match no registered rule (a typo the CLI reports as a usage error)."""
    if not selectors:
        return []

    # deferred: the registry (and pydantic) load only when a selector must be validated
    from .rules.registry import all_rules

    rules = all_rules()
    return [s for s in selectors if not any(_selector_matches(s, r.id, r.name) for r in rules)]


def file_ignores(path: str, options: CheckOptions) -> list[str]:
    """The selectors per-file-ignores switches off for `path` (gitwildmatch globs, relative to the root)."""
    if not options.per_file_ignores:
        return []
    # deferred: pathspec loads only when there are globs to match
    from .check_walk import glob_matches, relative_to_root

    rel = relative_to_root(path, options.root)
    out: list[str] = []
    for pattern, selectors in options.per_file_ignores.items():
        if glob_matches(pattern, rel):
            out.extend(selectors)
    return out


@lru_cache(maxsize=64)
def _severity_overrides(items: tuple[tuple[str, str], ...]) -> dict[str, Severity]:
    # deferred: the registry (and pydantic) load only when a text is checked
    from .rules.registry import get

    out = {}
    for rule, level in items:
        try:
            out[get(rule).id] = Severity(level)
        except (KeyError, ValueError):
            continue  # reported by the CLI's option validation
    return out


# --- one text ----------------------------------------------------------------------------------

def language_of(path: str) -> str | None:
    suffix = Path(path).suffix.lower()
    if suffix in NKI_SUFFIXES:
        return "nki"
    if suffix in CUDA_SUFFIXES:
        return "cuda"
    return None


def _run_front_end(path: str, text: str, language: str, target, cache=None,
                   project=None) -> tuple[list[Finding], dict | None, Any]:
    if language == "nki":
        # deferred: a language's grammar and rules load only when a file of it is checked (start-up time)
        from .rules.nki_rules import run_nki_rules

        if cache is not None and not cache.lock.acquire(blocking=False):
            cache = None  # another check of this document is running: this one runs cold
        try:
            # with a cache, the rules remember findings on the reused kernels: parse and rules under one lock
            nki_file = _parse_in_project(text, path, cache, project)
            return list(run_nki_rules(nki_file, target)), None, nki_file
        finally:
            if cache is not None:
                cache.lock.release()
    # deferred: a language's grammar and rules load only when a file of it is checked (start-up time)
    from .parse.cuda import parse_cuda
    from .rules.cuda_rules import run_cuda_rules

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


def _parse_in_project(text: str, path: str, cache, project):
    """Parse one NKI file with what the project model knows about it (roles, call sites, imported
    constants); a file outside the project is a one-file project."""
    # deferred: a language's grammar and rules load only when a file of it is checked (start-up time)
    from .parse.nki import parse_nki
    from .project import apply_context, context_for

    ctx = context_for(path, text, project, cache)
    nki_file = parse_nki(text, path, cache=cache, constants=ctx.imported_constants if ctx else None)
    return apply_context(nki_file, ctx)


def build_project(files: list[str], options: CheckOptions):
    """The project model of the .py files checked together: each file read once more, unreadable ones left out."""
    # deferred: a language's grammar and rules load only when a file of it is checked (start-up time)
    from .project import Project

    sources = {}
    for path in files:
        if language_of(path) != "nki":
            continue
        try:
            sources[path] = decode(read_regular(path, options.max_file_bytes))[0]
        except (OSError, NotRegularFile):
            continue
    return Project.build(sources, keep_trees=True)


def check_text(path: str, text: str, options: CheckOptions, cache=None) -> FileResult:
    """Check one file's text; the result says whether it was checked, skipped or failed, and why.

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
            from .parse.nki import is_nki_source

            if not is_nki_source(text):
                return FileResult(path, language, "skipped", "no NKI import")
        except Exception as exc:
            reason = f"NKI detection failed ({type(exc).__name__}: {exc})"
            return FileResult(path, language, "error", reason)
    try:
        raw, facts, parsed = _run_front_end(path, text, language, target, cache, options.project)
    except Exception as exc:  # a front-end or rule bug must not take the whole run down
        reason = f"internal error in the {language.upper()} checks ({type(exc).__name__}: {exc}); no findings"
        return FileResult(path, language, "error", reason)
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
    from .autofix import attach_fixes
    from .findings import dedupe
    from .rules.registry import get
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
    return attach_fixes(findings, text), suppressed


def check_source(path: str, text: str, options: CheckOptions) -> list[Finding]:
    """Findings for one file's text (language from the suffix); [] for files that are not NKI/CUDA."""
    try:
        return check_text(path, text, options).findings
    except Exception:  # never raises: check_text already guards the front ends
        return []


# --- files and directories ---------------------------------------------------------------------

def decode(data: bytes) -> tuple[str, str | None]:
    """Text of a file's bytes and a note when it was not valid UTF-8 (decoded with U+FFFD)."""
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        start = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        line = data.count(b"\n", 0, start) + 1
        return (data.decode("utf-8-sig", errors="replace"),
                f"not valid UTF-8 (first bad byte on line {line}, offset {start}); "
                "decoded with replacement characters")


class NotRegularFile(Exception):
    """A FIFO, device, socket or directory, or a file over the size limit: never read."""


def read_regular(path: str, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most `max_bytes`. The file is opened non-blocking and
    checked with fstat on the open descriptor, so a FIFO (or a file swapped for one) never blocks."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode) or
                    stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "a directory"
                    if stat.S_ISDIR(st.st_mode) else "not a regular file")
            raise NotRegularFile(f"{kind}, not a regular file")
        if st.st_size > max_bytes:
            raise NotRegularFile(f"larger than max-file-bytes ({st.st_size:,} > {max_bytes:,} bytes)")
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            return fh.read(max_bytes + 1)
    finally:
        if fd >= 0:
            os.close(fd)


def check_file(path: str, options: CheckOptions) -> FileResult:
    """Read and check one file; every failure becomes the result's status and notes."""
    language = language_of(path)
    if language is None:
        reason = "not an NKI (.py) or CUDA (.cu, .cuh) file"
        return FileResult(path, None, "skipped", reason, notes=[f"{path}: {reason}; skipped"])
    data = _read(path, language, options)
    return data if isinstance(data, FileResult) else check_bytes(path, data, options)


def _read(path: str, language: str, options: CheckOptions) -> bytes | FileResult:
    """The file's bytes, or the result that says why it cannot be checked."""
    try:
        data = read_regular(path, options.max_file_bytes)
    except NotRegularFile as exc:
        reason = f"{exc}; not checked"
        too_big = str(exc).startswith("larger than")
        return FileResult(path, language, "skipped", reason, notes=[f"{path}: {reason}"],
                          unchecked=_size_limit_is_default(options) if too_big else True)
    except OSError as exc:
        return FileResult(path, language, "error", f"cannot read: {exc.strerror or exc}")
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        reason = "binary file (NUL bytes); not checked"
        return FileResult(path, language, "skipped", reason, notes=[f"{path}: {reason}"], unchecked=True)
    return data


def _size_limit_is_default(options: CheckOptions) -> bool:
    """A file over the default limit was not checked by accident; over a limit the user chose, on purpose."""
    return options.max_file_bytes == DEFAULT_MAX_FILE_BYTES


def check_bytes(path: str, data: bytes, options: CheckOptions) -> FileResult:
    """Check a file's bytes (already read and found not binary)."""
    text, note = decode(data)
    result = check_text(path, text, options)
    if note:
        result.notes.insert(0, f"{path}: {note}")
    return result


def _walk(directory: str, options: CheckOptions) -> list[str]:
    # deferred: pathspec loads only for directory walks
    from .check_walk import walk

    return walk(directory, language_of, list(options.exclude) + list(options.extend_exclude), options.root,
                options.respect_gitignore)


def collect_files(paths: list[str], options: CheckOptions) -> tuple[list[str], list[str]]:
    """(files to check, error messages for paths that do not exist). Explicit files are always kept."""
    files, errors, seen = [], [], set()
    for p in paths:
        if os.path.isdir(p):
            candidates = _walk(p, options)
        elif os.path.exists(p):
            candidates = [p]
        else:
            errors.append(f"{p}: no such file or directory")
            continue
        for f in candidates:
            key = os.path.realpath(f)
            if key not in seen:
                seen.add(key)
                files.append(f)
    return files, errors


def check_paths(paths: list[str], options: CheckOptions, check_one=None, *, cache=None, jobs: int | None = 1,
                lazy: bool = False) -> CheckReport:
    """Check files and directories (recursively, skipping hidden dirs, virtualenvs, node_modules, excluded
    and git-ignored paths).

    `check_one(path, options)` replaces `check_file` (`check --fix` checks and fixes; then files are checked
    one by one, without cache or pool). `cache` (a `check_cache.CheckCache`) answers unchanged files;
    the rest are checked by a pool of `jobs` processes (None: the usable cores, as the CLI does) when there
    is enough work, in-process otherwise. The default, 1, never forks: a library caller may have threads
    (a language server), and forking those is unsafe. With `lazy`, findings from the cache or a worker
    stay `LazyFinding`s."""
    report = CheckReport(target=options.target)
    files, report.errors = collect_files(paths, options)
    if check_one is not None:
        if options.project is None and len(files) > 1:
            options = replace(options, project=build_project(files, options))
        for path in files:
            report.add(check_one(path, options))
        return report.finish()
    results: list[FileResult | None] = [None] * len(files)
    read: list[tuple[int, str, str, bytes]] = []  # index, path, language, bytes
    for i, path in enumerate(files):
        language = language_of(path)
        if language is None:
            results[i] = check_file(path, options)
            continue
        data = _read(path, language, options)
        if isinstance(data, FileResult):
            results[i] = data
            continue
        read.append((i, path, language, data))
    # what a file's findings depend on besides its own bytes: a version inferred from the pins, and the other
    # files of the project (roles, call sites, imported constants). An entry records the project it was
    # checked in (a digest of every NKI file's bytes: unchanged tree, entry good) and the file's slice of it
    # (`_context_digest`): after an edit elsewhere, an entry whose slice did not change is still good.
    nki_sources = {path: data for _, path, language, data in read if language == "nki"}
    in_project = options.project is None and len(nki_sources) > 1
    project_key = _project_key(nki_sources) if in_project else ""
    todo: list[tuple[int, str, bytes, str | None]] = []  # index, path, bytes, cache key
    stale: list[tuple[int, str, bytes, str, dict]] = []  # ... and an entry checked in another project
    for i, path, language, data in read:
        key = cache.key(path, data + _inferred_version_key(path, language, options)) if cache is not None else None
        entry = cache.get(key) if cache is not None else None
        if entry is not None and (language != "nki" or entry.get("project") == project_key):
            results[i] = FileResult.from_entry(entry, lazy=lazy)
        elif entry is not None and in_project and entry.get("context") == _UNREAD:
            entry["project"] = project_key  # its result read nothing of the project: good in this one too
            _store(cache, key, entry)
            results[i] = FileResult.from_entry(entry, lazy=lazy)
        elif entry is not None and in_project and entry.get("context"):
            stale.append((i, path, data, key, entry))
        else:
            todo.append((i, path, data, key))
    if todo or stale:
        # deferred: the pool module loads only when files must be checked
        from .check_pool import batch_gc, refreeze

        with batch_gc():
            known = _cached_indexes(nki_sources, cache) if in_project and cache is not None else {}
            if not (in_project and _check_affine(nki_sources, known, todo, stale, options, results, cache, jobs,
                                                 lazy, project_key)):
                if in_project:  # the model is built only when some file must be checked
                    languages = {language_of(p) for _, p, _, _ in todo}
                    options = replace(options, project=_project_of(nki_sources, jobs, languages, cache, known))
                    refreeze()
                for i, path, data, key, entry in stale:
                    if entry["context"] == _context_digest(options.project, path):
                        entry["project"] = project_key  # the next unchanged run finds it at once
                        _store(cache, key, entry)
                        results[i] = FileResult.from_entry(entry, lazy=lazy)
                    else:
                        cache.reject()
                        todo.append((i, path, data, key))
                todo.sort()
                _check_all(todo, options, results, cache, jobs, lazy, project_key)
    for result in results:
        report.add(result)
    if cache is not None and cache.problem:
        report.notes.append(cache.problem)
    return report.finish()


def _project_key(sources: dict[str, bytes]) -> str:
    """A digest of every NKI file checked together: a file's findings may read its neighbours."""
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    for path in sorted(sources):
        h.update(path.encode("utf-8", "surrogateescape") + b"\0" + hashlib.blake2b(sources[path]).digest())
    return h.hexdigest()


# the context an entry records when its file's result read nothing of the project (a file skipped, not checked):
# good in any project
_UNREAD = "-"


def _entry_context(project, path: str, status: str) -> str:
    return _context_digest(project, path) if status == "checked" else _UNREAD


def _context_digest(project, path: str) -> str:
    """A digest of all the project model tells one file's checks (`Project.context`: its module's facts,
    its functions' roles, callers, call-site facts and guards, imported constants, missing imports); ""
    outside a project."""
    if project is None:
        return ""
    # deferred: only a check in a project of several files needs it
    from .project import context_digest

    return context_digest(project.context(path))


def _project_of(sources: dict[str, bytes], jobs: int | None = 1, languages: set | frozenset = frozenset(),
                cache=None, known: dict | None = None):
    """The project model of `sources`. Each module's index comes from `cache` when it has it (an edit re-indexes
    the edited file only); the others are indexed by a pool, with enough bytes and cores (their syntax trees
    stay there: each file's rules parse it again, in parallel) while this process loads the engine for
    `languages`, then indexes the modules no worker has started itself, else here: this process keeps the trees
    of what it indexed for the rules (forked workers inherit them). `known`: the indexes already read from `cache`."""
    # deferred: the project model loads only when files must be checked
    from .check_pool import MIN_PARALLEL_INDEX_BYTES, run_parallel, usable_cores, worth_a_pool
    from .project import Project, index_module

    if known is None:
        known = _cached_indexes(sources, cache) if cache is not None else {}
    else:
        known = dict(known)
    missing = {path: data for path, data in sources.items() if path not in known}
    jobs = usable_cores() if jobs is None else jobs
    if not worth_a_pool([len(d) for d in missing.values()], jobs, MIN_PARALLEL_INDEX_BYTES):
        for path, data in missing.items():
            known[path] = index_module(path, decode(data)[0], keep_tree=True)
            _store_index(cache, path, data, known[path])
    else:
        def failed(path: str, exc: BaseException):  # a worker that died: index that file here
            info = index_module(path, decode(missing[path])[0])
            _store_index(cache, path, missing[path], info)
            return info

        def here(item: tuple[str, bytes]):  # what no worker had started once the engine was loaded: trees kept
            path, data = item
            info = index_module(path, decode(data)[0], keep_tree=True)
            _store_index(cache, path, data, info)
            return info

        numpy = any(b"numpy" in d for d in sources.values())
        modules = run_parallel(_index_of, list(missing.items()), cache, jobs, failed,
                               meanwhile=lambda: _load_engine(languages, numpy), helper=here)
        known.update(zip(missing, modules))
    # in the order of `sources`, as Project.build: the first of two alike module names keeps it
    return Project(known[path] for path in sources)


def _check_affine(sources: dict[str, bytes], known: dict, todo: list, stale: list, options: CheckOptions,
                  results: list, cache, jobs: int | None, lazy: bool, project_key: str) -> bool:
    """A project's files indexed and checked by one set of forked workers (check_pool.run_affine): each checks
    first the files it indexed, with the syntax trees it kept, so a file is parsed by Python once in all, where
    an index pool and a check pool parsed most files twice. The engine loads here before they fork (they inherit
    it); each worker builds the project model from every module's index; a stale entry (checked in another
    project) is kept when its worker finds the file's slice of the project unchanged. False, with nothing done,
    where it does not apply: no fork, too little to check or to index for a pool (`_project_of` and
    `_check_all` do it then)."""
    import multiprocessing

    # deferred: the pool module loads only when files must be checked
    from .check_pool import refreeze, run_affine, usable_cores, worth_a_pool

    jobs = usable_cores() if jobs is None else jobs
    work = [(i, path, data, key, None) for i, path, data, key in todo] + list(stale)
    missing = [(path, data) for path, data in sources.items() if path not in known]
    if "fork" not in multiprocessing.get_all_start_methods() or not worth_a_pool([len(w[2]) for w in work], jobs) \
            or not worth_a_pool([len(data) for _, data in missing], jobs):
        return False

    def index_failed(path: str, exc: BaseException):  # a worker that died: index that module here
        # deferred: the project model loads only when files must be checked
        from .project import index_module

        info = index_module(path, decode(sources[path])[0])
        _store_index(cache, path, sources[path], info)
        return info

    def check_failed(path: str, exc: BaseException) -> tuple[dict, None]:
        return FileResult(path, language_of(path), "error",
                          f"internal error: the worker checking it failed ({type(exc).__name__}: {exc})").to_entry(), None

    _load_engine({language_of(w[1]) for w in work}, any(b"numpy" in w[2] for w in work))
    refreeze()  # the engine's modules: the workers' collections never walk them
    shared = replace(options, project=_SHARED)
    _AFFINE[0] = (list(sources), known, [path for path, _ in missing], cache, project_key)
    _KEYED[0] = cache is not None
    try:
        answers = run_affine(_index_kept, missing, _affine_setup, _affine_entry,
                             [(path, data, shared, old, key) for _, path, data, key, old in work], jobs,
                             index_failed, check_failed)
    finally:
        _AFFINE[0], _KEYED[0] = None, True
    for (i, _, _, _, old), (entry, problem) in zip(work, answers):
        if problem and cache.problem is None:
            cache.problem = problem
        if old is not None:
            if entry is None:  # its slice of the project did not change: the entry stands (the worker stored it)
                old["project"] = project_key
                results[i] = FileResult.from_entry(old, lazy=lazy)
                continue
            cache.reject()
        entry["project"] = project_key
        results[i] = FileResult.from_entry(entry, lazy=lazy)
    return True


# What `_check_affine`'s forked workers inherit: (every NKI path in order, indexes read from the cache, the paths
# to index, the cache, the project's key); and, in a worker, the modules it indexed itself, with their trees.
_AFFINE: list = [None]
_KEPT: dict = {}


def _index_kept(item: tuple[str, bytes]):
    """`_check_affine`'s first job in a worker: one module's index, kept here with its syntax tree; what is sent
    to the other workers is the index without the tree."""
    path, data = item
    # deferred: light, and already loaded in a forked worker
    from .check_pool import refreeze
    from .project import index_module

    info = index_module(path, decode(data)[0], keep_tree=True)
    _store_index(_AFFINE[0][3], path, data, info)
    _KEPT[path] = info
    refreeze()  # the tree lives on: out of the collector's reach at once, not walked by a collection first
    return replace(info, tree=None, tree_text=None)


def _affine_setup(indexed: list, mine: set[int]) -> None:
    """In a worker between the phases: the project model of every module (each worker builds the same one), with
    the trees of the modules this worker indexed."""
    # deferred: light, and already loaded in a forked worker
    from .check_pool import refreeze
    from .project import Project

    order, known, paths = _AFFINE[0][:3]
    modules = dict(known)
    for i, (path, info) in enumerate(zip(paths, indexed)):
        modules[path] = _KEPT.pop(path) if i in mine else info
    _KEPT.clear()
    _FORKED_PROJECT[0] = Project(modules[path] for path in order)
    refreeze()  # what every file reads, as a forked worker inherits it frozen


def _affine_entry(item: tuple[str, bytes, CheckOptions, dict | None, str | None]) -> tuple[dict | None, str | None]:
    """`_check_affine`'s second job: one file's entry, stored in the cache here (in parallel, not one by one by the
    parent at the end); None for a stale entry (`old`) whose file's slice of the project is the one it records, the
    entry stored again for this project. With what went wrong writing the cache, if anything."""
    path, data, options, old, key = item
    cache, project_key = _AFFINE[0][3:]
    if old is not None and old["context"] == _context_digest(_FORKED_PROJECT[0], path):
        old["project"] = project_key  # the next unchanged run finds it at once
        _store(cache, key, old)
        return None, cache.problem
    entry = _entry_of((path, data, options))
    entry["project"] = project_key
    _store(cache, key, entry)
    return entry, cache.problem if cache is not None else None


def _index_of(item: tuple[str, bytes, Any]):
    """A pool worker's job: one module's index (plain data; its syntax tree is not sent back), stored in the
    cache (the third item) when there is one."""
    path, data, cache = item
    # deferred: light, and already loaded in a forked worker
    from .check_pool import file_done
    from .project import index_module

    info = index_module(path, decode(data)[0])
    _store_index(cache, path, data, info)
    file_done()
    return info


def _index_key(cache, path: str, data: bytes) -> str:
    """A module's index depends on its bytes, its path, the `__init__.py` files above it (its dotted name)
    and the Python that parses it (its grammar); the tool's code keys the cache folder."""
    import sys

    # deferred: the project model loads only when files must be checked
    from .project.index import module_name

    name, package = module_name(path)
    return cache.key(path, f"index\0{name}\0{package}\0{sys.version}\0".encode("utf-8", "surrogateescape") + data)


def _cached_indexes(sources: dict[str, bytes], cache) -> dict:
    # deferred: the project model loads only when files must be checked
    from .project.index import module_from_json

    out = {}
    for path, data in sources.items():
        entry = cache.read(_index_key(cache, path, data))
        if entry is not None:
            try:
                out[path] = module_from_json(entry["index"])
            except (KeyError, TypeError, ValueError):  # a damaged entry is a miss
                continue
    return out


def _store_index(cache, path: str, data: bytes, info) -> None:
    if cache is None:
        return
    # deferred: the project model loads only when files must be checked
    from .check_cache import ENTRY_VERSION
    from .project.index import module_to_json

    cache.put(_index_key(cache, path, data), {"v": ENTRY_VERSION, "index": module_to_json(info)})


def _inferred_version_key(path: str, language: str, options: CheckOptions) -> bytes:
    """An NKI file's target version when it comes from the project's pins, not the settings (which key the
    cache folder): a changed pin must not serve results checked for the old version."""
    if language != "nki" or options.nki_version:
        return b""
    return ("\0nki-version=" + resolve_nki_version(None, path).version).encode()


def _check_all(todo, options: CheckOptions, results: list, cache, jobs: int | None, lazy: bool,
               project_key: str = "") -> None:
    # deferred: the pool module loads only when files must be checked
    from .check_pool import refreeze, run_parallel, usable_cores, worth_a_pool

    jobs = usable_cores() if jobs is None else jobs
    if worth_a_pool([len(d) for _, _, d, _ in todo], jobs):
        def failed(path: str, exc: BaseException) -> dict:
            return FileResult(path, language_of(path), "error",
                              f"internal error: the worker checking it failed ({type(exc).__name__}: {exc})").to_entry()

        _load_engine({language_of(p) for _, p, _, _ in todo}, any(b"numpy" in d for _, _, d, _ in todo))
        refreeze()  # the engine's modules too: the workers' collections never walk them
        shared = options
        if options.project is not None:
            _FORKED_PROJECT[0], shared = options.project, replace(options, project=_SHARED)
        _KEYED[0] = cache is not None
        try:
            entries = run_parallel(_entry_of, [(p, d) for _, p, d, _ in todo], shared, jobs, failed)
        finally:
            _FORKED_PROJECT[0], _KEYED[0] = None, True
        for (i, _, _, key), entry in zip(todo, entries):
            entry["project"] = project_key
            _store(cache, key, entry)
            results[i] = FileResult.from_entry(entry, lazy=lazy)
        return
    # deferred: the pool module loads only when files must be checked (already loaded here)
    from .check_pool import file_done

    for i, path, data, key in todo:
        result = check_bytes(path, data, options)
        result.parsed = None  # a report of many files keeps findings, not every file's syntax model
        if cache is not None:
            _store(cache, key, {**result.to_entry(), "project": project_key,
                                "context": _entry_context(options.project, path, result.status)})
        results[i] = result
        file_done()


def _load_engine(languages: set[str | None], numpy: bool = False) -> None:
    """Import the front ends and rules once, before the pool forks, so workers start with them loaded
    instead of each importing them again (CPU time on a shared machine). `numpy`: some file names NumPy,
    which NKI518 imports to look its attributes up (~0.1 s in each worker otherwise)."""
    # deferred: only a run with files to check pays for the engine
    from . import autofix, findings, suppress  # noqa: F401

    if "nki" in languages:
        # deferred: a language's grammar and rules load only when a file of it is checked (start-up time)
        from .parse import nki  # noqa: F401
        from .rules import nki_rules  # noqa: F401

        if numpy:
            # deferred: only for files that name NumPy (NKI518 reads its attributes)
            import numpy as _numpy  # noqa: F401
    if "cuda" in languages:
        # deferred: a language's grammar and rules load only when a file of it is checked (start-up time)
        from .parse import cuda  # noqa: F401
        from .rules import cuda_rules  # noqa: F401


# The project model handed to forked pool workers by inheritance, not pickled with every file's job.
_FORKED_PROJECT: list = [None]
_SHARED = "@forked-project"
# whether the workers' entries go to a cache (which keys them with the file's slice of the project), likewise
_KEYED: list = [True]


def _entry_of(item: tuple[str, bytes, CheckOptions]) -> dict:
    """A pool worker's job: one file's result as its JSON entry."""
    path, data, options = item
    # deferred: light, and already loaded in a forked worker
    from .check_pool import file_done

    if options.project == _SHARED:  # a spawned (not forked) worker has none: each file alone
        options = replace(options, project=_FORKED_PROJECT[0])
    entry = check_bytes(path, data, options).to_entry()
    if _KEYED[0]:  # the worker has the project; the parent keys the entry with the file's slice of it
        entry["context"] = _entry_context(options.project, path, entry["status"])
    file_done()
    return entry


def _store(cache, key: str | None, entry: dict) -> None:
    # errors and crashes are checked again next time: they may not recur, and must stay loud
    if cache is not None and key is not None and entry["status"] != "error" and not entry.get("crashed"):
        cache.put(key, entry)
