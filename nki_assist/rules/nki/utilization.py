"""Hardware-utilisation rules: small matmul tiles, fp32 matmul operands, row tiles below 128 partitions."""

from __future__ import annotations

from ...findings import Severity
from ...api.hardware import Target
from ...parse.nki_model import NkiFile
from .common import check, emit


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
    if mm.K == 1 and mm.call.kwargs.get("is_stationary_onezero", "").strip() == "True":
        return (" Its stationary is declared a ones tile (is_stationary_onezero=True): a partition broadcast of a "
                "row, whose K=1 is the broadcast's, not a tiling choice.")
    return ""


def _transpose_mode(mm) -> bool:
    """A matmul that transposes (`is_transpose=True`, or against an identity tile): it moves values rather than
    computing with them, and fp32 keeps them exact where bf16 would round them."""
    c = mm.call
    if c.kwargs.get("is_transpose", "").strip() == "True":
        return True
    return any(o is not None and "identity" in (o.name or "").lower() for o in (mm.stationary, mm.moving))


@check("NKI302")
def fp32_matmul(nf: NkiFile, t: Target):
    rate = round(t.peak_bf16_flops / t.peak_fp32_flops)
    for k in nf.kernels:
        for mm in k.matmuls:
            ops = [o for o in (mm.stationary, mm.moving) if o is not None]
            fp32 = [o for o in ops if o.dtype in ("float32", "float32r")]
            if not fp32 or _transpose_mode(mm):
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


@check("NKI303")
def row_tile_below_pmax(nf: NkiFile, t: Target):
    """An SBUF tile of P < 128 partitions allocated in a loop that walks a dimension P at a time: the
    kernel processes the rows P per instruction where 128 lanes are available."""
    for k in nf.kernels:
        seen: set[int] = set()
        # matmul operands put the contraction on the partitions: NKI301 / MIG108 judge those tiles
        mm_operands = {op.name for mm in k.matmuls for op in (mm.stationary, mm.moving) if op is not None}
        for a in k.allocations:
            p = a.partitions
            if (a.buffer != "sbuf" or not isinstance(p, int) or not 1 < p < t.partitions or not a.loops
                    or a.name in mm_operands):
                continue
            loop = next((lp for lp in reversed(a.loops) if any(fd[2] == p for fd in lp.floor_divs)), None)
            if loop is None or loop.id in seen:
                continue
            seen.add(loop.id)
            num = next(str(fd[0]) for fd in loop.floor_divs if fd[2] == p)  # (numerator, value, den, ...)
            share = round(100.0 * p / t.partitions, 1)
            yield emit("NKI303", nf, a.line, a.col, a.end_line, a.end_col,
                       f"`{a.name or a.api}` puts {p} rows on the partitions while the loop over `{loop.var}` "
                       f"(line {loop.line}) walks {num} {p} rows at a time: every instruction and DMA on these "
                       f"tiles uses {p} of {t.partitions} lanes ({share}%).",
                       {"partitions": p, "pmax": t.partitions, "lane_share_percent": share, "loop_line": loop.line,
                        "loop_var": loop.var, "dimension": num, "lane_ratio": round(t.partitions / p, 2)})
