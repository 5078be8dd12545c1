"""DMA traffic rules: transfers too small to amortize their fixed cost inside loops (NKI108) and loads that
every iteration of a loop repeats unchanged (NKI109)."""

from __future__ import annotations

import math

from ...api.hardware import DTYPE_BYTES, Target
from ...findings import Severity
from ...parse.nki_model import DMA_APIS, NkiFile
from ..registry import RuleSpec
from .common import check, emit, loop_label, shape_str
from .memory import _IDENT, HBM

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI108", "small-dma-in-loop", "small-dma", Severity.INFO,
             "A DMA inside a loop moves under 2 KiB per partition or uses fewer than 128 partitions.",
             fix="Move bigger tiles per transfer: 128 partitions and at least 2 KiB (ideally 4 KiB+) each.",
             emits=(Severity.WARNING,),  # in a review, when the cost model binds it (review/bound_costs.py)
             doc="""\
## What it finds
A load, store or `dma_copy` inside a loop whose transfer is known to move fewer than 2 KiB per partition, or to touch fewer than 128 partitions. With an unknown dtype, the rule fires only when even float32 would stay under 2 KiB. A full-partition column (`[128, 1]`: a bias, scale or row statistic per tile) is reported as info: it is as wide as that data gets per tile, and only batching several tiles' values into one `[128, n]` DMA (a layout change) would help. So is a single row (`[1, n]` with enough bytes: a bias or gamma row broadcast across partitions) and a full-partition Tensor Engine operand tile.

The transfer's shape is what the index really selects. For index grids (`x[t * 128 + i_p, i_f]` with `i_p = nl.arange(128)[:, None]`, `i_f = nl.arange(C)[None, :]`, `nl.mgrid[...]` and its `.p`/`.x` attributes, expressions over several aranges such as `i_a * 16 + i_b`) the shape is the broadcast of the grids (`[128, C]`, `[128, 4, 16]`), so the bytes per partition are the grid's free extent times the dtype size. An arange whose extent is not a constant (`nl.arange(x.shape[1])`) leaves the size unknown: no finding, never a per-element size. Names bound to `nl.ds(start, size)` keep `size`. A size the data fixes is advice (`info`), not a warning: a single integer value (an index, count or offset the kernel addresses or branches with), an MX scale block (4 partitions of scales per 32-partition quadrant, in a loop over quadrants), an indirect gather, and a column of one value per row whose row count is symbolic.

## Why it matters on Trainium
Each DMA pays a fixed ~1.3 us of descriptor and semaphore latency. Below 2 KiB per partition that overhead dominates, and with fewer than 128 partitions most of the 16 DMA engines sit idle. In a hot loop this easily costs more than the compute.

## Example
```python
for i in nl.affine_range(8):
    x = nl.load(a[i * 16:(i + 1) * 16, 0:4096])   # 16 of 128 partitions
```

## Fix
Move whole tiles: 128 partitions and at least 2 KiB (ideally 4 KiB or more) per partition, coalescing adjacent small transfers.
"""),
    RuleSpec("NKI109", "loop-invariant-load", "redundant-dma", Severity.INFO,
             "A load inside a loop reads the same HBM region on every iteration of the innermost loop.",
             fix="Hoist the load out of the loop (or up to the loop whose variable it depends on).",
             emits=(Severity.WARNING,),  # in a review, when the cost model binds it (review/bound_costs.py)
             doc="""\
## What it finds
A load from HBM inside a loop whose source region does not depend on the innermost loop's variable, or on anything reassigned or written in that loop (an index read from an SBUF counter the loop advances, `x[idx[0, 0]]` after `idx[...] = nl.add(idx, 1)`, moves), so each iteration loads the same bytes again.

The finding counts the waste from the source alone, for any sizes: the loops from the innermost outward
that the region does not depend on can all be hoisted over, so the load runs `prod(all trips)` times for
`prod(trips of the other loops)` distinct regions, and

    redundant reads = prod(trips of the loops it depends on) * (prod(trips of the hoistable loops) - 1)

Evidence: `redundant_reads_expr` (the formula over the loops' trip expressions, e.g.
`(R // 128) * ((C // 512) * 2 - 1)`), `loads_expr`, `independent_loops` (variable, header line, trip),
`hoist_above_line`, and the numbers `loads`, `distinct_loads`, `redundant_reads` (plus
`elements_per_load`, `redundant_bytes` when shape and dtype are known) when every trip count is a
constant. In a review, when the cost model (PERF101) measured redundant bytes on the same load line for
the spec's sizes, the finding records it in `confirmed_by` (loaded vs unique bytes of that line) and both
findings form one review item.

## Why it matters on Trainium
HBM bandwidth is the scarce resource of most NKI kernels (about 360 GB/s per core on trn2). Reloading an invariant tile multiplies HBM traffic by the trip count, and the profiler reports it as `hbm_reload_bytes`.

## Example
```python
for i in nl.affine_range(4):
    for j in nl.affine_range(4):
        row = nl.load(a[i * 128:(i + 1) * 128, 0:512])   # independent of j: 12 of 16 loads (= 4 * (4 - 1))
```

## Fix
Hoist the load to the loop whose variable it uses (here, just inside the `i` loop) and reuse the tile.
"""),
]


