"""Shared-memory race analysis for CUDA101/CUDA102 over `CudaKernel.shared_accesses`.

Model: barriers (`__syncthreads`, `__syncwarp`, cooperative-groups `sync`, PTX `bar.sync`) order
everything before them against everything after them, by source position. An access pair is a hazard
when the two touch different elements (different index text), or the same non-thread-indexed element
written under a thread condition (`if (tid == 0) s[0] = x;`). A path without a barrier is either
straight-line (source order) or around the back edge of a loop that contains both accesses.
Conservative on purpose: any barrier between two accesses, even in a branch, clears the pair.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Iterator, NamedTuple

from ...parse.cuda_model import CudaKernel, CudaLoop, SharedAccess


class Race(NamedTuple):
    kind: str  # raw (CUDA101) | war (CUDA102)
    first: SharedAccess  # the access that happens first (write for raw, read for war)
    second: SharedAccess  # the access the finding is reported at (read for raw, write for war)
    via_loop: CudaLoop | None  # back edge the path goes around, if any


_OWN_SLOT = re.compile(r"\[(\w+(?:\.[xyz])?)\]")
_CONST_SLOT = re.compile(r"\[(\d+)\]")


def _lead(key: str) -> str:
    """First `[...]` group of an index key."""
    depth = 0
    for i, ch in enumerate(key):
        depth += ch == "["
        depth -= ch == "]"
        if depth == 0:
            return key[:i + 1]
    return key


def _hazard(w: SharedAccess, r: SharedAccess) -> bool:
    if w.kind == "atomic" and r.kind == "atomic":
        return False
    if w.lead_uniform and r.lead_uniform and _lead(w.key) != _lead(r.key):
        return False  # different stages of a multi-buffered tile (As[(k + 1) % 2][..] vs As[k % 2][..])
    if w.key == r.key:
        if w.thread_index or not w.thread_cond:
            return False  # each thread its own element, or every thread writes the same value
        # written by the threads selected by w.conds; read by the same ones -> their own writes
        return not (r.conds == w.conds or r.conds.startswith(w.conds + " && "))
    return not (_same_thread(w, r) or _same_thread(r, w))


_OFFSET_SLOT = re.compile(r"\[(\w+(?:\.[xyz])?)\+(\w+)\]")


def _split_halves(w: SharedAccess, r: SharedAccess) -> bool:
    """Tree-reduction step: `if (tid < s) { v = buf[tid + s]; buf[tid] = ...; }` writes [0, s) and
    reads [s, 2s) within one iteration, so the two never touch the same element."""
    for wi, ri in ((w.index, r.index), (w.key, r.key)):
        m, n = _OWN_SLOT.fullmatch(wi), _OFFSET_SLOT.fullmatch(ri)
        if m and n and m.group(1) == n.group(1):
            var, off = re.escape(m.group(1)), re.escape(n.group(2))
            guard = rf"(?<![\w.]){var}\s*<\s*{off}\b"
            if re.search(guard, w.conds) and re.search(guard, r.conds):
                return True
    return False


def _same_thread(a: SharedAccess, b: SharedAccess) -> bool:
    """`s[tid] = ...` and `if (tid == 0) ... s[0]`: the one thread that reads slot 0 also wrote it."""
    n = _CONST_SLOT.fullmatch(b.key)
    if not (n and a.thread_index):
        return False
    for index in {a.index, a.key}:  # `[t]` and, when t = threadIdx.x, `[threadIdx.x]`
        m = _OWN_SLOT.fullmatch(index)
        if m:
            var, const = re.escape(m.group(1)), n.group(1)
            if re.search(rf"(?<![\w.]){var}\s*==\s*{const}\b|\b{const}\s*==\s*{var}(?![\w.])", b.conds):
                return True
    return False


def find_races(k: CudaKernel) -> Iterator[Race]:
    barriers = sorted(b.pos for b in k.barriers)

    def clear(a: int, b: int) -> bool:
        """No barrier strictly between byte offsets a < b."""
        i = bisect_right(barriers, a)
        return i >= len(barriers) or barriers[i] >= b

    by_array: dict[str, list[SharedAccess]] = {}
    for acc in k.shared_accesses:
        by_array.setdefault(acc.array, []).append(acc)
    for accesses in by_array.values():
        writes = [a for a in accesses if a.kind in ("write", "atomic")]
        reads = [a for a in accesses if a.kind in ("read", "atomic")]
        if not writes or not reads:
            continue
        for r in reads:
            for w in writes:
                if w is r or not _hazard(w, r):
                    continue
                halves = _split_halves(w, r)  # disjoint within one iteration only
                if w.pos < r.pos and w.stmt != r.stmt and clear(w.pos, r.pos) and not halves:
                    yield Race("raw", w, r, None)
                elif r.pos < w.pos and w.stmt != r.stmt and clear(r.pos, w.pos) and not halves:
                    yield Race("war", r, w, None)
                for li in set(w.loops) & set(r.loops):
                    lp = k.loops[li]
                    if r.pos <= w.pos or r.stmt == w.stmt:  # w -> back edge -> r
                        if clear(w.pos, lp.end) and clear(lp.start, r.pos):
                            yield Race("raw", w, r, lp)
                    if w.pos <= r.pos or r.stmt == w.stmt:  # r -> back edge -> w
                        if clear(r.pos, lp.end) and clear(lp.start, w.pos):
                            yield Race("war", r, w, lp)
