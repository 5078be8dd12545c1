"""The one place where engine positions (1-based lines, 1-based character columns, end column
exclusive) become LSP positions (0-based lines, 0-based code units of the negotiated encoding,
UTF-16 for VS Code) and back.
"""

from __future__ import annotations

from typing import Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

UTF16 = PositionCodec(types.PositionEncodingKind.Utf16)


def _line_text(lines: Sequence[str], index: int) -> str:
    if 0 <= index < len(lines):
        return lines[index].rstrip("\r\n")
    return ""


def _units(codec: PositionCodec, text: str) -> int:
    if text.isascii():  # one code unit per character in UTF-8, UTF-16 and UTF-32 (the codec counts in Python)
        return len(text)
    return codec.client_num_units(text)


def to_lsp_position(lines: Sequence[str], line: int, column: int | None,
                    codec: PositionCodec = UTF16) -> types.Position:
    """1-based (line, character column) -> LSP Position; out-of-range values are clamped."""
    index = min(max(line - 1, 0), max(len(lines) - 1, 0))
    text = _line_text(lines, index)
    chars = len(text) if column is None else min(max(column - 1, 0), len(text))
    return types.Position(line=index, character=_units(codec, text[:chars]))


def to_lsp_range(lines: Sequence[str], line: int | None, column: int | None = None,
                 end_line: int | None = None, end_column: int | None = None,
                 codec: PositionCodec = UTF16) -> types.Range:
    """A finding's span as an LSP Range.

    No column: the line's text without indentation. No end column: to the end of the end line.
    A file-level finding (no line) sits at the start of the file.
    """
    if line is None:
        start = types.Position(line=0, character=0)
        return types.Range(start=start, end=start)
    index = min(max(line - 1, 0), max(len(lines) - 1, 0))
    text = _line_text(lines, index)
    if column is None:
        column = len(text) - len(text.lstrip()) + 1
    start = to_lsp_position(lines, line, column, codec)
    last = end_line if end_line and end_line >= line else line
    end = to_lsp_position(lines, last, end_column, codec)
    if end_column is None and last == line:
        end = types.Position(line=start.line, character=_units(codec, text.rstrip()))
    if (end.line, end.character) < (start.line, start.character):
        end = start
    return types.Range(start=start, end=end)


def from_lsp_position(lines: Sequence[str], position: types.Position,
                      codec: PositionCodec = UTF16) -> tuple[int, int]:
    """LSP Position -> 1-based (line, character column)."""
    index = position.line
    text = _line_text(lines, index)
    units = 0
    for chars, ch in enumerate(text):
        if units >= position.character:
            return index + 1, chars + 1
        units += codec.impl.code_units_for_char(ch)
    return index + 1, len(text) + 1