def _dma_region(c):
    """The transferred region: the HBM side when its shape is known, else the on-chip side."""
    ops = [o for o in c.operands if o.role in ("src", "dst", "value") and o.shape]
    ops.sort(key=lambda o: 0 if (o.is_param or o.buffer in HBM) else 1)
    return ops[0] if ops else None


def _row_follows_loop(text: str | None, loops) -> bool:
    """Does the first (partition-side) index of `x[first, ...]` use an enclosing loop's variable?"""
    if not text or "[" not in text:
        return False
    first = text.split("[", 1)[1].split(",", 1)[0]
    names = set(_IDENT.findall(first))
    return any(lp.var in names for lp in loops if lp.var)


def _data_fixed(region, parts, free, c, dtype) -> str | None:
    """Why a small DMA's size is the data's, not the code's choice (None when it is not)."""
    if parts == 1 and free == 1 and dtype and "int" in dtype:
        return "a single integer control value: an index, count or offset"
    text = " ".join(o.text for o in c.operands).lower()
    loops = " ".join(lp.var or "" for lp in c.loops).lower()
    if parts in (1, 4) and ("quad" in loops or "quad" in text or "scale" in text):
        return "an MX scale layout: 4 partitions of scales per 32-partition quadrant"
    if "vector_offset" in text or "indirect" in text or "dynamic" in text:
        return "an indirect gather: the rows are chosen by an index tensor"
    return None


