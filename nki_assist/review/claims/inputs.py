"""input-unused: the port never reads an input the CUDA kernel takes (NKI202, MIG103). A CUDA scalar the port
bakes in as a constant is contradicted when every size passes; an unread tensor the run cannot clear."""

from __future__ import annotations

from typing import Any

from ...findings import Finding
from .evidence import RunContext, contradict


def check_input_unused(ctx: RunContext, f: Finding, claim: dict[str, Any]) -> Finding | None:
    if claim.get("pointer") is not False or claim.get("nki_param"):
        return f  # an unread tensor, or a parameter the port has and ignores: the run cannot clear it
    ran = [e for e in ctx.sizes if e.ran]
    if not ran or len(ran) < len(ctx.sizes) or not all(e.passed for e in ran):
        return f
    text = "; ".join(f"{e.describe()} passes with 0 mismatches" for e in ran)
    return contradict(f, text + f": the port computes with the value of `{claim.get('cuda_param')}` the "
                      "reference uses (a constant baked into the kernel)", [e.name for e in ran],
                      fix=f"No change needed if the port's constant equals the value callers pass for "
                          f"`{claim.get('cuda_param')}`; name it after the CUDA parameter so the pairing is "
                          "visible.")
