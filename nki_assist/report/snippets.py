"""The source lines under a finding, as ruff's full output shows them (issue 44, case 9).

    k.py:2:7: NKI990 [error] BADPSUM seen on target trn2
      |
    2 | y = BADPSUM
      |     ^^^^^^^
      |

Files are read once per render (the bytes decoded as CPython would); a file that cannot be read, a finding
without a line or the stdin `<input>` get no snippet. Terminal control characters in the source are shown as
escapes, never sent to the terminal.
"""

from __future__ import annotations

from ..infra.redact import neutralise

MAX_LINES = 3  # of a finding spanning more lines: the first ones, then "..."
MAX_WIDTH = 200


class Sources:
    """Lines of the files a report names, read on first use."""

    def __init__(self):
        self._lines: dict[str, list[str] | None] = {}

    def lines(self, path: str | None) -> list[str] | None:
        if not path or path == "<input>":
            return None
        if path not in self._lines:
            # deferred: only the text format with snippets reads sources
            from ..check import decode, read_regular
            from ..config import DEFAULT_MAX_FILE_BYTES

            try:
                self._lines[path] = decode(read_regular(path, DEFAULT_MAX_FILE_BYTES))[0].splitlines()
            except Exception:  # unreadable, gone, not a regular file: no snippet
                self._lines[path] = None
        return self._lines[path]


def snippet(f, sources: Sources) -> list[str]:
    """The framed source lines of finding `f` (empty when there is nothing to show)."""
    lines = sources.lines(f.file)
    if lines is None or f.line is None or not 1 <= f.line <= len(lines):
        return []
    last = min(f.end_line or f.line, len(lines), f.line + MAX_LINES - 1)
    width = len(str(last))
    pad = " " * width
    out = [f"{pad} |"]
    for n in range(f.line, last + 1):
        text = neutralise(lines[n - 1].expandtabs(4))[:MAX_WIDTH]
        out.append(f"{str(n).rjust(width)} | {text}".rstrip())
        if n == f.line and f.column:
            start = f.column - 1
            stop = (f.end_column - 1) if (f.end_line in (None, f.line) and f.end_column) else len(text)
            if start < len(text):
                out.append(f"{pad} | {' ' * start}{'^' * max(1, min(stop, len(text)) - start)}")
    if (f.end_line or f.line) > last:
        out.append(f"{pad} | ...")
    out.append(f"{pad} |")
    return out
