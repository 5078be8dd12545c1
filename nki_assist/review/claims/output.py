"""output-wrong: an indexing mistake, a dropped epilogue or a missing scale makes the output wrong (MIG110,
MIG102, NKI207). Contradicted when every size of the spec ran and passes; a missing scale also when any size
passes (a constant factor would scale every size)."""

from __future__ import annotations

from typing import Any

from ...findings import Finding
from .evidence import RunContext, contradict


def check_output_wrong(ctx: RunContext, f: Finding, claim: dict[str, Any]) -> Finding | None:
    ran = [e for e in ctx.sizes if e.ran]
    passing = [e for e in ran if e.passed]
    if str(claim.get("what") or "").startswith("scale ") and passing and len(passing) < len(ran):
        # a missing constant factor scales every output of every size: one size within tolerance refutes it
        text = "; ".join(f"{e.describe()} passes with 0 of {e.elements} elements out of tolerance" for e in passing)
        return contradict(f, text + ": a missing constant scale would fail every size, so the failing sizes have "
                          "another cause", [e.name for e in passing],
                          fix="Do not add the scale: the sizes that pass show it is applied (adding it would break "
                              "them). Look for what differs between the passing and the failing sizes.")
    if not ran or len(ran) < len(ctx.sizes) or not all(e.passed for e in ran):
        return f
    text = "; ".join(f"{e.describe()} passes with 0 of {e.elements} elements out of tolerance" for e in ran)
    return contradict(f, text + ": the port computes what the reference computes", [e.name for e in ran],
                      fix="No change needed for the sizes tested: every size matches the reference. (If the "
                          "reference itself leaves out what the CUDA kernel does, fix the reference first.)")
