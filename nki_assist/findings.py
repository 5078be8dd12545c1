"""The one currency of nki-assist: a verified Finding (JSON contract in design.md)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from . import taxonomy
from .severity import Severity  # noqa: F401 (re-exported: the Finding contract's severity)


Source = Literal["static", "migration", "simulation", "numerics", "cost-model", "profile", "toolchain"]
Confidence = Literal["high", "medium", "low"]


class RelatedLocation(BaseModel):
    """Another place a finding refers to, e.g. the CUDA line a migration finding compares with."""

    model_config = ConfigDict(extra="forbid")
    file: str
    line: int = Field(ge=1)
    message: str = ""


class Edit(BaseModel):
    """Replace the text from (line, column) up to (end_line, end_column), exclusive, with `content`.

    Positions are 1-based, columns in characters (like Finding.column). `old_text` is the text the
    span held when the fix was computed: an editor must not apply the edit once it differs.
    """

    model_config = ConfigDict(extra="forbid")
    line: int = Field(ge=1)
    column: int = Field(ge=1)
    end_line: int = Field(ge=1)
    end_column: int = Field(ge=1)
    content: str
    old_text: str | None = None


Applicability = Literal["safe", "unsafe"]


class Fix(BaseModel):
    """A mechanical edit that resolves a finding (ruff-like). `safe` keeps the kernel's meaning and
    is applied by `check --fix`; `unsafe` may change results or performance and needs --unsafe-fixes."""

    model_config = ConfigDict(extra="forbid")
    message: str
    applicability: Applicability
    edits: list[Edit] = Field(min_length=1)


class Finding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = ""  # F1..Fn, assigned in priority order by assign_ids()
    rule: str
    name: str
    category: str
    criterion: str = ""  # derived from category when empty
    severity: Severity
    source: Source = "static"
    file: str | None = None
    line: int | None = Field(default=None, ge=1)  # 1-based
    end_line: int | None = Field(default=None, ge=1)
    column: int | None = Field(default=None, ge=1)  # 1-based, in characters
    end_column: int | None = Field(default=None, ge=1)
    message: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    fix: str | None = None
    est_speedup: float | None = None
    confidence: Confidence = "high"
    related: list[RelatedLocation] = Field(default_factory=list)
    autofix: Fix | None = None  # additive: left out of the JSON form when None

    @model_serializer(mode="wrap")
    def _omit_empty_autofix(self, handler) -> dict[str, Any]:
        data = handler(self)
        if data.get("autofix", True) is None:
            del data["autofix"]
        return data

    @model_validator(mode="after")
    def _check_taxonomy(self) -> "Finding":
        expected = taxonomy.criterion_of(self.category)
        if not self.criterion:
            self.criterion = expected
        elif self.criterion != expected:
            raise ValueError(f"category {self.category!r} belongs to {expected!r}, not {self.criterion!r}")
        if self.end_line is None and self.line is not None:
            self.end_line = self.line
        return self

    def sort_key(self) -> tuple:
        """Priority: severity, then criterion (correctness first), then estimated gain, then place."""
        return (
            self.severity.rank,
            taxonomy.criterion_rank(self.criterion),
            -(self.est_speedup or 0.0),
            self.file or "",
            self.line or 0,
            self.column or 0,
            self.rule,
        )

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def prioritize(findings: Iterable[Finding]) -> list[Finding]:
    """Sort by priority and number F1..Fn; returns new objects, inputs untouched."""
    ordered = sorted(findings, key=Finding.sort_key)
    return [f.model_copy(update={"id": f"F{i}"}) for i, f in enumerate(ordered, 1)]


def dedupe(findings: Iterable[Finding]) -> list[Finding]:
    """Drop exact repeats (same rule, file, line, message), keeping the first."""
    seen: set[tuple] = set()
    out = []
    for f in findings:
        key = (f.rule, f.file, f.line, f.column, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


# One finding per cause (issue 41): a rule that reports the same defect once per loop or per use
# (NKI203 eleven times for one `block_size // 128`) says it once, with the count and the other places.
_MAX_LINES_IN_MESSAGE = 8


_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?(def|class)[ \t]+([A-Za-z_]\w*)")


def function_scopes(text: str) -> Callable[[int], str | None] | None:
    """line -> qualified name of the innermost function around it ("<module>" outside every function); None
    for an empty text. A scan of `def`/`class` lines and indentation (lines inside triple-quoted strings are
    skipped), not `ast`: it runs beside the review's threads, where concurrent `ast` use has failed in CPython."""
    if not text:
        return None
    owner: list[str] = ["<module>"]  # index = line number
    stack: list[tuple[int, str, bool]] = []  # (indent, qualified name, is a function)
    in_string: str | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if in_string is None and stripped and not stripped.startswith("#"):
            indent = len(line) - len(line.lstrip())
            while stack and indent <= stack[-1][0]:
                stack.pop()
            m = _DEF.match(line)
            if m:
                prefix = stack[-1][1] + "." if stack else ""
                stack.append((indent, prefix + m.group(3), m.group(2) == "def"))
        funcs = [name for _, name, is_fn in stack if is_fn]
        owner.append(funcs[-1] if funcs else "<module>")
        for quote in ('"""', "'''"):
            if (in_string in (None, quote)) and line.count(quote) % 2 == 1:
                in_string = None if in_string == quote else quote

    def scope(line: int) -> str:
        return owner[line] if 0 < line < len(owner) else "<module>"

    return scope