@check("NKI108")
def small_dma(nf: NkiFile, t: Target):
    for k in nf.kernels:
        mm_operands = {op.name for mm in k.matmuls for op in (mm.stationary, mm.moving) if op is not None}
        for c in k.calls:
            if c.api not in DMA_APIS or not c.loops:
                continue
            inner = c.loops[-1]
            if inner.trip_count is not None and inner.trip_count <= 1:
                continue
            region = _dma_region(c)
            if region is None or len(region.shape) < 1:
                continue
            parts = region.shape[0] if isinstance(region.shape[0], int) else None
            free = region.free_elems
            dtype = c._kw_dtype if getattr(c, "_kw_dtype", None) else None  # type: ignore[attr-defined]
            dtype = dtype or next((o.dtype for o in c.operands if o.dtype), None)
            esize = DTYPE_BYTES.get(dtype) if dtype else None
            problems, ev = [], {"shape": list(region.shape), "dtype": dtype, "loop_line": inner.line,
                                "min_bytes_per_partition": t.dma_min_bytes_per_partition}
            if parts is not None and parts < t.partitions:
                problems.append(f"{parts} of {t.partitions} partitions")
                ev["partitions"] = parts
            if free is not None:
                # unknown dtype: only certain when even fp32 stays under the minimum
                bpp = free * esize if esize else (free * 4 if free * 4 < t.dma_min_bytes_per_partition else None)
                if bpp is not None and bpp < t.dma_min_bytes_per_partition:
                    problems.append(f"{bpp} B per partition{'' if esize else ' (at most, fp32)'}")
                    ev["bytes_per_partition"] = bpp
            if not problems:
                continue
            # a full-partition column ([128, 1]: a bias, scale or row statistic per tile) is as wide as
            # that data gets per tile; only batching several tiles' columns (a layout change) helps
            # (a tail-clamped tile, `min(128, R - 128 * t)` rows, is the same column on its full tiles)
            column = free == 1 and (parts == t.partitions or str(region.shape[0]).replace(" ", "").startswith(
                f"min({t.partitions},") or (parts is None and len(region.shape) <= 2))
            ev["column_vector"] = column
            # sizes the data fixes: a single value (an index, count or offset the kernel branches or addresses
            # on), an MX scale block (4 partitions of scales per 32-partition quadrant), an indirect gather
            fixed = _data_fixed(region, parts, free, c, dtype)
            ev["data_fixed"] = fixed
            # a single row ([1, n]: a bias / scale / gamma row later broadcast across partitions) is one partition
            # by nature; only loading several rows per DMA would help
            # (a row the loop walks, `x[r:r + 1, :]` in a loop over r, is the row-at-a-time defect instead)
            row = (parts == 1 and len(region.shape) >= 2 and "bytes_per_partition" not in ev
                   and not _row_follows_loop(region.text, c.loops))
            ev["row_vector"] = row
            # a full 128-partition matmul operand tile is the Tensor Engine's own tile: loading a wider
            # strip per DMA is an optimisation whose worth the cost model estimates (PERF101/PERF102)
            dst = c.operand("dst")
            dst_name = dst.name if dst is not None else getattr(c, "target", None)
            if dst_name is None:  # `tiles[k] = nl.load(...)`: the assignment names the tile
                dst_name = next((a.name for a in k.assignments if a.line == c.line and a.value_api == c.api), None)
            mm_tile = parts == t.partitions and dst_name is not None and dst_name in mm_operands
            ev["matmul_operand_tile"] = mm_tile
            ev["advice"] = bool(column or row or mm_tile or fixed)  # stays info when the cost model binds it
            advice = (f"; its size is fixed by the data ({fixed}), so there is nothing wider to move." if fixed else
                      "; it is one value per partition per tile, so only moving several tiles' values in one "
                      "[128, n] DMA would help." if column else
                      ("; it writes a single output row per DMA, so only storing several rows at once would help."
                       if c.api in ("nl.store",) or (dst is not None and dst.buffer in ("hbm", "shared_hbm"))
                       else "; it is a single row (a bias or scale row to broadcast across partitions), so only "
                            "loading several rows per DMA would help.") if row else
                      "; it is one Tensor Engine operand tile, so only loading a wider strip per DMA (several "
                      "tiles at once) would help." if mm_tile else ".")
            yield emit("NKI108", nf, c.line, c.col, c.end_line, c.end_col,
                       f"`{c.api}` of {shape_str(region.shape)} inside {loop_label(inner)} moves "
                       f"{' and '.join(problems)}; DMA needs >= {t.dma_min_bytes_per_partition} B per partition "
                       f"on {t.partitions} partitions to amortise its ~{t.dma_fixed_cost_s * 1e6:.1f} us fixed cost"
                       + advice,
                       ev, severity=Severity.INFO if column or row or mm_tile or fixed else None,
                       confidence="high" if esize or "partitions" in ev else "medium")


