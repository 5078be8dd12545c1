"""Applying fixes to a text: non-overlapping edits in one pass (nki_assist/check/fix.py re-checks until stable)."""

from __future__ import annotations

from typing import Iterable

from ...findings import Edit, Finding, Fix

def _line_starts(text: str) -> list[int]:
    starts = [0]
    i = text.find("\n")
    while i != -1:
        starts.append(i + 1)
        i = text.find("\n", i + 1)
    return starts


def _offset(starts: list[int], text: str, line: int, column: int) -> int | None:
    if not 1 <= line <= len(starts):
        return None
    line_end = starts[line] - 1 if line < len(starts) else len(text)
    offset = starts[line - 1] + column - 1
    return offset if offset <= line_end else None


def selected_fixes(findings: Iterable[Finding], unsafe: bool = False) -> list[tuple[Finding, Fix]]:
    return [(f, f.autofix) for f in findings
            if f.autofix is not None and (unsafe or f.autofix.applicability == "safe")]


def apply_fixes(text: str, fixes: Iterable[Fix]) -> tuple[str, list[Fix]]:
    """(new text, the fixes applied). A fix is skipped when one of its edits overlaps an edit
    already taken, falls outside the text, or no longer finds its `old_text`."""
    starts = _line_starts(text)
    taken: list[tuple[int, int]] = []
    planned: list[tuple[int, int, str]] = []
    applied: list[Fix] = []
    for fix in sorted(fixes, key=lambda x: min((e.line, e.column) for e in x.edits)):
        spans = []
        for e in fix.edits:
            span = _span(starts, text, e)
            if span is None:
                break
            spans.append((*span, e.content))
        else:
            if any(_overlaps(s, e, taken) for s, e, _ in spans) or _overlaps_itself(spans):
                continue
            taken += [(s, e) for s, e, _ in spans]
            planned += spans
            applied.append(fix)
    for s, e, content in sorted(planned, reverse=True):
        text = text[:s] + content + text[e:]
    return text, applied


def _span(starts: list[int], text: str, e: Edit) -> tuple[int, int] | None:
    s = _offset(starts, text, e.line, e.column)
    end = _offset(starts, text, e.end_line, e.end_column)
    if s is None or end is None or end < s:
        return None
    if e.old_text is not None and text[s:end] != e.old_text:
        return None
    return s, end


def _overlaps(s: int, e: int, taken: list[tuple[int, int]]) -> bool:
    # Touching insertions at one point would be ambiguous in order, so they count as overlapping.
    return any(s < te and ts < e or s == e == ts or s == ts == te for ts, te in taken)


def _overlaps_itself(spans: list[tuple[int, int, str]]) -> bool:
    ordered = sorted((s, e) for s, e, _ in spans)
    return any(a[1] > b[0] for a, b in zip(ordered, ordered[1:]))
