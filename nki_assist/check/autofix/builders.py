"""One builder per fixable rule: (finding, source lines) -> Fix, or None when the edit is not
mechanical for this occurrence (a multi-line call, an unexpected spelling): no fix beats a guess.

Applicability: `safe` when the edit keeps the kernel's meaning (a renamed API, a deprecated alias,
an unused suppression code); `unsafe` when it changes results, scheduling or the NKI dialect and a
person should look at the diff (--unsafe-fixes, or the editor's quick fix).
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

from ...findings import Edit, Finding, Fix

from ..suppress import comment_match

Builder = Callable[[Finding, Sequence[str]], Fix | None]
BUILDERS: dict[str, Builder] = {}

_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*")


def builder(rule: str) -> Callable[[Builder], Builder]:
    def deco(fn: Builder) -> Builder:
        BUILDERS[rule] = fn
        return fn

    return deco


def _edit(lines: Sequence[str], line: int, start: int, end: int, content: str) -> Edit:
    """An edit of 0-based character offsets [start, end) of 1-based `line`, with its old text."""
    return Edit(line=line, column=start + 1, end_line=line, end_column=end + 1, content=content,
                old_text=lines[line - 1][start:end])


def _line(lines: Sequence[str], n: int | None) -> str | None:
    return lines[n - 1] if n is not None and 1 <= n <= len(lines) else None


def _span_text(f: Finding, lines: Sequence[str]) -> tuple[int, int, str] | None:
    """(line, 0-based start, text) of a single-line finding span."""
    text = _line(lines, f.line)
    if text is None or (f.end_line or f.line) != f.line or f.column is None:
        return None
    end = (f.end_column or len(text) + 1) - 1
    return f.line, f.column - 1, text[f.column - 1:max(end, f.column - 1)]


def _replace_attribute(f: Finding, lines: Sequence[str], old: str, new: str) -> Edit | None:
    """Replace the last component `old` of the dotted name that starts the finding's span."""
    span = _span_text(f, lines)
    if span is None:
        return None
    line, start, text = span
    m = _DOTTED.match(text)
    if m is None or not re.search(rf"(?:^|\.)\s*{re.escape(old)}$", m.group(0)):
        return None
    end = start + m.end()
    return _edit(lines, line, end - len(old), end, new)


def _replace_unique(lines: Sequence[str], line: int, start: int, end: int, old: str, new: str) -> Edit | None:
    """Replace `old` (a whole word) when it occurs exactly once in [start, end) of `line`."""
    text = _line(lines, line)
    if text is None:
        return None
    hits = [m for m in re.finditer(rf"\b{re.escape(old)}\b", text[start:end])]
    if len(hits) != 1:
        return None
    s = start + hits[0].start()
    return _edit(lines, line, s, s + len(old), new)


# --- loops -------------------------------------------------------------------------------------

@builder("NKI201")
def _affine_to_sequential(f: Finding, lines: Sequence[str]) -> Fix | None:
    loop_line, var = f.evidence.get("loop_line"), f.evidence.get("loop_var")
    text = _line(lines, loop_line if isinstance(loop_line, int) else None)
    if text is None:
        return None
    edit = _replace_unique(lines, loop_line, 0, len(text), "affine_range", "sequential_range")
    if edit is None:
        return None
    # Unsafe: it changes how the loop is scheduled; right when the carried dependency is real.
    title = f"Make loop `{var}` sequential (nl.sequential_range)" if var else "Make the loop sequential"
    return Fix(message=title, applicability="unsafe", edits=[edit])


@builder("NKI502")
def _loop_alias_to_range(f: Finding, lines: Sequence[str]) -> Fix | None:
    api = str(f.evidence.get("api") or "")
    name = api.rsplit(".", 1)[-1]
    span = _span_text(f, lines)
    if not name or span is None:
        return None
    line, start, text = span
    m = _DOTTED.match(text)
    if m is None or not re.search(rf"(?:^|\.)\s*{re.escape(name)}$", m.group(0)):
        return None
    # New NKI treats these as aliases of `range`: the same loop, spelled the supported way.
    return Fix(message=f"Replace `{api}` with `range`", applicability="safe",
               edits=[_edit(lines, line, start, start + m.end(), "range")])


