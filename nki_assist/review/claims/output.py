"""output-wrong: an indexing mistake, a dropped epilogue or a missing scale makes the output wrong (MIG110,
MIG102, NKI207). Contradicted when every size of the spec ran and passes."""

from __future__ import annotations

from typing import Any

from ...findings import Finding
from .evidence import RunContext, contradict


def check_output_wrong(ctx: RunContext, f: Finding, claim: dict[str, Any]) -> Finding | None:
    ran = [e for e in ctx.sizes if e.ran]
    if not ran or len(ran) < len(ctx.sizes) or not all(e.passed for e in ran):
        return f
    text = "; ".join(f"{e.describe()} passes with 0 of {e.elements} elements out of tolerance" for e in ran)
    return contradict(f, text + ": the port computes what the reference computes", [e.name for e in ran],
                      fix="No change needed for the sizes tested: every size matches the reference. (If the "
                          "reference itself leaves out what the CUDA kernel does, fix the reference first.)")
