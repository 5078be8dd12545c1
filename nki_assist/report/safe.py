"""User text made inert inside a markdown report: what a kernel's exception says is shown, never run.

Messages mix our markdown (code spans in backticks, emphasis) with text from user code, so the
markdown stays and only what could become HTML, a link or an image is escaped, outside code spans
(CommonMark shows a code span's content literally): `<` as `&lt;`, brackets as `\\[`/`\\]`, and a
`javascript:`/`vbscript:`/`data:` scheme with its colon as `&#58;`. Terminal control characters are
neutralised everywhere (`redact.neutralise`).
"""

from __future__ import annotations

import re

from ..infra.redact import defuse_schemes, neutralise

_TICKS = re.compile(r"`+")


def _escape(text: str) -> str:
    text = text.replace("<", "&lt;").replace("[", "\\[").replace("]", "\\]")
    return defuse_schemes(text)


def _code_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each code span: a backtick run closed by the next run of the same length."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(text)]
    spans, i = [], 0
    while i < len(runs):
        a, b = runs[i]
        close = next((j for j in range(i + 1, len(runs)) if runs[j][1] - runs[j][0] == b - a), None)
        if close is None:
            i += 1  # an unmatched run is a literal backtick
            continue
        spans.append((a, runs[close][1]))
        i = close + 1
    return spans


def md_safe(text: object) -> str:
    """`text` for a markdown report: its code spans kept, raw HTML, links and images escaped."""
    text = neutralise(str(text))
    out, pos = [], 0
    for a, b in _code_spans(text):
        out += [_escape(text[pos:a]), text[a:b]]
        pos = b
    out.append(_escape(text[pos:]))
    return "".join(out)
