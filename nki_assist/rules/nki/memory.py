"""Memory-hierarchy rules: partitions, SBUF budget, PSUM banks, matmul limits, placement, DMA shape."""

from __future__ import annotations

import math
import re

from ...api import table
from ...api.version import target_version
from ...findings import Severity
from ...api.hardware import DTYPE_BYTES, Target
from ...parse.nki import kernel_resources, psum_banks_of
from ...parse.nki_model import DMA_APIS, NkiFile
from .common import check, decorator_text, emit, loop_label, shape_str

HBM = ("hbm", "shared_hbm", "private_hbm")
KIB = 1024
_IDENT = re.compile(r"[^\W\d]\w*")  # a Python identifier (names in operand text)


@check("NKI101")
def partition_dim(nf: NkiFile, t: Target):
    for k in nf.kernels:
        for a in k.allocations:
            if a.buffer not in ("sbuf", "psum") or not isinstance(a.partitions, int):
                continue
            if a.partitions > t.partitions:
                where = "loads" if a.implicit else "allocates"
                yield emit("NKI101", nf, a.line, a.col, a.end_line, a.end_col,
                           f"`{a.name or a.api}` {where} a {a.buffer.upper()} tile {shape_str(a.shape)} with "
                           f"{a.partitions} rows on the partition axis; {t.name} has {t.partitions} partitions.",
                           {"tensor": a.name, "shape": list(a.shape or ()), "partitions": a.partitions,
                            "partition_limit": t.partitions, "buffer": a.buffer},
                           fix=f"Tile the partition axis into blocks of {t.partitions} (nl.tile_size.pmax) rows.")


@check("NKI102")
def sbuf_budget(nf: NkiFile, t: Target):
    for k in nf.kernels:
        res = kernel_resources(k, t)
        peak, budget = res["sbuf_peak_bytes_per_partition"], t.sbuf_usable_bytes_per_partition
        if peak <= budget:
            continue
        live = [a for a in k.allocations if a.buffer == "sbuf" and (a.name, a.line, a.bytes_per_partition)
                in res["sbuf_live"]]
        biggest = max(live, key=lambda a: a.bytes_per_partition or 0)
        parts = ", ".join(f"`{n}` line {ln}: {b} B" for n, ln, b in res["sbuf_live"][:6])
        # legacy block-dimension tiles: the compiler gives each block its own lifetime, so whole-tile bytes
        # overflow only if the code holds the blocks together; certain only when one block each still overflows
        blocked = res["sbuf_peak_one_block_bytes_per_partition"] <= budget
        yield emit("NKI102", nf, biggest.line, biggest.col, biggest.end_line, biggest.end_col,
                   f"SBUF tiles live together need {peak} B per partition ({parts}); {t.name} has {budget} B "
                   f"usable per partition ({t.sbuf_bytes_per_partition} B physical)."
                   + (f" Counting one block of each block-dimension tile they need "
                      f"{res['sbuf_peak_one_block_bytes_per_partition']} B, which fits: this overflows only if the "
                      "kernel keeps the blocks live together (the simulator's SIM104 measures what a run holds)."
                      if blocked else ""),
                   {"sbuf_bytes_per_partition": peak, "budget_bytes_per_partition": budget,
                    "physical_bytes_per_partition": t.sbuf_bytes_per_partition,
                    "percent": res["sbuf_percent"],
                    "live": [{"tensor": n, "line": ln, "bytes_per_partition": b} for n, ln, b in res["sbuf_live"]]},
                   fix=f"Shrink `{biggest.name}` ({biggest.bytes_per_partition} B per partition): fewer block "
                       "dims or a narrower free size, or allocate it inside the loop that uses it.",
                   severity=Severity.WARNING if blocked else None, confidence="medium" if blocked else "high")