# --- APIs renamed or removed between the dialects ----------------------------------------------

# rule -> api -> (new last component, applicability)
_RENAMES: dict[str, dict[str, tuple[str, str]]] = {
    "NKI501": {"nl.tile_size.psum_fmax": ("psum_bank_fmax", "safe"),
               # usable bytes per partition, not the total: values differ, so a person checks it
               "nl.tile_size.total_available_sbuf_size": ("sbuf_fmax_bytes", "unsafe")},
    "NKI503": {"nl.tile_size.psum_bank_fmax": ("psum_fmax", "safe")},
}


def _rename(f: Finding, lines: Sequence[str]) -> Fix | None:
    api = str(f.evidence.get("api") or "")
    if f.evidence.get("kwarg") is not None or api not in _RENAMES.get(f.rule, {}):
        return None
    new, applicability = _RENAMES[f.rule][api]
    edit = _replace_attribute(f, lines, api.rsplit(".", 1)[-1], new)
    if edit is None:
        return None
    return Fix(message=f"Rename to `{api.rsplit('.', 1)[0]}.{new}`", applicability=applicability, edits=[edit])


BUILDERS["NKI501"] = BUILDERS["NKI503"] = _rename


# --- the API surface at the target NKI version (rules/nki/api_surface.py) ---------------------------

@builder("NKI510")
def _closest_name(f: Finding, lines: Sequence[str]) -> Fix | None:
    """`nl.negate` -> the documented name the rule suggests (`nl.negative`): a person checks the meaning."""
    api, new = str(f.evidence.get("api") or ""), f.evidence.get("suggestion")
    if not new or not api:
        return None
    edit = _replace_attribute(f, lines, api.rsplit(".", 1)[-1], str(new))
    if edit is None:
        return None
    return Fix(message=f"Use `{api.rsplit('.', 1)[0]}.{new}`", applicability="unsafe", edits=[edit])


@builder("NKI511")
def _drop_keyword(f: Finding, lines: Sequence[str]) -> Fix | None:
    """Drop `kw=<value>` when the whole argument sits on the finding's line (the target rejects it)."""
    kw = f.evidence.get("kwarg")
    text = _line(lines, f.line)
    if not kw or text is None or kw == "dst":  # dst= on a value-returning call: bind the result instead
        return None
    m = re.compile(rf"(,\s*)?\b{re.escape(str(kw))}\s*=").search(text, max(0, (f.column or 1) - 3))
    if m is None:
        return None
    depth, i = 0, m.end()
    while i < len(text):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif c == "," and depth == 0:
            break
        elif c in "'\"#":
            return None  # strings and comments: not mechanical here
        i += 1
    if i >= len(text):
        return None  # the argument continues on the next line
    start, end = m.start(), i
    if m.group(1) is None:  # first argument: take the comma after it instead
        if text[i] != ",":
            return None
        end = i + 1 + (len(text[i + 1:]) - len(text[i + 1:].lstrip(" ")))
    return Fix(message=f"Drop `{kw}=`", applicability="unsafe", edits=[_edit(lines, f.line, start, end, "")])


_LEGACY_IMPORT = re.compile(r"^(\s*)from\s+neuronxcc\s+import\s+nki(\s+as\s+nki)?(\s*(?:#.*)?)$")
_LEGACY_MODULE = re.compile(r"\bneuronxcc\.nki\b")


