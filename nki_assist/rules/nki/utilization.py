"""Hardware-utilisation rules: small matmul tiles, fp32 matmul operands, row tiles below 128 partitions."""

from __future__ import annotations

from ...api.hardware import Target
from ...findings import Severity
from ...parse.nki_model import NkiFile
from ..registry import RuleSpec
from .common import check, emit

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI301", "small-matmul-tile", "tensor-engine-underutilized", Severity.INFO,
             "A matmul contracts over (K) or produces (M) fewer than 128 rows, idling most of the 128x128 array.",
             fix="Grow K and M tiles to 128 (pack several small problems along the partition axis).",
             emits=(Severity.WARNING,),  # in a review, when the cost model binds it (review/bound_costs.py)
             doc="""\
## What it finds
A matmul whose resolved contraction size K or stationary free size M is below 128.

## Why it matters on Trainium
The Tensor Engine is a 128x128 systolic array: K fills its rows and M its columns. A 64x32 tile does 12.5% of the possible work per instruction for the same fixed cost.

## Example
```python
a = nl.load(lhsT[0:64, 0:128])
res = nl.matmul(a, b, transpose_x=True)   # K=64
```

## Fix
Grow tiles to K=128 and M=128, pack independent small problems along the partition axis, or map the short side to the moving operand.
"""),
    RuleSpec("NKI303", "row-tile-below-128-partitions", "partition-underutilized", Severity.INFO,
             "A loop walks the rows of the data in blocks of fewer than 128, so every instruction and DMA on "
             "those tiles uses only that many of the 128 partitions (lanes).",
             fix="Tile 128 rows per iteration (nl.tile_size.pmax) and handle the ragged tail; a row count "
                 "copied from a CUDA block shape does not carry over.",
             emits=(Severity.WARNING,),  # in a review, when the cost model binds it (review/bound_costs.py)
             doc="""\
## What it finds
An SBUF tile with fewer than 128 rows on the partition axis, allocated inside a loop that walks a
dimension of the data in steps of that same row count (`for t in range(R // 64)` with `(64, D)` tiles).
The kernel processes the data 64 (or 32, ...) rows per instruction although 128 lanes exist. The
typical cause is a CUDA block shape (`blockDim.y = 64`) carried over into the port.

## Why it matters on Trainium
Vector, Scalar and GpSimd instructions run one partition per lane and cost the same whether 64 or all
128 partitions take part; DMA transfers spread over the 16 engines by partition. A 64-row tile therefore
halves the throughput of every instruction and DMA on it (a 32-row tile quarters it), and doubles the
instruction count and its fixed costs (nki-facts §1.4, PERF Opt #5b).

## Example
```python
ROWS = 64  # rows per CUDA block
for t in range(R // ROWS):
    xt = nl.ndarray((ROWS, D), dtype=nl.float32, buffer=nl.sbuf)   # 64 of 128 lanes
```

## Fix
Tile 128 rows per iteration (`nl.tile_size.pmax`) and handle the ragged tail (clamped slices in new
NKI, `mask=` in legacy NKI). When a dimension really is 64 wide, pack two 64-row blocks into one
128-partition instruction.
"""),
    RuleSpec("NKI302", "fp32-matmul-operands", "fp32-matmul", Severity.INFO,
             "Matmul operands are float32, which runs the Tensor Engine at a quarter of the bf16 rate.",
             fix="Cast operands to bfloat16 on load; PSUM still accumulates in fp32.",
             emits=(Severity.WARNING,),  # in a review, when the cost model binds it (review/bound_costs.py)
             doc="""\
## What it finds
A matmul operand known to be float32 (from its allocation or `nl.load(..., dtype=nl.float32)`). A matmul that transposes (`is_transpose=True`, or against an identity tile) is not reported: it moves values rather than computing with them, and fp32 keeps them exact.

## Why it matters on Trainium
fp32 matmuls run at a quarter of the bf16 rate (trn2: 19.7 vs 78.6 TFLOPS per core). PSUM accumulates in fp32 either way, so bf16 operands usually keep accuracy.

## Example
```python
st = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
nisa.nc_matmul(dst=ps, stationary=st, moving=mv)
```

## Fix
Cast the operands to bfloat16 (or fp8 with scaling) when loading them; keep the PSUM accumulator in float32.
"""),
]


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
