"""Hardware-utilisation rules: small matmul tiles and fp32 matmul operands."""

from __future__ import annotations

from ..findings import Severity
from ..hardware import Target
from ..parse.nki_model import NkiFile
from .nki_common import check, emit


@check("NKI301")
def small_matmul(nf: NkiFile, t: Target):
    for k in nf.kernels:
        for mm in k.matmuls:
            K, M = mm.K, mm.M
            if K is None or M is None or K > t.contraction_max or M > t.stationary_fmax:
                continue  # unknown, or NKI105's business
            if K >= t.contraction_max and M >= t.stationary_fmax:
                continue
            pes = t.contraction_max * t.stationary_fmax
            used = round(100.0 * K * M / pes, 1)
            c = mm.call
            once = _one_off_broadcast(mm)
            yield emit("NKI301", nf, c.line, c.col, c.end_line, c.end_col,
                       f"`{c.api}` contracts over K={K} rows into M={M} output partitions: {K}x{M} of the "
                       f"{t.contraction_max}x{t.stationary_fmax} PE array ({used}%) does useful work." + once,
                       {"K": K, "M": M, "N": mm.N, "pe_utilization_percent": used, "one_off": bool(once)},
                       severity=Severity.INFO if once else None)


def _one_off_broadcast(mm) -> str:
    """A K=1 matmul outside every loop is a partition broadcast (ones^T @ row) paid once, not a hot-path
    matmul: its PE utilization and operand dtype do not bound the kernel."""
    if mm.K == 1 and not mm.call.loops:
        return " It runs once, outside every loop (a partition broadcast), so this is a one-off cost."
    return ""


@check("NKI302")
def fp32_matmul(nf: NkiFile, t: Target):
    rate = round(t.peak_bf16_flops / t.peak_fp32_flops)
    for k in nf.kernels:
        for mm in k.matmuls:
            ops = [o for o in (mm.stationary, mm.moving) if o is not None]
            fp32 = [o for o in ops if o.dtype in ("float32", "float32r")]
            if not fp32:
                continue
            c = mm.call
            names = ", ".join(f"`{o.name}`" for o in fp32)
            once = _one_off_broadcast(mm)
            yield emit("NKI302", nf, c.line, c.col, c.end_line, c.end_col,
                       f"`{c.api}` multiplies float32 operands ({names}): the Tensor Engine runs fp32 at "
                       f"{t.peak_fp32_flops / 1e12:.1f} TFLOPS vs {t.peak_bf16_flops / 1e12:.1f} for bf16 on "
                       f"{t.name} ({rate}x slower)." + once,
                       {"operands": [o.name for o in fp32], "dtype": "float32",
                        "fp32_tflops": round(t.peak_fp32_flops / 1e12, 1),
                        "bf16_tflops": round(t.peak_bf16_flops / 1e12, 1), "one_off": bool(once)},
                       severity=Severity.INFO if once else None)