@builder("NKI504")
def _legacy_import_to_new(f: Finding, lines: Sequence[str]) -> Fix | None:
    text = _line(lines, f.line)
    if text is None:
        return None
    m = _LEGACY_IMPORT.match(text)
    if m:
        start, end = len(m.group(1)), len(text) - len(m.group(3))
        edit = _edit(lines, f.line, start, end, "import nki")
    else:
        hits = list(_LEGACY_MODULE.finditer(text))
        if len(hits) != 1 or not re.match(r"\s*(import|from)\b", text):
            return None
        edit = _edit(lines, f.line, hits[0].start(), hits[0].end(), "nki")
    # Unsafe: the module's APIs now resolve to new NKI, whose semantics differ (docs/nki-rules.md).
    return Fix(message="Import from new `nki` instead of `neuronxcc.nki`", applicability="unsafe", edits=[edit])


@builder("NKI405")
def _fp8_e4m3(f: Finding, lines: Sequence[str]) -> Fix | None:
    span = _span_text(f, lines)
    if span is None:
        return None
    line, start, text = span
    edit = _replace_unique(lines, line, start, start + len(text), "float8_e4m3fn", "float8_e4m3")
    if edit is None:
        return None
    # Unsafe: float8_e4m3 saturates at 240, float8_e4m3fn at 448; larger values change.
    return Fix(message="Use float8_e4m3 (the FP8 format this target's Tensor Engine takes)",
               applicability="unsafe", edits=[edit])


# --- suppressions --------------------------------------------------------------------------------

@builder("NA100")
def _unused_suppression(f: Finding, lines: Sequence[str]) -> Fix | None:

    text = _line(lines, f.line)
    drop = {str(c) for c in (f.evidence.get("unused") or []) + (f.evidence.get("unknown") or [])}
    if text is None or not drop:
        return None
    language = "cuda" if (f.file or "").lower().endswith((".cu", ".cuh")) else "nki"
    m = comment_match(text, language)
    if m is None or m.group("codes") is None:
        return None
    codes = [c for c in re.split(r"[\s,]+", m.group("codes")) if c]
    keep = [c for c in codes if c not in drop]
    if keep == codes:
        return None
    if keep:
        start, end = m.span("codes")
        end = start + len(m.group("codes").rstrip())
        edit = _edit(lines, f.line, start, end, ", ".join(keep))
        message = f"Remove unused {', '.join(c for c in codes if c in drop)} from the suppression"
    else:
        edit = _drop_directive(lines, f.line, text, m, "//" if language == "cuda" else "#")
        message = "Remove the unused suppression comment"
    return Fix(message=message, applicability="safe", edits=[edit])


@builder("NA101")
def _unused_bare_suppression(f: Finding, lines: Sequence[str]) -> Fix | None:
    text = _line(lines, f.line)
    m = comment_match(text, "nki") if text is not None else None
    if m is None or m.group("codes") is not None:
        return None
    # Unsafe: ruff or flake8 may still need the bare `# noqa` for a finding of theirs on this line.
    return Fix(message="Remove the bare `# noqa`", applicability="unsafe",
               edits=[_drop_directive(lines, f.line, text, m, "#")])


def _drop_directive(lines: Sequence[str], line: int, text: str, m: re.Match, marker: str):
    """Remove a suppression directive; text after it in the same comment stays a comment."""
    if text[m.end():].strip():  # `# noqa: X  (why)` -> `#  (why)`: the note must not become code
        return _edit(lines, line, m.start(), m.end(), marker)
    return _edit(lines, line, len(text[:m.start()].rstrip()), m.end(), "")


FIXABLE_RULES = tuple(sorted(BUILDERS))


def attach_fixes(findings: list[Finding], text: str) -> list[Finding]:
    """Findings with `autofix` set where their rule has a builder and the edit is mechanical."""
    if not any(f.rule in BUILDERS and f.autofix is None for f in findings):
        return findings
    lines = text.split("\n")
    out = []
    for f in findings:
        if f.rule in BUILDERS and f.autofix is None:
            try:
                fix = BUILDERS[f.rule](f, lines)
            except Exception:  # a builder bug costs the fix, never the finding
                fix = None
            if fix is not None:
                f = f.model_copy(update={"autofix": fix})
        out.append(f)
    return out
