"""Memory-hierarchy rules: partitions, SBUF budget, PSUM banks, matmul limits, buffer placement (DMA traffic: dma.py)."""

from __future__ import annotations

import re

from ...api import table
from ...api.hardware import DTYPE_BYTES, Target
from ...api.version import target_version
from ...findings import Severity
from ...parse.nki import kernel_resources, psum_banks_of
from ...parse.nki_model import NkiFile
from ..registry import RuleSpec
from .common import check, decorator_text, emit, shape_str

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI101", "partition-dim-exceeds-limit", "partition-limit", Severity.ERROR,
             "An SBUF/PSUM tile puts more than 128 rows on the partition axis.",
             fix="Tile the partition axis into blocks of nl.tile_size.pmax (128) rows.",
             doc="""\
## What it finds
An SBUF or PSUM tile, explicitly allocated or the result of `nl.load`, whose partition dimension is larger than `nl.tile_size.pmax` (128). The first dimension counts, or the one marked with `nl.par_dim`. Shapes are constant-folded (`2 * nl.tile_size.pmax` is 256).

## Why it matters on Trainium
SBUF and PSUM have 128 partitions on trn1, trn2 and trn3. A tile cannot span more than that, and the compiler stops with `Size of partition dimension 256 exceeds architecture limitation of 128`.

## Example
```python
big = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.sbuf)   # 256 > 128 partitions
```

## Fix
Tile the partition axis: loop over `M // 128` blocks, or keep a Python list of `(128, F)` tiles.
"""),
    RuleSpec("NKI102", "sbuf-over-budget", "sbuf-budget", Severity.ERROR,
             "Simultaneously live SBUF tiles (block dims included) exceed the target's bytes per partition.",
             fix="Shrink the block dims or free sizes, or allocate tiles inside the loop that uses them.",
             doc="""\
## What it finds
The SBUF tiles that are live at the same time need more bytes per partition than the target has. Each tile costs block dims x free dims x dtype size. A tile is live in the loop body that allocates it and in every loop nested inside that body; tiles in sibling loops do not add up. The budget is the usable SBUF per partition (trn2: 224 KiB minus the compiler's 16.3 KiB reserve = 212,728 B).
A legacy block-dimension tile (`nl.ndarray((B, nl.par_dim(128), F))`) gets a lifetime per block from the
compiler: when the tiles fit counting one block of each, the finding is a warning saying so (the kernel
overflows only if it holds the blocks together; the simulator's SIM104 measures what a run holds), and an
error only when even one block each does not fit.

## Why it matters on Trainium
SBUF is software-managed and has no cache behind it. When live tiles exceed it, the compiler spills to HBM (slow) or fails with an allocation error (`[GCA046] Some infinite-cost nodes remain`).

## Example
```python
stage = nl.ndarray((K // BK, nl.par_dim(BK), N), dtype=nl.bfloat16, buffer=nl.sbuf)
# K=4096, BK=32, N=2048 -> 128 blocks x 2048 x 2 B = 524288 B per partition > 212728 B
```

## Fix
Shrink block counts or free sizes, stream the data through a smaller tile inside the loop, or allocate a tile in the loop scope where it is used.
""", emits=(Severity.WARNING,)),
    RuleSpec("NKI103", "psum-tile-exceeds-bank", "psum-bank-overflow", Severity.ERROR,
             "A PSUM tile needs more than one 2 KiB bank per partition (more than 512 fp32).",
             fix="Split the free dimension into 512-wide fp32 blocks, one PSUM bank each.",
             doc="""\
## What it finds
A PSUM tile whose free size needs more than one 2 KiB bank per partition, that is more than 512 float32 elements. On trn3 a matmul can write across all 8 banks, so there the limit is the full 16 KiB.

## Why it matters on Trainium
Each Tensor Engine accumulation group writes into one 2 KiB PSUM bank per partition. A wider tile cannot be a single matmul destination on trn1/trn2, and the compiler either rejects it or splits it in ways that break `+=` accumulation.

## Example
```python
acc = nl.zeros((nl.par_dim(128), 1024), dtype=nl.float32, buffer=nl.psum)
# PSUM tile [128, 1024] float32 needs 4096 B per partition; a PSUM bank holds 2048 B.
```

## Fix
Split N into 512-wide blocks (`nl.tile_size.psum_bank_fmax`), with one PSUM tile and one matmul chain per block.
""", emits=(Severity.INFO,)),
    RuleSpec("NKI104", "too-many-psum-banks", "psum-bank-overflow", Severity.ERROR,
             "PSUM tiles live at the same time need more than the 8 banks a partition has.",
             fix="Evict PSUM results to SBUF sooner, or allocate fewer accumulators per loop scope.",
             doc="""\
## What it finds
PSUM tiles live at the same time that together need more than the 8 banks a partition has. Each tile needs ceil(free bytes / 2048) banks per block, block dims included. Liveness follows loop scopes, as for SBUF.
Tiles are counted by liveness: a PSUM tile is live from its allocation to the last statement that names it
(to the end of any loop that uses it), in its own loop scope and the scopes nested in it. Kernels that
allocate many short-lived PSUM tiles at one scope and copy each out before the next (common in new-dialect
kernels) therefore need only the banks that are live at once.

## Why it matters on Trainium
PSUM is 16 KiB per partition in 8 banks, so at most 8 accumulation groups can be in flight. Going past that forces the compiler to serialise and evict, or to fail allocation.

## Example
```python
acc_a = nl.zeros((4, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)   # 4 banks
acc_b = nl.zeros((4, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)   # 4 banks
extra = nl.zeros((nl.par_dim(128), 256), dtype=nl.float32, buffer=nl.psum)      # 9th bank
```

## Fix
Evict finished accumulators to SBUF (`nisa.tensor_copy`) before starting new ones, or move accumulators into the loop scope that uses them.
"""),
    RuleSpec("NKI105", "matmul-tile-limit", "matmul-tile-limit", Severity.ERROR,
             "A matmul's contraction, stationary free or moving free size exceeds the TensorE limits.",
             fix="Tile K and M to 128 and the moving free size to 512 (gemm_moving_fmax).",
             doc="""\
## What it finds
An `nl.matmul` or `nisa.nc_matmul` whose resolved operand shapes exceed the Tensor Engine limits: contraction K (partition axis) > 128, stationary free size M > 128, moving free size N > 512 (trn3: 4096 for an fp32 destination, 8192 for bf16).

## Why it matters on Trainium
The PE array is 128x128, and one matmul instruction writes one PSUM bank (512 fp32) on trn1/trn2. Larger tiles are compile errors.

## Example
```python
st = nl.ndarray((nl.par_dim(128), 256), dtype=nl.bfloat16, buffer=nl.sbuf)
res = nisa.nc_matmul(st, mv)   # stationary free M=256 > 128
```

## Fix
Tile M to 128 (`gemm_stationary_fmax`), N to 512 (`gemm_moving_fmax`) and K to 128, with a loop over K accumulating into PSUM.
"""),
    RuleSpec("NKI106", "matmul-operand-placement", "buffer-placement", Severity.ERROR,
             "A matmul reads an operand from HBM or PSUM, or writes its result outside PSUM.",
             fix="Load operands into SBUF with nl.load / nisa.dma_copy and give the matmul a PSUM destination.",
             doc="""\
## What it finds
A matmul operand read straight from HBM (a kernel input or an `nl.hbm` tensor) or from PSUM, or a matmul destination outside PSUM. In new-dialect (NKI 0.3+) code an operand bound to `nl.transpose(...)` counts as PSUM (a warning, medium confidence: the SDK's `nl.transpose` example names its result `result_psum` and copies it to SBUF with `nisa.tensor_copy`; trnsparse's kernels failed with "stationary must be in sbuf" and were fixed by staging the transpose through SBUF-producing loads). Parameters of a helper function the kernel calls (e.g. `@nki.jit(mode='trace')` sub-kernels), or of a function with no kernel decorator (a building block other files call), are whatever tiles the caller passes, so they are not taken to be HBM inputs. A parameter of a helper or sub-kernel (called from another function in the checked files) is whatever its callers pass: the rule judges it only when every call site the project model resolves passes the same kind of buffer (a helper whose callers all pass a PSUM tile as `dst` is fine; one whose caller passes its HBM output is not).

## Why it matters on Trainium
The Tensor Engine reads only SBUF and writes only PSUM. Legacy NKI reports `err_unsupported_memory`; new NKI rejects the instruction.

## Example
```python
res = nl.matmul(lhsT[0:128, 0:128], b, transpose_x=True)   # lhsT is an HBM kernel input
```

## Fix
Load the operand into SBUF first (`nl.load` or `nisa.dma_copy`), copy PSUM results to SBUF with `nisa.tensor_copy`, and give matmuls a `buffer=nl.psum` destination.
""", emits=(Severity.WARNING,)),
    RuleSpec("NKI107", "dma-from-psum", "buffer-placement", Severity.ERROR,
             "New NKI: a DMA or nl.store reads directly from a PSUM tile, which 0.3+ rejects.",
             fix="Copy the PSUM tile to SBUF with nisa.tensor_copy (or nl.copy) and store from SBUF.",
             doc="""\
## What it finds
In new NKI (`import nki`), `nisa.dma_copy`, `nisa.dma_transpose` or `nl.store` whose source tile is in PSUM.

## Why it matters on Trainium
Since NKI 0.3, DMA has no PSUM source and `nl.store` cannot take PSUM. The legacy habit of storing a matmul result straight to HBM no longer compiles.

## Example
```python
nisa.nc_matmul(dst=ps, stationary=st, moving=mv)
nisa.dma_copy(dst=out[0:128, 0:512], src=ps)   # PSUM source
```

## Fix
Evict through SBUF: `nisa.tensor_copy(dst=sb, src=ps)`, then `nisa.dma_copy(dst=out[...], src=sb)`.
"""),
    RuleSpec("NKI110", "kernel-output-not-shared-hbm", "buffer-placement", Severity.ERROR,
             "A kernel returns a tensor that is not in HBM (shared_hbm in new NKI).",
             fix="Allocate the output with nl.ndarray(shape, dtype, buffer=nl.shared_hbm) and store into it.",
             doc="""\
## What it finds
A kernel that returns a tensor allocated outside HBM. In new NKI the output must also be `nl.shared_hbm`: `nl.hbm`/`nl.private_hbm` are per-core. A `return` inside a function nested in the kernel (a closure handing tiles back to the kernel) is not the kernel's output. Only entry kernels are judged: a `@nki.jit` function called from another kernel in the checked files (a sub-kernel, per the project model) hands its tiles back to its caller. A function wrapped with `nki.jit(fn)` is an entry kernel through the wrapper.

Severity: an SBUF/PSUM output is an `error` in every dialect. An `nl.hbm`/`nl.private_hbm` output of a new-dialect kernel depends on the target NKI version (`nki-version`, docs/api-table.md): `error` from 0.3 (the 0.3.0 release notes list "Output tensors must use `buffer=nl.shared_hbm`. Using `nl.hbm` causes compilation failures." as a breaking change), `info` below 0.3, and a `warning` when the kernel's `nki.jit` passes `mode=` (the 0.2 framework switch, deprecated and ignored from 0.3): such a kernel was written for 0.2, where it compiles, and the finding is about the upgrade.

## Why it matters on Trainium
Kernel outputs go back to the framework through HBM. Since NKI 0.3, outputs must be in `shared_hbm` so both cores of an LNC=2 logical core see them. Returning an SBUF tile is an error in every dialect.

## Example
```python
out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.hbm)
...
return out   # new NKI: must be nl.shared_hbm
```

## Fix
Allocate the output with `buffer=nl.shared_hbm` and store or `dma_copy` the result into it.
""", emits=(Severity.WARNING,)),
]


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
            banks = _bank_array(a, t)
            if banks:  # [P, nb, <=bank]: each [:, b, :] slice is one bank; the matmuls write slices
                yield emit("NKI103", nf, a.line, a.col, a.end_line, a.end_col,
                           f"PSUM tensor {shape_str(a.shape)} {a.dtype or 'float32'} holds {banks} banks as an array "
                           f"of bank-sized slices ({a.free_bytes} B per partition of {t.psum_banks * t.psum_bank_bytes}): "
                           "each `[:, b, :]` slice fits one bank, so a matmul that writes one slice stays in its bank. "
                           "Not an overflow by itself; NKI104 counts the banks it holds.",
                           {"tensor": a.name, "shape": list(a.shape or ()), "bytes_per_partition": a.free_bytes,
                            "bank_bytes": t.psum_bank_bytes, "free_elems": elems, "bank_array": banks},
                           severity=Severity.INFO, fix=None)
                continue
            yield emit("NKI103", nf, a.line, a.col, a.end_line, a.end_col,
                       f"PSUM tile {shape_str(a.shape)} {a.dtype or 'float32'} needs {a.free_bytes} B per partition; "
                       f"a PSUM bank holds {t.psum_bank_bytes} B.",
                       {"tensor": a.name, "shape": list(a.shape or ()), "bytes_per_partition": a.free_bytes,
                        "bank_bytes": t.psum_bank_bytes, "free_elems": elems},
                       fix=f"Split the free dimension into {half}-wide blocks, one PSUM bank each.")


def _bank_array(a, t: Target) -> int:
    """Banks of a PSUM tensor shaped as whole banks ([P, nb, F] with F elements filling at most one bank and the
    whole within PSUM), else 0: its slices along the bank axis are bank-aligned tiles, not one oversized tile."""
    shape = list(a.shape or ())
    size = DTYPE_BYTES.get(a.dtype or "float32", 4)
    if len(shape) < 3 or not isinstance(shape[-1], int) or shape[-1] * size > t.psum_bank_bytes:
        return 0
    if a.free_bytes > t.psum_banks * t.psum_bank_bytes or t.psum_bank_bytes % (shape[-1] * size):
        return 0
    return -(-a.free_bytes // t.psum_bank_bytes)


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
