"""Preconditions a kernel states in its docstring ("K and M are multiples of 128"): a documented contract
with the caller, so a floored trip count over such a size is a missing assert, not a silent defect."""

from __future__ import annotations

import re

_MULTIPLE = re.compile(r"\b(multiples?|divisible|aligned)\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.;!?])\s+|\n\s*\n")


def documented_multiple(doc: str, size: str, tile: int) -> str | None:
    """The docstring sentence that says `size` is a multiple of `tile` (size's last dotted part as a word,
    the tile as a number, and 'multiple'/'divisible'/'aligned' in one sentence), or None."""
    name = size.rsplit(".", 1)[-1].strip()
    if not doc or not name.isidentifier():
        return None
    for sentence in _SENTENCE.split(doc):
        flat = " ".join(sentence.split())
        if (_MULTIPLE.search(flat) and re.search(rf"(?<![\w.]){tile}(?!\w|\.\d)", flat)
                and re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", flat)):
            return flat
    return None
