"""Code actions: a finding's mechanical fix (`Finding.autofix`, carried in the diagnostic's data),
"fix all safe problems" (`source.fixAll.nki-assist`) and "disable RULE for this line".

A fix's edits carry the text they replace (`old_text`), so a fix computed for an older version of
the document is never applied to a newer one.
"""

from __future__ import annotations

import re
from typing import Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from .diagnostics import SOURCE
from .positions import UTF16, to_lsp_position

_PY_NOQA = re.compile(r"#\s*noqa\b(?:\s*:\s*(?P<codes>[A-Za-z0-9_\-]+(?:[\s,]+[A-Za-z0-9_\-]+)*))?", re.I)
_CUDA_IGNORE = re.compile(r"//\s*nki-assist\s*:\s*ignore\b(?:\s*\[(?P<codes>[^\]]*)\])?", re.I)


def _codes(text: str | None) -> list[str]:
    return [c for c in re.split(r"[\s,]+", text or "") if c]


def suppression_edit(lines: Sequence[str], line: int, rule: str, language: str,
                     codec: PositionCodec = UTF16) -> types.TextEdit | None:
    """The edit that adds `rule` to the suppression comment of 1-based `line`; None if not needed."""
    if not 1 <= line <= len(lines):
        return None
    text = lines[line - 1].rstrip("\r\n")
    pattern = _PY_NOQA if language == "nki" else _CUDA_IGNORE
    match = pattern.search(text)
    if match:
        codes = _codes(match.group("codes"))
        if match.group("codes") is None or rule.upper() in (c.upper() for c in codes):
            return None  # a bare suppression already covers every rule, or the rule is listed
        end = match.end("codes")
        if language == "cuda":
            end = match.start("codes") + len(match.group("codes").rstrip())
        insert = f", {rule}" if codes else rule
        pos = to_lsp_position(lines, line, end + 1, codec)
        return types.TextEdit(range=types.Range(start=pos, end=pos), new_text=insert)
    stripped = text.rstrip()
    if stripped.endswith("\\"):
        return None  # a comment cannot follow a line continuation
    comment = f"# noqa: {rule}" if language == "nki" else f"// nki-assist: ignore[{rule}]"
    start = to_lsp_position(lines, line, len(stripped) + 1, codec)
    end = to_lsp_position(lines, line, len(text) + 1, codec)
    return types.TextEdit(range=types.Range(start=start, end=end), new_text=f"{stripped and '  '}{comment}")


FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"  # source.fixAll.nki-assist
KINDS = [types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, FIX_ALL_KIND]


def _text_at(lines: Sequence[str], line: int, column: int, end_line: int, end_column: int) -> str | None:
    if not (1 <= line <= end_line <= len(lines)):
        return None
    joined = "".join(lines[line - 1:end_line])
    first = column - 1
    last = sum(len(t) for t in lines[line - 1:end_line - 1]) + end_column - 1
    return joined[first:last] if 0 <= first <= last <= len(joined) else None


def fix_edits(fix: dict, lines: Sequence[str], codec: PositionCodec = UTF16) -> list[types.TextEdit] | None:
    """TextEdits of a fix (the JSON form of `nki_assist.findings.Fix`), or None when it is malformed
    or no longer matches the document."""
    edits = []
    for spec in fix.get("edits") or []:
        try:
            line, col = int(spec["line"]), int(spec["column"])
            end_line, end_col = int(spec["end_line"]), int(spec["end_column"])
            content = str(spec["content"])
        except (KeyError, TypeError, ValueError):
            return None
        current = _text_at(lines, line, col, end_line, end_col)
        if current is None or (spec.get("old_text") is not None and current != spec["old_text"]):
            return None  # the document changed since the finding was computed
        edits.append(types.TextEdit(
            range=types.Range(start=to_lsp_position(lines, line, col, codec),
                              end=to_lsp_position(lines, end_line, end_col, codec)),
            new_text=content))
    return edits or None


def _wants(only: Sequence[str] | None, kind: str) -> bool:
    """LSP: a kind matches a requested kind when it equals it or is a sub-kind of it."""
    if not only:
        return True
    return any(kind == k or kind.startswith(f"{k}.") for k in map(str, (getattr(k, "value", k) for k in only)))


wants_kind = _wants  # for the server's other code actions (the review's proven fix)


def quick_fixes(uri: str, lines: Sequence[str], diagnostics: Sequence[types.Diagnostic],
                codec: PositionCodec = UTF16) -> list[types.CodeAction]:
    actions: list[types.CodeAction] = []
    for diagnostic in diagnostics:
        data = diagnostic.data if isinstance(diagnostic.data, dict) else None
        if diagnostic.source != SOURCE or not data or not data.get("rule"):
            continue
        rule = str(data["rule"])
        fix = data.get("autofix") if isinstance(data.get("autofix"), dict) else None
        edits = fix_edits(fix, lines, codec) if fix else None
        if edits:
            unsafe = fix.get("applicability") == "unsafe"
            actions.append(types.CodeAction(
                title=f"{fix.get('message') or f'Fix {rule}'}" + (" (unsafe fix: review the change)" if unsafe else ""),
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                is_preferred=True,
                edit=types.WorkspaceEdit(changes={uri: edits}),
            ))
        language = data.get("language") or "nki"
        suppress = suppression_edit(lines, diagnostic.range.start.line + 1, rule, language, codec)
        if suppress is not None:
            actions.append(types.CodeAction(
                title=f"Disable {rule} for this line",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                edit=types.WorkspaceEdit(changes={uri: [suppress]}),
            ))
    return actions


def fix_all_edits(findings: Sequence, lines: Sequence[str], codec: PositionCodec = UTF16) -> list[types.TextEdit]:
    """Edits of every safe fix of the document's current findings that does not overlap another."""
    # deferred: the server answers `initialize` before the engine is imported (start-up time)
    from nki_assist.check import apply_fixes, selected_fixes

    fixes = [fx for _, fx in selected_fixes(findings)]
    if not fixes:
        return []
    _, applied = apply_fixes("".join(lines), fixes)
    out: list[types.TextEdit] = []
    for fx in applied:
        out += fix_edits(fx.model_dump(mode="json"), lines, codec) or []
    return out


def code_actions(uri: str, lines: Sequence[str], diagnostics: Sequence[types.Diagnostic],
                 codec: PositionCodec = UTF16, *, only: Sequence[str] | None = None,
                 findings: Sequence = ()) -> list[types.CodeAction]:
    """The actions for a request: quick fixes for its diagnostics, and "fix all" from `findings`
    (the analysis of the document's current version)."""
    actions = quick_fixes(uri, lines, diagnostics, codec) if _wants(only, types.CodeActionKind.QuickFix.value) else []
    fix_all = fix_all_edits(findings, lines, codec) if findings else []
    if fix_all and _wants(only, FIX_ALL_KIND):
        actions.append(types.CodeAction(title="nki-assist: fix all safe problems", kind=FIX_ALL_KIND,
                                        edit=types.WorkspaceEdit(changes={uri: fix_all})))
    if len(fix_all) > 1 and actions and _wants(only, types.CodeActionKind.QuickFix.value):
        actions.append(types.CodeAction(title=f"Fix all safe nki-assist problems in this file ({len(fix_all)})",
                                        kind=types.CodeActionKind.QuickFix,
                                        edit=types.WorkspaceEdit(changes={uri: fix_all})))
    return actions
