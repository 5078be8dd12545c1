"""The `check` engine: static findings for NKI and CUDA files, with selection and suppressions.

`check_source` checks one text (the language server calls it on every change); `check_paths` walks
files and directories for the CLI. Neither raises on bad input: unreadable, binary, oversized or
undecodable files become notes/errors in the report, and a front end or rule that crashes becomes a
note for that file.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from .autofix import attach_fixes
from .config import DEFAULT_MAX_FILE_BYTES
from .findings import Finding, Severity
from .hardware import DEFAULT_TARGET
from .rules.registry import all_rules
from .rules.registry import get
from .hardware import get_target
from .findings import dedupe
from .suppress import UNUSED_RULE, apply_suppressions, parse_suppressions, unused_suppressions

NKI_SUFFIXES = (".py",)
CUDA_SUFFIXES = (".cu", ".cuh")
SKIP_DIRS = {".venv", "venv", "node_modules", "__pycache__", "site-packages"}
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

    def status_json(self) -> dict[str, Any]:
        return {"path": self.path, "language": self.language, "status": self.status,
                "reason": self.reason or None, "findings": len(self.findings),
                "suppressed": len(self.suppressed)}


@dataclass
class CheckReport:
    findings: list[Finding] = field(default_factory=list)  # sorted by file, line, column, rule
    files_checked: int = 0
    files_skipped: int = 0
    notes: list[str] = field(default_factory=list)
    cuda_facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # unreadable files, missing paths
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
                "suppressed": len(self.suppressed), "notes": len(self.notes), "errors": len(self.errors)}


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

    rules = all_rules()
    return [s for s in selectors if not any(_selector_matches(s, r.id, r.name) for r in rules)]


def _relative(path: str, root: str | None) -> str:
    if root:
        try:
            return Path(path).absolute().relative_to(Path(root).absolute()).as_posix()
        except ValueError:
            pass
    return Path(path).as_posix()


def _glob_match(path: str, root: str | None, pattern: str) -> bool:
    rel = _relative(path, root)
    return fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(Path(path).name, pattern)


def file_ignores(path: str, options: CheckOptions) -> list[str]:
    out: list[str] = []
    for pattern, selectors in options.per_file_ignores.items():
        if _glob_match(path, options.root, pattern):
            out.extend(selectors)
    return out


@lru_cache(maxsize=64)
def _severity_overrides(items: tuple[tuple[str, str], ...]) -> dict[str, Severity]:
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
    return Project.build(sources)


def check_text(path: str, text: str, options: CheckOptions, cache=None) -> FileResult:
    """Check one file's text; the result says whether it was checked, skipped or failed, and why.

    `cache` (a `parse.reuse.ParseCache`, one per document) makes repeated checks of an edited NKI
    file incremental; the findings are those of a cold check."""
    language = language_of(path)
    if language is None:
        return FileResult(path, None, "skipped", "not an NKI (.py) or CUDA (.cu, .cuh) file")
    if len(text) > options.max_file_bytes:
        reason = (f"larger than max-file-bytes ({len(text):,} > {options.max_file_bytes:,}); "
                  "not checked")
        return FileResult(path, language, "skipped", reason, notes=[f"{path}: {reason}"])
    try:
        target = get_target(options.target)
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
                      parsed=parsed)


def _post_process(path: str, text: str, language: str, raw: list[Finding],
                  options: CheckOptions) -> tuple[list[Finding], list[Finding]]:
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
    if sups and enabled(UNUSED_RULE):
        unused = unused_suppressions(sups, path, language, is_enabled=enabled)
        # NA100 itself can be silenced on its line (`# noqa: NA100` or bare `# noqa`).
        findings += [f for f in unused if not sups[f.line].matches(UNUSED_RULE)]
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
    try:
        data = read_regular(path, options.max_file_bytes)
    except NotRegularFile as exc:
        reason = f"{exc}; not checked"
        return FileResult(path, language, "skipped", reason, notes=[f"{path}: {reason}"])
    except OSError as exc:
        return FileResult(path, language, "error", f"cannot read: {exc.strerror or exc}")
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        reason = "binary file (NUL bytes); not checked"
        return FileResult(path, language, "skipped", reason, notes=[f"{path}: {reason}"])
    text, note = decode(data)
    result = check_text(path, text, options)
    if note:
        result.notes.insert(0, f"{path}: {note}")
    return result


def _walk(directory: str, options: CheckOptions) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = sorted(
            d for d in dirnames
            if not d.startswith(".") and d not in SKIP_DIRS
            and not os.path.exists(os.path.join(dirpath, d, "pyvenv.cfg"))
            and not any(_glob_match(os.path.join(dirpath, d), options.root, p) for p in options.exclude)
        )
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            if language_of(name) and not any(_glob_match(full, options.root, p) for p in options.exclude):
                out.append(full)
    return out


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


def check_paths(paths: list[str], options: CheckOptions, check_one=None) -> CheckReport:
    """Check files and directories (recursively, skipping hidden dirs, virtualenvs, node_modules).
    `check_one(path, options)` replaces `check_file` (`check --fix` checks and fixes)."""
    report = CheckReport(target=options.target)
    files, report.errors = collect_files(paths, options)
    if options.project is None and len(files) > 1:
        options = replace(options, project=build_project(files, options))
    for path in files:
        report.add((check_one or check_file)(path, options))
    return report.finish()
