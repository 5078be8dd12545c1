"""operand-dtype: matmul operands are fp32 because the CUDA buffers are (MIG111). Dropped when the port spec
declares every operand's dtype and none is fp32 (the spec overrides what the CUDA declarations suggest)."""

from __future__ import annotations

from typing import Any

from ...findings import Finding
from .evidence import RunContext

FP32 = ("float32", "fp32", "tfloat32")


def declared_dtypes(ctx: RunContext, params: list[str]) -> dict[str, str]:
    """Port-spec dtypes of kernel params (array inputs only)."""
    out = {}
    for p in params:
        inp = ctx.spec.inputs.get(ctx.params.get(p, ""))
        if inp is not None and not inp.is_value:
            out[p] = inp.dtype
    return out


def check_operand_dtype(ctx: RunContext, f: Finding, claim: dict[str, Any]) -> Finding | None:
    if ctx.spec is None:
        return f
    params = claim.get("nki_params") or []
    declared = declared_dtypes(ctx, params)
    if len(declared) < len(params) or any(d in FP32 for d in declared.values()):
        return f
    listed = ", ".join(f"`{p}` {d}" for p, d in declared.items())
    ctx.notes.append(f"{f.rule} at line {f.line} dropped: it assumed fp32 operands from the CUDA declarations, "
                     f"but the port spec declares {listed}")
    return None
