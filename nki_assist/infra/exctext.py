"""An exception's message as user code raised it, read once and capped (issue 44, case 3).

A kernel may raise with hundreds of megabytes of text; the sandbox and the simulator keep the first line, at
most MESSAGE_CHARS characters, and use that one copy everywhere (the error, the finding, the traceback tail).
"""

from __future__ import annotations

MESSAGE_CHARS = 2000


def exception_message(exc: BaseException, limit: int = MESSAGE_CHARS) -> str:
    """The first line of `str(exc)`, at most `limit` characters (" [...]" marks a cut)."""
    try:
        text = str(exc)
    except Exception:  # a user __str__ that raises
        return "<the exception's message could not be read>"
    head = text[:limit * 4].strip()
    first = head.split("\n", 1)[0]
    cut = len(first) > limit or len(text) > limit * 4
    return first[:limit] + (" [...]" if cut else "")
