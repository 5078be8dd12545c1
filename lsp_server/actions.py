"""Code actions: "disable for this line" suppressions and mechanical quick fixes.

Quick-fix convention (see docs/lsp.md): a Finding whose fix is a mechanical edit carries
`evidence["edit"] = {"line": L, "col": C, "end_col": E, "new_text": "...", "old_text": "...",
"title": "..."}` (or a list of such dicts): 1-based line and character columns, `end_col`
exclusive, optional `end_line` (default `line`). `old_text`, when given, must still be the text in
that span, so a fix computed for an older version of the document is never applied to a newer one.
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


def _edit_specs(data: dict) -> list[dict]:
    edit = data.get("edit")
    specs = edit if isinstance(edit, list) else [edit] if isinstance(edit, dict) else []
    return [s for s in specs if isinstance(s, dict)]


def quick_fix_edits(data: dict, lines: Sequence[str], codec: PositionCodec = UTF16) -> list[types.TextEdit] | None:
    """TextEdits for a finding's mechanical fix, or None when it has none or no longer applies."""
    specs = _edit_specs(data)
    if not specs:
        return None
    edits = []
    for spec in specs:
        try:
            line, col, end_col = int(spec["line"]), int(spec["col"]), int(spec["end_col"])
            end_line = int(spec.get("end_line") or line)
            new_text = str(spec["new_text"])
        except (KeyError, TypeError, ValueError):
            return None
        if not (1 <= line <= end_line <= len(lines)):
            return None
        old = spec.get("old_text")
        if old is not None:
            current = "".join(lines[line - 1:end_line])
            first = col - 1
            last = sum(len(t) for t in lines[line - 1:end_line - 1]) + end_col - 1
            if current[first:last] != old:
                return None  # the document changed since the finding was computed
        edits.append(types.TextEdit(
            range=types.Range(start=to_lsp_position(lines, line, col, codec),
                              end=to_lsp_position(lines, end_line, end_col, codec)),
            new_text=new_text))
    return edits


_AFFINE = re.compile(r"\baffine_range\b")


def derived_edit(data: dict, lines: Sequence[str]) -> dict | None:
    """A mechanical fix the LSP can derive from a finding's evidence when it carries no `edit`:
    NKI201 (carried dependency in an affine_range loop) -> make that loop sequential_range."""
    line = data.get("loop_line")
    if data.get("rule") != "NKI201" or not isinstance(line, int) or not 1 <= line <= len(lines):
        return None
    text = lines[line - 1]
    matches = list(_AFFINE.finditer(text))
    if len(matches) != 1:
        return None  # the loop line changed since the check; no guessing
    m = matches[0]
    var = data.get("loop_var")
    return {"line": line, "col": m.start() + 1, "end_col": m.end() + 1, "old_text": "affine_range",
            "new_text": "sequential_range",
            "title": f"Make loop `{var}` sequential (nl.sequential_range)" if var else
                     "Make the loop sequential (nl.sequential_range)"}


def code_actions(uri: str, lines: Sequence[str], diagnostics: Sequence[types.Diagnostic],
                 codec: PositionCodec = UTF16) -> list[types.CodeAction]:
    actions: list[types.CodeAction] = []
    for diagnostic in diagnostics:
        data = diagnostic.data if isinstance(diagnostic.data, dict) else None
        if diagnostic.source != SOURCE or not data or not data.get("rule"):
            continue
        rule = str(data["rule"])
        if "edit" not in data and (derived := derived_edit(data, lines)) is not None:
            data = {**data, "edit": derived}
        edits = quick_fix_edits(data, lines, codec)
        if edits:
            title = next((s.get("title") for s in _edit_specs(data) if s.get("title")), None)
            actions.append(types.CodeAction(
                title=title or f"Fix {rule}: {data.get('fix') or 'apply the suggested edit'}",
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