@check("NKI103")
def psum_tile(nf: NkiFile, t: Target):
    # NeuronCore-v4 matmuls may write up to 8 banks (4096 fp32 / 8192 bf16): only the bank total binds there
    limit = max(t.psum_bank_bytes, t.moving_fmax * 4)
    for k in nf.kernels:
        for a in k.allocations:
            if a.buffer != "psum" or a.free_bytes is None or a.free_bytes <= limit:
                continue
            elems = a.free_bytes // DTYPE_BYTES.get(a.dtype or "float32", 4)
            half = max(1, t.psum_bank_bytes // DTYPE_BYTES.get(a.dtype or "float32", 4))
            yield emit("NKI103", nf, a.line, a.col, a.end_line, a.end_col,
                       f"PSUM tile {shape_str(a.shape)} {a.dtype or 'float32'} needs {a.free_bytes} B per partition; "
                       f"a PSUM bank holds {t.psum_bank_bytes} B.",
                       {"tensor": a.name, "shape": list(a.shape or ()), "bytes_per_partition": a.free_bytes,
                        "bank_bytes": t.psum_bank_bytes, "free_elems": elems},
                       fix=f"Split the free dimension into {half}-wide blocks, one PSUM bank each.")


@check("NKI104")
def psum_banks(nf: NkiFile, t: Target):
    for k in nf.kernels:
        res = kernel_resources(k, t)
        if res["psum_banks"] <= t.psum_banks:
            continue
        live = [a for a in k.allocations if a.buffer == "psum" and (a.name, a.line, psum_banks_of(a, t))
                in res["psum_live"]]
        last = max(live, key=lambda a: (a.line, a.col))
        parts = ", ".join(f"`{n}` line {ln}: {b}" for n, ln, b in res["psum_live"][:8])
        yield emit("NKI104", nf, last.line, last.col, last.end_line, last.end_col,
                   f"PSUM tiles live together need {res['psum_banks']} banks ({parts}); a partition has "
                   f"{t.psum_banks} banks of {t.psum_bank_bytes} B.",
                   {"psum_banks": res["psum_banks"], "bank_limit": t.psum_banks, "bank_bytes": t.psum_bank_bytes,
                    "live": [{"tensor": n, "line": ln, "banks": b} for n, ln, b in res["psum_live"]]})


@check("NKI105")
def matmul_limits(nf: NkiFile, t: Target):
    for k in nf.kernels:
        for mm in k.matmuls:
            c = mm.call
            dst_bf16 = mm.dst is not None and mm.dst.dtype == "bfloat16"
            n_max = t.moving_fmax_bf16_dst if dst_bf16 else t.moving_fmax
            over = []
            if mm.K is not None and mm.K > t.contraction_max:
                over.append(f"contraction K={mm.K} > {t.contraction_max}")
            if mm.M is not None and mm.M > t.stationary_fmax:
                over.append(f"stationary free M={mm.M} > {t.stationary_fmax}")
            if mm.N is not None and mm.N > n_max:
                over.append(f"moving free N={mm.N} > {n_max}")
            if not over:
                continue
            yield emit("NKI105", nf, c.line, c.col, c.end_line, c.end_col,
                       f"`{c.api}` exceeds the Tensor Engine tile limits on {t.name}: {'; '.join(over)}.",
                       {"K": mm.K, "M": mm.M, "N": mm.N, "K_max": t.contraction_max,
                        "M_max": t.stationary_fmax, "N_max": n_max})


@check("NKI106")
def matmul_placement(nf: NkiFile, t: Target):
    for k in nf.kernels:
        for mm in k.matmuls:
            c = mm.call
            for op in (mm.stationary, mm.moving):
                if op is None:
                    continue
                buf = "hbm" if op.is_param else op.buffer
                if op.is_param and (k.helper or k.decorator is None):
                    # a helper's parameter is whatever tile its caller passes, not an HBM input; so is that of
                    # a function with no kernel decorator (a building block called from another file): known
                    # only when every call site in the project passes the same kind of buffer
                    fact = k.context.param_facts.get(op.name) if k.context is not None else None
                    buf = fact.buffer if fact is not None else None
                    if buf is None:
                        continue
                if buf in HBM or buf == "psum":
                    yield emit("NKI106", nf, c.line, c.col, c.end_line, c.end_col,
                               f"`{c.api}` reads operand `{op.text}` from {buf.upper()}; the Tensor Engine reads "
                               "only SBUF.",
                               {"operand": op.text, "role": op.role, "buffer": buf},
                               fix=f"Load `{op.name}` into an SBUF tile first (nl.load / nisa.dma_copy"
                                   + (", or nisa.tensor_copy from PSUM" if buf == "psum" else "") + ").")
            dst_buf = mm.dst.buffer if mm.dst is not None else None
            if mm.dst is not None and mm.dst.is_param and (k.helper or k.decorator is None):
                # a helper's / sub-kernel's destination is whatever its callers pass: known only when every
                # call site in the project passes the same kind of buffer
                fact = (k.context.param_facts.get(mm.dst.name) if k.context is not None else None)
                dst_buf = fact.buffer if fact is not None else None
            if mm.dst is not None and dst_buf not in (None, "psum", "unknown"):
                yield emit("NKI106", nf, c.line, c.col, c.end_line, c.end_col,
                           f"`{c.api}` writes its result to `{mm.dst.text}` in {dst_buf.upper()}; the Tensor "
                           "Engine writes only PSUM.",
                           {"operand": mm.dst.text, "role": "dst", "buffer": dst_buf},
                           fix="Allocate the destination with buffer=nl.psum and copy it to SBUF afterwards.")


@check("NKI107")
def dma_from_psum(nf: NkiFile, t: Target):
    if nf.dialect not in ("new", "transitional"):
        return
    for k in nf.kernels:
        for c in k.calls:
            if c.api not in ("nisa.dma_copy", "nl.store", "nisa.dma_transpose", "nl.load"):
                continue
            src = c.operand("value") if c.api == "nl.store" else c.operand("src")
            if src is None or src.buffer != "psum":
                continue
            yield emit("NKI107", nf, c.line, c.col, c.end_line, c.end_col,
                       f"`{c.api}` reads `{src.text}` directly from PSUM; NKI 0.3+ has no PSUM source for DMA "
                       "(and nl.store cannot take PSUM).",
                       {"api": c.api, "operand": src.text, "buffer": "psum"},
                       fix=f"Copy `{src.name}` to an SBUF tile with nisa.tensor_copy (or nl.copy) and DMA from SBUF.")


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


@check("NKI110", per_file=True)
def output_buffer(nf: NkiFile, t: Target):
    for k in nf.kernels:
        if k.decorator is None or k.role in ("sub-kernel", "helper"):
            continue  # a sub-kernel called from another kernel hands its tiles back to that kernel
        for r in k.returns:
            for name in r.names:
                allocs = [a for a in k.allocations if a.name == name and not a.implicit and a.line <= r.line]
                if not allocs:
                    continue
                a = allocs[-1]
                if nf.dialect in ("new", "transitional"):
                    bad = a.buffer not in ("shared_hbm", "unknown")
                else:
                    bad = a.buffer in ("sbuf", "psum")
                if not bad:
                    continue
                sev, note = Severity.ERROR, ""
                if nf.dialect != "legacy" and a.buffer in ("hbm", "private_hbm"):
                    sev, note = _hbm_output_severity(nf, k, target_version(t))
                yield emit("NKI110", nf, r.line, r.col, r.line, r.end_col,
                           f"Kernel `{k.name}` returns `{name}` allocated in {a.buffer} (line {a.line}); kernel "
                           f"outputs must be HBM tensors{' in nl.shared_hbm (NKI 0.3+)' if nf.dialect != 'legacy' else ''}"
                           f"{note}.",
                           {"tensor": name, "buffer": a.buffer, "allocation_line": a.line, "dialect": nf.dialect,
                            "nki_version": target_version(t)},
                           severity=sev)


_MODE_KW = re.compile(r"\bjit\s*\((?:[^()]*,)?\s*mode\s*=")


def _hbm_output_severity(nf: NkiFile, k, version: str) -> tuple[Severity, str]:
    """An nl.hbm output compiles up to NKI 0.2; NKI 0.3 made shared_hbm outputs a breaking change (release
    notes). A kernel whose nki.jit passes mode= (the 0.2 framework switch, deprecated and ignored from 0.3)
    was written for 0.2: a warning about the upgrade, not an error."""
    if table.vkey(version) < (0, 3):
        return Severity.INFO, f"; at the target NKI {version} nl.hbm outputs still compile"
    if _MODE_KW.search(decorator_text(nf, k)):
        return Severity.WARNING, (f"; the kernel's nki.jit(mode=...) is the NKI 0.2 form, where nl.hbm outputs "
                                  f"compile: upgrading to the target NKI {version} makes this a compile error")
    return Severity.ERROR, ""
