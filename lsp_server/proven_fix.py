"""The proven fix of a port review as a code action: a finding whose repair a re-run of every size proved
carries it as a unified diff (nki_assist/feedback/lead.py says where); after `nki-assist.reviewPort` the
server keeps those findings per kernel file and offers each diff as a quick fix on its line.

A hunk is applied only where its old lines still match the document exactly, so a diff computed for an
older version of the kernel is never applied to a newer one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from .positions import UTF16, to_lsp_position

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def hunks(diff: str) -> list[tuple[int, list[str], list[str]]] | None:
    """(first old line, old lines, new lines) per hunk of a one-file unified diff; None when malformed."""
    out: list[tuple[int, list[str], list[str]]] = []
    cur: tuple[int, list[str], list[str]] | None = None
    for raw in diff.splitlines():
        m = _HUNK.match(raw)
        if m:
            cur = (int(m.group(1)), [], [])
            out.append(cur)
        elif cur is None or raw.startswith(("--- ", "+++ ", "\\")):
            continue
        elif raw.startswith("-"):
            cur[1].append(raw[1:])
        elif raw.startswith("+"):
            cur[2].append(raw[1:])
        elif raw.startswith(" ") or raw == "":
            cur[1].append(raw[1:])
            cur[2].append(raw[1:])
        else:
            return None
    return out or None


def diff_edits(diff: str, lines: Sequence[str], codec: PositionCodec = UTF16) -> list[types.TextEdit] | None:
    """TextEdits applying `diff` to the document, or None when a hunk no longer matches it."""
    parsed = hunks(diff)
    if parsed is None:
        return None
    edits = []
    for start, old, new in parsed:
        first = max(start, 1)
        current = [ln.rstrip("\r\n") for ln in lines[first - 1:first - 1 + len(old)]]
        if current != old:
            return None  # the document changed since the review
        end = first + len(old)
        text = "".join(f"{t}\n" for t in new)
        if end > len(lines):  # the hunk reaches the last line: replace to the end of the document
            end_pos = to_lsp_position(lines, len(lines), len(lines[-1].rstrip("\r\n")) + 1, codec) if lines \
                else types.Position(line=0, character=0)
            if text and lines and not lines[-1].endswith("\n"):
                text = text[:-1]
        else:
            end_pos = types.Position(line=end - 1, character=0)
        edits.append(types.TextEdit(range=types.Range(start=types.Position(line=first - 1, character=0), end=end_pos),
                                    new_text=text))
    return edits


def proven_findings(review: Any) -> dict[str, list[Any]]:
    """Kernel file name -> the review's findings that carry a proven diff."""
    # deferred: the server answers `initialize` before the engine is imported (start-up time)
    from nki_assist.feedback.lead import proven_diff

    out: dict[str, list[Any]] = {}
    for f in getattr(review, "findings", None) or []:
        if getattr(f, "file", None) and proven_diff(f):
            out.setdefault(Path(f.file).name, []).append(f)
    return out


def proven_fix_actions(uri: str, path: str | None, lines: Sequence[str], proven: dict[str, list[Any]],
                       requested: types.Range, codec: PositionCodec = UTF16) -> list[types.CodeAction]:
    """A quick fix per proven diff of this document whose finding's line is in the requested range."""
    if not path or not proven:
        return []
    # deferred: the server answers `initialize` before the engine is imported (start-up time)
    from nki_assist.feedback.lead import proven_diff

    actions = []
    for f in proven.get(Path(path).name, []):
        line0 = (f.line or 1) - 1
        if not requested.start.line <= line0 <= requested.end.line:
            continue
        edits = diff_edits(proven_diff(f), lines, codec)
        if edits:
            actions.append(types.CodeAction(
                title=f"Apply the fix proven by re-running all sizes ({f.rule}, line {f.line})",
                kind=types.CodeActionKind.QuickFix, is_preferred=True,
                edit=types.WorkspaceEdit(changes={uri: edits})))
    return actions