@check("NKI109")
def loop_invariant_load(nf: NkiFile, t: Target):
    for k in nf.kernels:
        stored = {(c.operand("dst").name, c.line) for c in k.calls
                  if c.api in ("nl.store", "nisa.dma_copy") and c.operand("dst") is not None}
        for c in k.calls:
            if c.api not in ("nl.load", "nl.load_transpose2d", "nisa.dma_copy") or not c.loops:
                continue
            src = c.operand("src")
            if src is None or not (src.is_param or src.buffer in HBM):
                continue
            dst = c.operand("dst")
            if dst is not None and (dst.is_param or dst.buffer in HBM):
                continue  # HBM to HBM (a zero fill of each output region): no on-chip copy to reuse
            inner = c.loops[-1]
            if inner.id in c.dep_loops or (inner.trip_count is not None and inner.trip_count <= 1):
                continue
            if inner.kind in ("while", "iter", "fori_loop"):
                continue
            if any(n == src.name and inner.line <= ln <= inner.end_line for n, ln in stored):
                continue  # the loop also writes that tensor: the reload may be intended
            index_names = set(_IDENT.findall(src.text)) - {src.name}
            if any(a.name in index_names and inner.line <= a.line <= inner.end_line for a in k.assignments):
                continue  # the address reads a value the loop updates (`x[idx[0, 0]]` after `idx[...] += 1`)
            r = redundancy(c, src)
            outer = r["hoist_above_line"]
            count = (f"{r['redundant_reads']} of its {r['loads']} executions (= {r['redundant_reads_expr']})"
                     if r["redundant_reads"] is not None else
                     f"{r['redundant_reads_expr']} of its {r['loads_expr']} executions")
            yield emit("NKI109", nf, c.line, c.col, c.end_line, c.end_col,
                       f"`{c.api}({src.text})` inside {loop_label(inner)} does not depend on "
                       f"{' or '.join(f'`{v}`' for v in r['independent_vars'])}: {count} re-read an HBM region "
                       f"already loaded.",
                       {"tensor": src.name, "loop_var": inner.var, "loop_line": inner.line,
                        "trip_count": inner.trip_count, "shape": list(src.shape) if src.shape else None, **r},
                       fix=f"Hoist the load above line {outer} and reuse the tile inside the loop.")


def _factor(lp) -> tuple[int | None, str]:
    if lp.trip_count is not None:
        return lp.trip_count, str(lp.trip_count)
    expr = lp.trip_expr or "?"
    return None, expr if expr.replace("_", "").isalnum() else f"({expr})"


def redundancy(c, src) -> dict:
    """Redundant HBM reads of a load in loops it does not depend on, as a formula of the trip counts.

    The loops from the innermost outward that the load's region does not depend on can all be hoisted
    over: the load runs prod(all trips) times but only prod(trips of the other loops) regions differ, so
    redundant = prod(other trips) * (prod(hoisted trips) - 1). Numbers when the trips are constant."""
    hoist = []
    for lp in reversed(c.loops):
        if lp.id in c.dep_loops or lp.kind in ("while", "iter", "fori_loop"):
            break
        hoist.append(lp)
    hoist.reverse()
    keep = [lp for lp in c.loops if lp not in hoist]
    hv = [_factor(lp) for lp in hoist]
    kv = [_factor(lp) for lp in keep]
    h_expr = " * ".join(e for _, e in hv)
    expr = f"{h_expr} - 1" if not kv else " * ".join([e for _, e in kv] + [f"({h_expr} - 1)"])
    h_n = math.prod(n for n, _ in hv) if all(n is not None for n, _ in hv) else None
    k_n = math.prod(n for n, _ in kv) if all(n is not None for n, _ in kv) else None
    red = k_n * (h_n - 1) if h_n is not None and k_n is not None else None
    elems = math.prod(src.shape) if src.shape and all(isinstance(d, int) for d in src.shape) else None
    esize = DTYPE_BYTES.get(src.dtype) if src.dtype else None
    return {"independent_vars": [lp.var or "?" for lp in hoist],
            "independent_loops": [{"var": lp.var, "line": lp.line, "trip": e} for lp, (_, e) in zip(hoist, hv)],
            "loads": h_n * k_n if red is not None else None,
            "loads_expr": " * ".join(e for _, e in kv + hv),
            "distinct_loads": k_n, "redundant_reads": red, "redundant_reads_expr": expr,
            "elements_per_load": elems,
            "redundant_bytes": red * elems * esize if red is not None and elems and esize else None,
            "hoist_above_line": hoist[0].line}
