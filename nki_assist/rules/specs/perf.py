"""Cost-model (PERF1xx) and profile (PROF1xx) findings. Checks live in nki_assist/perf/."""

from ...findings import Severity
from ..registry import RuleSpec

RULES = [
    RuleSpec(
        id="PERF101", name="estimated-redundant-dma", category="redundant-dma", severity=Severity.WARNING,
        summary="The trace loads the same HBM bytes several times; the ratio of loaded to unique bytes is high.",
        fix="Hoist loads out of loops that do not index them, and block the free dimensions so each loaded tile "
            "is reused by several matmuls.",
        source="cost-model",
        doc="""\
## What it finds
The simulator trace records the HBM region of every DMA. This rule adds up the bytes loaded and the
unique bytes they cover (the union of the loaded boxes per HBM tensor, times the tensor's element size).
When the ratio is 1.5x or more and removing the repeats would make the estimated kernel faster, it
reports the ratio, the load lines that repeat the most bytes, and the estimated speedup of loading each
byte once. A masked load counts only the rows it moves and its box stops at the tensor's edge, so a ragged
kernel that reads each element once is never "redundant". When the reloads are mostly Tensor Engine
operand tiles re-read for each output tile, the finding is info unless the gain is 2x or more.

## Why it matters on Trainium
HBM bandwidth per NeuronCore is a few hundred GB/s while TensorE needs ~222 FLOP per HBM byte (bf16,
Trn1) to stay busy. A tiled matmul that reloads both operand tiles for every output tile moves 20-30x the
bytes it needs and stays memory-bound (the public tutorial's naive kernel reaches ~11% of peak).
On hardware the profiler reports the same thing as `hbm_reload_bytes`.

## Example
```python
for m in nl.affine_range(M // 128):
    for n in nl.affine_range(N // 512):
        for k in nl.affine_range(K // 128):
            lhsT_tile = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])  # reloaded for every n
            rhs_tile = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])     # reloaded for every m
```

## Fix
Hoist loads out of loops that do not index them, then block the free dimensions so each loaded tile
feeds several matmuls. Confirm on hardware: `hbm_reload_bytes` should fall toward 0 and
`hbm_read_bytes` toward the unique input size.
""",
        emits=(Severity.INFO,),
    ),
    RuleSpec(
        id="PERF102", name="dma-overhead-small-transfers", category="small-dma", severity=Severity.WARNING,
        summary="DMA transfers move less than ~2 KiB per descriptor, so fixed per-descriptor cost dominates.",
        fix="Load larger tiles: at least 2 KiB (ideally 4 KiB+) per partition per transfer, on all 128 partitions; "
            "coalesce adjacent loads into one.",
        source="cost-model",
        doc="""\
## What it finds
DMA transfers whose payload per descriptor (per partition row, or per contiguous chunk) is under the
documented 2 KiB minimum, when they take at least a quarter of DMA time and larger transfers would make
the estimate faster. The evidence gives the average bytes per descriptor and the share of DMA time.

The numbers are the true transfer: only masked-in, in-bounds elements, one descriptor per contiguous HBM
run within a partition (a ragged 44-row tail is 44 descriptors, not 128). A DMA that already moves its
whole HBM tensor is never counted (nothing larger exists). When most of the small transfers are Tensor
Engine operand tiles at the engine's tile shape (the tiled-GEMM pattern), the finding is info unless the
gain is 2x or more. Like every cost-model finding, the estimated speedup never exceeds the kernel's
roofline bound (docs/performance.md).

## Why it matters on Trainium
Each of the 16 DMA engines processes one descriptor at a time and pays a fixed cost per descriptor. The
DMA bandwidth guide puts the minimum efficient size at 2 KiB per partition and saturation at 4 KiB;
below 256 B a transfer is almost all overhead. The cost model charges each descriptor as much as 2 KiB of
payload, which reproduces those efficiencies.

## Example
```python
x_tile = nl.load(x[i * 128:(i + 1) * 128, 0:128])  # 128 bf16 = 256 B per partition
```

## Fix
Load at least 2 KiB, ideally 4 KiB or more, per partition per transfer on all 128 partitions; coalesce
adjacent loads into one. Confirm on hardware: `average_dma_size` rises and `dma_active_time_percent` falls.
""",
        emits=(Severity.INFO,),
    ),
    RuleSpec(
        id="PERF103", name="estimated-partition-underutilization", category="partition-underutilized",
        severity=Severity.WARNING,
        summary="Much engine time goes to instructions on few of the 128 partitions (lanes); fewer lanes cost the same.",
        fix="Put the parallel axis (rows, batch) on the partition dimension and process up to 128 rows per instruction.",
        source="cost-model",
        doc="""\
## What it finds
Vector, Scalar and GpSimd instructions that run on few of the 128 partitions, when they take at least
20% of compute time. The focus metric is time-weighted lane utilization; the speedup is what packing the
rows onto partitions would give (those instructions shrink by the lane ratio, narrow DMAs spread over all
16 DMA engines) and is never more than the lane ratio.

## Why it matters on Trainium
Vector, Scalar and GpSimd have one lane per partition, and an instruction on 1 partition costs the same
cycles as one on 128. A row-at-a-time kernel therefore runs at 1/128 of the engines' throughput. DMA
engines each serve 8 partitions, so one-partition transfers also run on a single DMA engine.

## Example
```python
for r in nl.affine_range(N):
    row = nl.load(x[r:r + 1, :])         # one partition
    nl.store(out[r:r + 1, :], nl.exp(row))
```

## Fix
Put the parallel axis (rows, batch, heads) on the partition dimension and process 128 rows per
instruction. Confirm on hardware: engine active time and instruction counts drop by about the lane ratio.
""",
        emits=(Severity.INFO,),
    ),
    RuleSpec(
        id="PERF104", name="estimated-tensor-engine-underutilization", category="tensor-engine-underutilized",
        severity=Severity.WARNING,
        summary="Matmuls use a small part of the 128x128 PE array or a short moving side, wasting TensorE cycles.",
        fix="Contract over 128 partitions, use 128-wide stationary tiles and 512-wide moving tiles (one PSUM bank).",
        source="cost-model",
        doc="""\
## What it finds
Matmuls that reach under half of TensorE peak while the Tensor Engine is busy, because the contraction
(K on partitions), the stationary free size (M) or the moving free size (N) is short. The message names
the median sizes against 128/128/512 and the speedup of full tiles.

It also fires when the Tensor Engine is *not* busy but its short K tile is why the kernel is slow: the
loads that feed the matmul operands move only K partitions each, and those loads take at least a quarter
of the kernel's time (evidence `cause = "contraction"`, `operand_load_lines`). The speedup then counts
both the matmuls and the operand DMAs a 128-row K tile makes 128/K times fewer; the small-DMA findings
on those load lines (NKI108) are marked as its symptoms and the review puts this cause first.

## Why it matters on Trainium
A matmul pass costs `max(min(64, M), N)` PE cycles whatever K is, so a 32-row contraction uses a quarter
of the 128x128 array for the same time. Moving sizes under 64 hit the 64-cycle initiation floor. Peak
needs back-to-back 128x128 stationary and 128x512 moving tiles.

## Example
```python
res += nisa.nc_matmul(lhsT_tile[0:32, 0:128], rhs_tile[0:32, 0:512])  # K = 32 of 128
```

## Fix
Contract over 128 partitions (pack several small contractions, or reshape so K is 128), use
128-wide stationary and 512-wide moving tiles. Confirm on hardware: `mfu_estimated_percent` rises; before
the fix TensorE active time is high while MFU is low.
""",
        emits=(Severity.INFO,),
    ),
    RuleSpec(
        id="PERF105", name="fp32-matmul-quarter-rate", category="fp32-matmul", severity=Severity.INFO,
        summary="Matmul operands are fp32, which runs at a quarter of the bf16/fp8 TensorE rate.",
        fix="Cast the operands to bfloat16 (or fp8) when loading; PSUM still accumulates in fp32.",
        source="cost-model",
        doc="""\
## What it finds
Matmuls whose operands are float32, with the estimated gain of running them at the bf16 rate.

## Why it matters on Trainium
TensorE runs fp32 operands at a quarter of the bf16/fp16/fp8 rate (Trn1: ~23 vs ~92 TFLOPS per core).
PSUM accumulates in fp32 either way, so bf16 operands usually keep enough accuracy.

## Example
```python
a = nl.load(a_hbm[0:128, 0:128])   # float32 input kept as float32
res += nisa.nc_matmul(a, b)
```

## Fix
Cast operands to bfloat16 (or fp8) when loading them (`nl.load(..., dtype=nl.bfloat16)` or a
`tensor_copy`), keep fp32 PSUM accumulation, and check the tolerance with the numerics report. Confirm on
hardware: TensorE active time for these matmuls falls about 4x.
""",
        emits=(Severity.WARNING,),
    ),
    RuleSpec(
        id="PERF106", name="estimated-instruction-overhead", category="instruction-overhead",
        severity=Severity.WARNING,
        summary="Many instructions have a free size under 128 elements, so the fixed ~64-cycle cost dominates.",
        fix="Batch work into fewer, larger instructions (free size >= 128 per partition); fuse elementwise steps.",
        source="cost-model",
        doc="""\
## What it finds
Instructions with a free size under 128 elements per partition that take at least a quarter of an
engine's time and spend most of it in fixed per-instruction cost (the ~64-cycle minimum initiation
interval plus access setup). The speedup assumes the same work in fewer, larger instructions.

## Why it matters on Trainium
Every instruction costs at least MIN_II (~64 engine cycles) and, on NeuronCore-v2, ~60 cycles of
tensor-access setup; the perf guide shows single-element instructions at ~264 ScalarE cycles each. An
engine issuing thousands of 8-element instructions is busy doing almost nothing.

## Example
```python
for j in nl.affine_range(512):
    acc[:, j:j + 1] = nl.multiply(x[:, j:j + 1], scale)   # free size 1
```

## Fix
Batch the work so each instruction covers 128 or more elements per partition, and fuse elementwise steps
(e.g. one `nisa.activation` with scale and bias). Confirm on hardware: instruction counts and engine
active time fall.
""",
        emits=(Severity.INFO,),
    ),
    RuleSpec(
        id="PERF107", name="estimated-transpose-overhead", category="transpose-overhead", severity=Severity.WARNING,
        summary="A large share of Tensor Engine time goes to transposes or broadcasts rather than useful matmuls.",
        fix="Choose layouts that need no transpose (swap stationary/moving, load lhsT directly) or hoist transposes "
            "out of the hot loop.",
        source="cost-model",
        doc="""\
## What it finds
TensorE transposes (and identity/ones matmuls marked as not useful) that take 10% or more of Tensor
Engine time, with the gain of removing them.

## Why it matters on Trainium
A TensorE transpose is a matmul against an identity: it occupies the PE array like a real matmul but adds
nothing to the model's FLOPs, so HFU rises while MFU does not. Neuron Explorer flags transposes above 10%
of TensorE FLOPs.

## Example
```python
for k in nl.affine_range(K // 128):
    aT = nisa.nc_transpose(a_tiles[k])      # every iteration, inside the hot loop
    res += nisa.nc_matmul(aT, b_tiles[k])
```

## Fix
Choose input layouts that need no transpose (deliver lhsT, swap stationary and moving), or transpose once
outside the hot loop. Confirm on hardware: `transpose_flops` drops under 10% and the HFU-MFU gap closes.
""",
        emits=(Severity.INFO,),
    ),
    RuleSpec(
        id="PERF108", name="estimated-engine-imbalance", category="engine-imbalance", severity=Severity.INFO,
        summary="One compute engine carries the kernel while another idles, with work that could move.",
        fix="Move copies/elementwise work to the idle engine (e.g. nisa.activation on ScalarE, tensor_copy on "
            "GpSimd) so engines overlap.",
        source="cost-model",
        doc="""\
## What it finds
A compute-bound kernel whose busiest engine (Vector, Scalar or GpSimd) is at least twice as busy as
another of them, while at least 10% of its time is in work another engine can do (copies, tensor_scalar,
activation, memset). The speedup assumes that work is split evenly.

It also compares VectorE with TensorE on the engine timeline: when VectorE is at least twice as busy
as TensorE (and carries a quarter of the kernel's time) and most of that is copying PSUM out to SBUF,
the finding names the evictions (`cause = "psum-eviction"`, their count and width). Evicting one
whole PSUM bank (512 fp32 columns) instead of a narrow slice per matmul pays the fixed per-instruction
cost once per bank, and alternating evictions with ScalarE (`nisa.activation` with a copy) halves what
is left on VectorE.

## Why it matters on Trainium
The four engines run independent instruction streams in parallel. A kernel that puts all PSUM evictions
and elementwise work on VectorE leaves ScalarE and GpSimd idle and serializes on one engine.

## Example
```python
res_sb = nl.copy(res_psum)            # VectorE
out = nl.add(res_sb, bias)            # VectorE again, ScalarE idle
```

## Fix
Move copies and elementwise steps to the idle engine (`nisa.activation` on ScalarE for PSUM evictions,
`nisa.tensor_copy(engine=...)`), so engines overlap. Confirm on hardware: the busy engine's
`*_engine_active_time_percent` falls while the idle one's rises.
""",
        emits=(Severity.WARNING,),
    ),
    RuleSpec(
        id="PERF109", name="estimated-dma-transpose-cost", category="dma-transpose", severity=Severity.WARNING,
        summary="Transposing DMAs (element-sized descriptors) take a large share of DMA time.",
        fix="Load in the natural layout and transpose on the Tensor Engine (nc_transpose), which is idle in "
            "memory-bound kernels.",
        source="cost-model",
        doc="""\
## What it finds
Transposing DMAs (`nisa.dma_transpose`, `nl.load_transpose2d`) that take 10% or more of DMA time, with
the gain of a plain load followed by TensorE transposes.

## Why it matters on Trainium
A transposing DMA moves element-sized pieces, so per-descriptor cost dominates; on NeuronCore-v2 it is
much slower than a plain load and the perf guide advises against it in memory-bound kernels, where
TensorE is idle and can transpose instead.

## Example
```python
xT = nl.load_transpose2d(x[0:128, 0:512])
```

## Fix
Load in the natural layout and transpose on the Tensor Engine (`nisa.nc_transpose`), or choose the HBM
layout so no transpose is needed. Confirm on hardware: `dma_active_time_percent` falls.
""",
        emits=(Severity.INFO,),
    ),
    RuleSpec(
        id="PROF101", name="profile-spill-traffic", category="sbuf-budget", severity=Severity.WARNING,
        summary="Measured SBUF spill save/reload traffic is over 30% of all SBUF traffic.",
        fix="Shrink live tiles (smaller blocks, declare buffers inside the loop that uses them) or fuse ops so "
            "intermediates stay in SBUF.",
        source="profile",
        doc="""\
## What it finds
In a neuron-profile / Neuron Explorer summary, SBUF spill traffic (`spill_save_bytes` +
`spill_reload_bytes`) above 30% of all SBUF traffic (`sb_read_bytes` + `sb_write_bytes`).

## Why it matters on Trainium
There are no caches: when live tiles exceed SBUF the compiler inserts spills to HBM and reloads, which
cost HBM bandwidth and DMA queue time that the kernel never asked for. The NKI perf guide calls more
than 30% spill traffic a red flag.

## Example
```python
big = nl.ndarray((64, nl.par_dim(128), 2048), dtype=nl.float32, buffer=nl.sbuf)  # 512 KiB/partition
```

## Fix
Shrink live tiles (smaller blocks, declare buffers inside the loop that uses them), or fuse operations so
intermediates are consumed while they are still in SBUF. Confirm: `spill_reload_bytes` falls.
""",
    ),
    RuleSpec(
        id="PROF102", name="profile-transpose-flops", category="transpose-overhead", severity=Severity.WARNING,
        summary="Measured transpose FLOPs are over 10% of the Tensor Engine's FLOPs.",
        fix="Remove transposes from the hot loop: pick layouts that need none, or transpose once up front.",
        source="profile",
        doc="""\
## What it finds
In a profile summary, `transpose_flops` above 10% of the Tensor Engine's FLOPs (`active_flops`, or
`model_flops + transpose_flops`), the threshold of the Neuron Explorer insight.

## Why it matters on Trainium
Transposes run on the PE array as identity matmuls: they take TensorE time without contributing model
FLOPs, so MFU stays below HFU.

## Example
```python
qT = nisa.nc_transpose(q_tile)   # per tile, inside the attention loop
```

## Fix
Pick layouts that need no transpose, swap stationary and moving operands, or transpose once up front.
Confirm: `transpose_flops` falls and MFU approaches HFU.
""",
    ),
    RuleSpec(
        id="PROF103", name="profile-tensor-engine-throttling", category="tensor-engine-underutilized",
        severity=Severity.WARNING,
        summary="The profile shows Tensor Engine throttling (utilization dropped below ~50%, re-engaging the ramp).",
        fix="Keep TensorE at least 50% busy: overlap DMA with compute and avoid long matmul-free gaps.",
        source="profile",
        doc="""\
## What it finds
A profile summary whose `throttled_flops` exceed 5% of `active_flops`, or whose insights mention Tensor
Engine throttling.

## Why it matters on Trainium
On Trn2/Trn3 TensorE starts at about half rate and ramps to full over ~3 us; if utilization drops under
50% over any ~3 us window the limit re-engages. A kernel with bursty matmuls separated by DMA waits keeps
paying the ramp.

## Example
```python
for i in nl.affine_range(n):
    t = nl.load(x[i])            # long DMA wait
    acc += nisa.nc_matmul(w, t)  # short burst of matmuls
```

## Fix
Keep TensorE at least 50% busy: prefetch the next tiles while computing the current ones, and avoid long
matmul-free gaps. Confirm: `throttled_flops` falls toward 0.
""",
    ),
    RuleSpec(
        id="PROF104", name="profile-low-nki-coverage", category="instruction-overhead", severity=Severity.INFO,
        summary="Less than half of the profiled device time is spent in NKI kernel instructions.",
        fix="Look at the compiler-generated work around the kernel (layout copies, casts) and fold it into the kernel.",
        source="profile",
        doc="""\
## What it finds
A profile summary where NKI kernels cover less than half of the profiled device time
(`nki_coverage_percent` under 50, or the Neuron Explorer coverage insight).

## Why it matters on Trainium
Time outside the kernel is compiler-generated work around it (layout copies, casts, reshapes); speeding
up the kernel itself cannot recover it. The estimated speedup is the bound of removing that work.

## Example
```python
y = my_kernel(x.transpose(0, 1).contiguous().to(torch.bfloat16))  # transpose and cast outside NKI
```

## Fix
Fold the surrounding layout changes and casts into the kernel (load with the needed layout and dtype) or
change the caller so they are not needed. Confirm: `nki_coverage_percent` rises.
""",
    ),
]
