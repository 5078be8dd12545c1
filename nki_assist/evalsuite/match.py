"""Deterministic one-to-one matching of emitted review items to gold issues.

An emitted unit is an assessment item (the findings it cites) or, without an assessment, a single
finding. A unit can match a gold issue when one of its findings is on the same file (compared by
name, so paths relative to different folders still agree), its lines overlap the gold range widened
by `window` lines, and its category is the gold category or an accepted alternative. Among all such
pairs the assignment is greedy in a fixed order — exact category first, then smaller line distance,
then the unit's priority, then the gold order — so the same inputs always give the same matching.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from ..findings import Finding
from .gold import GoldIssue

DEFAULT_WINDOW = 3


@dataclass(frozen=True)
class Match:
    gold: GoldIssue
    unit: int  # index of the emitted unit
    finding: Finding  # the unit's finding that matched
    distance: int  # lines between the finding and the gold range (0 = inside)
    exact_category: bool


def same_file(a: str | None, b: str | None) -> bool:
    return bool(a and b) and PurePath(a).name == PurePath(b).name


def line_distance(f: Finding, g: GoldIssue) -> int | None:
    if f.line is None:
        return None
    lo, hi = f.line, f.end_line or f.line
    glo, ghi = g.lines
    if hi < glo:
        return glo - hi
    if lo > ghi:
        return lo - ghi
    return 0


def candidates(f: Finding, g: GoldIssue, window: int) -> tuple[bool, int] | None:
    """(inexact category, distance) when `f` may stand for `g`."""
    if not same_file(f.file, g.file) or f.category not in g.categories:
        return None
    d = line_distance(f, g)
    if d is None or d > window:
        return None
    return (f.category != g.category, d)


def match(gold: list[GoldIssue], units: list[list[Finding]], *, window: int = DEFAULT_WINDOW) -> list[Match]:
    """One-to-one matches between gold issues and units (units in priority order)."""
    pairs = []
    for ui, unit in enumerate(units):
        for gi, g in enumerate(gold):
            best = min(((c, fi) for fi, f in enumerate(unit) if (c := candidates(f, g, window))), default=None)
            if best is not None:
                (inexact, d), fi = best
                pairs.append((inexact, d, ui, gi, fi))
    pairs.sort()
    used_u: set[int] = set()
    used_g: set[int] = set()
    out = []
    for inexact, d, ui, gi, fi in pairs:
        if ui in used_u or gi in used_g:
            continue
        used_u.add(ui)
        used_g.add(gi)
        out.append(Match(gold[gi], ui, units[ui][fi], d, not inexact))
    order = {g.id: i for i, g in enumerate(gold)}
    return sorted(out, key=lambda m: order[m.gold.id])
