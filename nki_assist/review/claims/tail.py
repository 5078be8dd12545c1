"""tail-dropped: a floored trip count loses `numerator % tile` elements (NKI203, MIG101).

Confirmed by a ragged size that ran and left output unwritten, or that fails while the aligned sizes pass;
contradicted by ragged sizes that pass with every element written, or that fail exactly like an aligned
size (the failure has another cause); untested when no size of the spec leaves a partial tile."""

from __future__ import annotations

from typing import Any

from ...findings import Finding, Severity
from .evidence import RunContext, SizeEvidence, annotate, confirm, contradict

TAIL_ROOT = "unhandled-ragged-tail"


def numerator(claim: dict[str, Any], vals: dict[str, int]) -> int | None:
    terms = claim.get("terms")
    if terms is None or claim.get("const") is None:
        return None
    total = claim["const"]
    for sym, coef in terms.items():
        if sym not in vals:
            return None
        total += coef * vals[sym]
    return total


def check_tail(ctx: RunContext, f: Finding, claim: dict[str, Any]) -> Finding | None:
    tile = claim.get("tile") or 0
    applies, spared = [], []
    for e in ctx.sizes:
        n = numerator(claim, ctx.values(e.bindings)) if ctx.spec else None
        if n is None:  # not evaluable on the spec's symbols: the attribution's ragged sizes stand in
            (applies if e.name in ctx.ragged else spared).append((e, None))
        elif tile and n % tile:
            applies.append((e, n))
        else:
            spared.append((e, n))
    ran = [(e, n) for e, n in applies if e.ran]

    def why(e: SizeEvidence, n: int | None) -> str:
        extra = f"; {claim.get('numerator')} = {n}, {n} % {tile} = {n % tile}" if n is not None and tile else ""
        return e.describe(extra)

    if not ran:
        what = ("no size of the spec leaves a partial tile for this loop" if not applies
                else "the sizes that would show it did not run")
        return annotate(f, "untested", what, [e.name for e, _ in applies])
    dropped = [(e, n) for e, n in ran if e.unwritten]
    if dropped:
        e, n = dropped[0]
        return confirm(f, f"{why(e, n)} leaves {e.unwritten} output elements unwritten", [e.name for e, _ in dropped],
                       Severity.ERROR, TAIL_ROOT)
    aligned_fail = [e for e, _ in spared if e.ran and not e.passed]
    if all(e.passed for e, _ in ran):
        text = "; ".join(f"{why(e, n)} passes with 0 mismatches and every output element written" for e, n in ran)
    elif aligned_fail:
        text = "; ".join(f"{why(e, n)} writes every output element" for e, n in ran) + \
            f", and it fails the same way as {', '.join(f'`{e.name}`' for e in aligned_fail)}, which has no " \
            "partial tile: the failure has another cause"
    else:
        fails = [e for e, _ in ran if not e.passed]
        e = fails[0]
        return confirm(f, f"{why(e, None)} fails ({e.mismatches} of {e.elements} elements) while the sizes "
                       "without a partial tile pass", [x.name for x in fails], Severity.ERROR, TAIL_ROOT)
    return contradict(f, text, [e.name for e, _ in ran],
                      fix=f"No change needed for the sizes tested: the run shows the tail of loop "
                          f"`{claim.get('loop_var')}` is handled (e.g. by a separate tail tile). A comment at "
                          "the loop saying where the tail goes keeps the next reader from the same doubt.")