def file_scopes(base: Path) -> Callable[[Finding], str | None]:
    """finding -> its enclosing function, reading its .py file (relative paths under `base`) once."""
    cache: dict[str | None, Callable[[int], str | None] | None] = {}

    def scope_of(f: Finding) -> str | None:
        if f.file not in cache:
            p = Path(f.file or "")
            p = p if p.is_absolute() else base / p
            try:
                text = p.read_text(encoding="utf-8", errors="replace") if p.suffix == ".py" else None
            except OSError:
                text = None
            cache[f.file] = function_scopes(text) if text is not None else None
        scope = cache[f.file]
        return scope(f.line) if scope is not None and f.line is not None else None

    return scope_of


def group_repeats(findings: Iterable[Finding],
                  scope_of: Callable[[Finding], str | None] | None = None) -> list[Finding]:
    """Merge identical findings: same rule, severity, file and message in the same function (`scope_of`;
    findings whose scope is unknown stay apart), or same rule and evidence["cause"] anywhere in one file. The
    first place keeps the finding; its message gains the count and the other lines, `related` lists them,
    evidence["occurrences"] and evidence["lines"] count them. Findings that carry an autofix stay apart: each
    line's edit applies on its own (`check --fix` skips a fix whose edits overlap another's)."""
    findings = list(findings)
    same = Counter(_what(f) for f in findings)
    groups: dict[tuple, list[int]] = {}
    for i, f in enumerate(findings):
        if same[_what(f)] < 2 or f.line is None or not f.file or f.autofix is not None:
            continue  # scope_of (a parse) is asked only where a repeat is possible
        cause = _cause(f)
        scope = _FILE if cause else (scope_of(f) if scope_of is not None else None)
        if scope is not None:
            groups.setdefault((*_what(f), scope), []).append(i)
    merged: dict[int, Finding] = {}
    dropped: set[int] = set()
    for key, idx in groups.items():
        if len(idx) < 2:
            continue
        members = sorted((findings[i] for i in idx), key=lambda f: (f.line or 0, f.column or 0))
        lines = sorted({m.line for m in members[1:] if m.line is not None} - {members[0].line})
        merged[idx[0]] = _merged(members, key[-1], lines)
        dropped.update(idx[1:])
    return [merged.get(i, f) for i, f in enumerate(findings) if i not in dropped]


_FILE = "<file>"


def _cause(f: Finding) -> str | None:
    """A rule's own name for the defect (evidence["cause"], e.g. NKI203's `block_size // 128`): findings with the
    same cause in one file are one finding, whatever loop or function they sit in."""
    cause = f.evidence.get("cause") if isinstance(f.evidence, dict) else None
    return str(cause) if cause else None


def _what(f: Finding) -> tuple:
    cause = _cause(f)
    return (f.rule, f.severity, f.file, ("cause", cause) if cause else f.message)


def _merged(members: list[Finding], scope: str, lines: list[int]) -> Finding:
    first = members[0]
    n = len(members)
    where = ("in this file" if scope == _FILE else "at module level" if scope == "<module>"
             else f"in `{scope}`")
    shown = ", ".join(str(x) for x in lines[:_MAX_LINES_IN_MESSAGE])
    more = f", +{len(lines) - _MAX_LINES_IN_MESSAGE} more" if len(lines) > _MAX_LINES_IN_MESSAGE else ""
    also = f"; also line{'s' if len(lines) > 1 else ''} {shown}{more}" if lines else ""
    message = f"{first.message} [{n} identical findings {where}{also}]"
    related = list(first.related) + [RelatedLocation(file=m.file or "", line=m.line, message="same finding")
                                     for m in members[1:] if m.line is not None]
    evidence = {**first.evidence, "occurrences": n, "lines": [m.line for m in members]}
    return first.model_copy(update={"message": message, "related": related, "evidence": evidence})
