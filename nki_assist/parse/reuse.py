"""Work kept between versions of one document: the last tree-sitter tree and the facts of each function.

The language server checks a file on every edit. Most edits touch one kernel, so `ParseCache` lets the
front end (1) reparse incrementally (`tree.edit` + `parse(src, old_tree)`: tree-sitter re-reads only the
changed region) and (2) reuse the facts of every function whose text, position, decorator, imports and
the values of the module constants it names are unchanged. A function's facts depend on nothing else,
so a reused fact is the fact a cold parse would make; tests/nki/test_incremental.py checks that with
random edits. The `check` CLI never passes a cache: every run is cold.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix of `a` and `b` (binary search over memcmp'd slices)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid:] == b[len(b) - mid:]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _point(src: bytes, offset: int) -> tuple[int, int]:
    """tree-sitter point (row, byte column) of a byte offset."""
    return src.count(b"\n", 0, offset), offset - (src.rfind(b"\n", 0, offset) + 1)


def text_edit(old: bytes, new: bytes) -> dict[str, Any] | None:
    """The single edit turning `old` into `new`, as `Tree.edit` keyword arguments; None when equal."""
    if old == new:
        return None
    start = _common_prefix(old, new)
    tail = _common_suffix(old, new, min(len(old), len(new)) - start)
    old_end, new_end = len(old) - tail, len(new) - tail
    return {"start_byte": start, "old_end_byte": old_end, "new_end_byte": new_end,
            "start_point": _point(old, start), "old_end_point": _point(old, old_end),
            "new_end_point": _point(new, new_end)}


class ParseCache:
    """One document's reusable work. Not shared between documents; one parse (or check) at a time uses it."""

    def __init__(self) -> None:
        self._src: bytes | None = None
        self._tree: Any = None
        self._facts: dict[Hashable, Any] = {}  # function key -> facts of the last parse
        self._next: dict[Hashable, Any] = {}  # facts of the parse in progress
        self._derived: dict[Hashable, Any] = {}  # values computed from a function's text (same lifetime)
        self._derived_next: dict[Hashable, Any] = {}
        # held by a parse, and by `check_text` over its parse and rules (the rules remember findings on the
        # reused kernels): another thread finding it held runs cold instead of waiting
        self.lock = threading.RLock()
        self.reparses = self.full_parses = self.hits = self.misses = 0
        # work of the layers above kept for this document (the project model's Python-level pass)
        self.extra: dict[str, Any] = {}

    def parse(self, parser, src: bytes):
        """The tree of `src`, reparsed incrementally from the previous version when there is one.

        A tree with syntax errors is parsed again from scratch: error recovery may depend on the old
        tree, and a cold check must see the same errors."""
        edit = text_edit(self._src, src) if self._tree is not None else None
        if self._tree is not None and edit is None:
            tree = self._tree  # the same text
        elif edit is not None:
            self._tree.edit(**edit)
            tree = parser.parse(src, self._tree)
            self.reparses += 1
            if tree.root_node.has_error:
                tree = parser.parse(src)
                self.full_parses += 1
        else:
            tree = parser.parse(src)
            self.full_parses += 1
        self._src, self._tree = src, tree
        self._next, self._derived_next = {}, {}
        return tree

    def facts(self, key: Hashable, make: Callable[..., Any], *args: Any) -> Any:
        """The facts for `key`: the previous parse's when it had the same key, else `make(*args)`."""
        value = self._facts.get(key)
        if value is None:
            self.misses += 1
            value = make(*args)
        else:
            self.hits += 1
        self._next[key] = value
        return value

    def derived(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """A value computed from text (e.g. the names a function's text reads), kept like the facts."""
        value = self._derived.get(key)
        if value is None:
            value = make()
        self._derived_next[key] = value
        return value

    def finish(self) -> None:
        """Keep only what the parse just made or used: memory follows the document, not its history."""
        self._facts, self._next = self._next, {}
        self._derived, self._derived_next = self._derived_next, {}
