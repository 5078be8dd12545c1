"""Static NKI rules (checks in rules/nki_*.py).

Id ranges: NKI0xx front end, NKI1xx memory hierarchy, NKI2xx migration correctness,
NKI3xx hardware utilisation, NKI4xx numerical accuracy, NKI5xx dialect / API version.
"""

from ...findings import Severity
from ..registry import RuleSpec

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

RULES = [
    RuleSpec("NKI001", "nki-syntax-error", "unsupported-construct", E,
             "Part of the file cannot be parsed (or a check could not analyse it); facts there are missing.",
             fix="Fix the syntax error; the checks skip the code that does not parse.",
             doc="""\
## What it finds
Code the tree-sitter parser cannot parse (a missing bracket, a stray operator). The finding sits on the first broken line. The rest of the file still gets checked. The same id, at `info` severity, also reports a check that crashed on this file: the other checks still ran. When Python itself cannot compile the file, the finding is one error at the line and column CPython reports (a duplicated docstring tail is an `unexpected indent` there, not wherever the tree-sitter parser lost track), and the rules that report something missing (NKI202, NKI203, NKI206, NKI402) skip the file: what they would call missing is usually the code that did not parse. When only nki-assist's parser fails on code Python accepts, the finding is an `info` saying facts are missing there.

## Why it matters on Trainium
The NKI compiler rejects the file outright, and every fact nki-assist extracts from the broken region (allocations, loops, shapes) is missing. So capacity and correctness checks are silent there, and that silence is not evidence that the code is fine.

## Example
```python
y = nl.multiply(x, 2.0 +)   # NKI001: cannot parse
```

## Fix
Fix the syntax error. Once the file parses, the other checks cover the whole file again.
"""),
    RuleSpec("NKI002", "undefined-name", "unsupported-construct", E,
             "A name is read that is neither defined nor imported where it is used (pyflakes).",
             fix="Define or import the name, or use the name that was meant.",
             doc="""\
## What it finds
A name the code reads that no assignment, parameter, import or builtin defines in that scope, as pyflakes reports it (`undefined name`, `local variable referenced before assignment`, a name listed in `__all__` that does not exist). Checked on every NKI file that Python can compile.

## Why it matters on Trainium
NKI kernels are Python traced at compile time: the line raises `NameError` when the tracer reaches it. In a branch that only some shapes or flags take (a quantised path, a masking option), the kernel works in every test and fails in production on the first call that takes the branch.

## Example
```python
def attention(q, k, v, mask_active):
    return _attend(q, k, v, attention_mask=mask)   # NKI002: `mask` is not defined
```

## Fix
Use the name that was meant (`mask_active` above), or import the missing one.
"""),
    RuleSpec("NKI003", "imported-name-missing", "unsupported-construct", E,
             "`from m import x` names a module of the checked tree that does not define `x`.",
             fix="Import the name the module defines, or add it to that module.",
             doc="""\
## What it finds
`from pkg.mod import name` (relative imports included) where `pkg.mod` is one of the files checked together (the project model) and defines no `name`: no function, class, assignment or import of that name at its top level (or under its `if`/`try` blocks). Modules with a `*` import, modules that do not compile and submodules present on disk are not judged.

## Why it matters on Trainium
Importing the kernel file raises `ImportError` before any kernel runs, typically after a helper was renamed or moved in a refactor.

## Example
```python
from .helpers import load_tile   # NKI003: helpers.py defines load_tiles, not load_tile
```

## Fix
Import the name the module defines, or restore the name in the module.
"""),
    RuleSpec("NKI004", "redefined-unused-name", "unsupported-construct", W,
             "A function or class is defined again before the first definition is used (pyflakes).",
             fix="Rename or delete one of the two definitions.",
             doc="""\
## What it finds
A function or class defined again (by `def`, `class` or a decorated definition) before anything read the first definition, as pyflakes reports it (`redefinition of unused ...`). A repeated import is harmless and not reported.

## Why it matters on Trainium
Every call reaches the second definition: the first is dead code. In kernel files this is usually a copied helper that was edited in one copy (a tile size, a mask) while the callers run the other.

## Example
```python
def load_block(x, i): ...    # the version with the tail mask
def load_block(x, i): ...    # NKI004: redefinition; this one runs
```

## Fix
Give the two functions different names, or delete the stale one.
"""),
    # memory hierarchy
    RuleSpec("NKI101", "partition-dim-exceeds-limit", "partition-limit", E,
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
    RuleSpec("NKI102", "sbuf-over-budget", "sbuf-budget", E,
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
"""),
    RuleSpec("NKI103", "psum-tile-exceeds-bank", "psum-bank-overflow", E,
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
"""),
    RuleSpec("NKI104", "too-many-psum-banks", "psum-bank-overflow", E,
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
    RuleSpec("NKI105", "matmul-tile-limit", "matmul-tile-limit", E,
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
    RuleSpec("NKI106", "matmul-operand-placement", "buffer-placement", E,
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
"""),
    RuleSpec("NKI107", "dma-from-psum", "buffer-placement", E,
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
    RuleSpec("NKI108", "small-dma-in-loop", "small-dma", W,
             "A DMA inside a loop moves under 2 KiB per partition or uses fewer than 128 partitions.",
             fix="Move bigger tiles per transfer: 128 partitions and at least 2 KiB (ideally 4 KiB+) each.",
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
    RuleSpec("NKI109", "loop-invariant-load", "redundant-dma", W,
             "A load inside a loop reads the same HBM region on every iteration of the innermost loop.",
             fix="Hoist the load out of the loop (or up to the loop whose variable it depends on).",
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
    RuleSpec("NKI110", "kernel-output-not-shared-hbm", "buffer-placement", E,
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
"""),
    RuleSpec("NKI111", "sliding-window-reloaded", "redundant-dma", I,
             "A load steps its offset by less than its extent over a loop that selects no output element (the "
             "taps of a convolution or stencil): correct overlapping windows, each reloaded from HBM.",
             fix="Load one halo tile (window extent plus the taps' total shift) per output tile and give each tap "
                 "a shifted SBUF slice of it.",
             doc="""\
## What it finds
A load inside a loop whose offset steps by less than the loaded extent, where the loop variable selects
no element of the kernel output: the taps of a convolution or a stencil, each reading the input window
shifted by one tap. The windows overlap on purpose, so this is not an indexing error (MIG110 stays
silent on such loads); the finding reports what the overlap costs: every tap's window is a separate
HBM transfer of mostly the same bytes.

## Why it matters on Trainium
HBM-to-SBUF DMA is usually the bottleneck of a convolution written as shifted matmuls. With `KW` taps
the loop above moves each input element `KW` times; the shifted copies can come from SBUF instead,
where a free-axis slice of a tile is just an access-pattern offset for the engine reading it.

## Example
```python
for n in range(L // 512):
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    for t in range(3):                                    # taps: no output element depends on t
        xw = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xw, src=x[0:128, n * 512 + t:n * 512 + t + 512])   # 511 of 512 columns shared
        nisa.nc_matmul(dst=acc, stationary=w_sb[0:128, t * 128:(t + 1) * 128], moving=xw)
```

## Fix
Load one halo tile per output tile, before the tap loop: the window extent plus the total shift of the
taps (here 512 + 2 = 514 columns), and give tap `t` the shifted SBUF slice `halo[:, t:t + 512]` as its
operand. One DMA replaces `KW`, and the matmuls (or vector ops) are unchanged.
"""),
    # migration correctness
    RuleSpec("NKI201", "affine-range-carried-dependency", "loop-carried-dependency", E,
             "Legacy NKI: an nl.affine_range iteration reads a tensor an earlier iteration wrote "
             "(other than `psum += matmul`).",
             fix="Use nl.sequential_range for the loop, or accumulate in PSUM with `acc += nl.matmul(...)`.",
             doc="""\
## What it finds
Legacy NKI only: inside `nl.affine_range`, a tensor defined before the loop is read and written at the same location by every iteration: `acc[...] = nl.add(acc, x)` (an error). `acc += x` (also `-=`, `*=`) outside PSUM is an associative reduction, so the iteration order does not change the result (AWS's fused Mamba tutorial accumulates `scanC_accum[...] += scanC` in SBUF this way), but maintainers report `+=` on SBUF as unreliable in the compiler: a warning. The documented `psum += nl.matmul(...)` accumulation (also into a direct `ncc.psum.mod_alloc(...)` allocation) is allowed. So are writes indexed by the loop variable, tensors freshly created inside the loop, and trace-time Python values: an address counter `addr += size` is unrolled by the tracer, and a predicate over indices and sizes rebound in the loop (`mask = (nl.arange(128)[:, None] + 128 * i < n) & mask`) is built by the tracer too; neither is carried on the device. A tile copied (or cast) into its own name, `x = nl.copy(x, dtype=...)`, reading nothing else the kernel binds, gives the same values in any order: an info that the copy belongs before the loop.

## Why it matters on Trainium
`affine_range` declares the iterations independent, so the compiler may reorder or pipeline them. With a real carried dependency the result is wrong, or the compile fails (`[TEN404] ... Can only handle single store`), and the simulator may not show it.

## Example
```python
acc = nl.zeros((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
for k in nl.affine_range(8):
    acc += nl.load(a[k * 128:(k + 1) * 128, 0:512])
```

## Fix
Use `nl.sequential_range` for loops with a carried dependency, or accumulate matmuls in a PSUM tile with `+=`.
"""),
    RuleSpec("NKI210", "partition-axis-reduction", "unsupported-construct", E,
             "A Vector Engine reduction (nl.sum/max/min/mean/..., nisa.tensor_reduce) over axis 0, the partition "
             "axis: the engines reduce along free axes only, so the kernel does not compile.",
             fix="Contract the partition axis on the Tensor Engine: matmul with a ones vector into PSUM, or "
                 "transpose first and reduce along the free axis.",
             doc="""\
## What it finds
A reduction call whose `axis` (keyword or positional) is the literal `0`, or a tuple/list containing
`0`, on an on-chip tile that has more than one partition: `nl.sum`, `nl.max`, `nl.min`, `nl.mean`,
`nl.prod`, `nl.all`, `nl.any`, `nl.var`, `nisa.tensor_reduce`. The simulator reports the same
construct at run time as SIM119.

## Why it matters on Trainium
The Vector Engine has one lane per partition and reduces along the free axes of each lane; it cannot
combine lanes (`nki.isa.tensor_reduce`: free axes only, never the partition axis). The compiler
rejects the call: this is a construct the hardware cannot execute, not a slow path. CUDA code that
sums a column with a block-wide tree has no one-instruction equivalent on a NeuronCore.

## Example
```python
t = nl.load(x[0:128, 0:512])
col = nl.sum(t, axis=0, keepdims=True)       # sums across the 128 partitions
```

## Fix
Use the Tensor Engine, which contracts over the partition axis natively:
`nl.matmul(ones, t, transpose_x=True)` with `ones = nl.full((128, 1), 1.0, dtype=nl.float32)` gives
the [1, 512] column sums in fp32 PSUM. For max/min, transpose 128x128 blocks (`nisa.nc_transpose`) and
reduce along the free axis.
"""),
    RuleSpec("NKI211", "tile-constant-on-wrong-axis", "indexing-error", W,
             "A tile-size constant the kernel uses for one axis (TILE_K for K) offsets or sizes another axis "
             "(M): correct only while the two constants are equal.",
             fix="Use the tile constant of the axis being indexed (TILE_M for the M axis).",
             doc="""\
## What it finds
Tile-size constants take their role from the kernel itself: the trip counts and asserts that divide an
axis symbol by them (`M // TILE_M`, `assert K % BLOCK_K == 0`) and the HBM slices they offset
(`lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:...]` with `K, M = lhsT.shape`). A constant whose uses agree
(at least two, and 60% of them, on one axis) has that axis. The rule reports:
- an HBM tensor slice whose axis is one symbol but whose index uses a constant of another axis
  (`result[(TILES_IN_BLOCK_M * m + bm) * TILE_K + i.p, ...]` where result's axis 0 is M);
- a tile loaded from an HBM slice whose free size is a constant of another axis than the one the load
  reads there (`lhsT_tiles = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), TILE_N))` filled from
  `lhsT[..., m * TILE_M:(m + 1) * TILE_M]`).

## Why it matters on Trainium
Tile sizes are often equal in the sizes a kernel is written and tested at (TILE_K == TILE_M == 128), so
neither a run nor a shape check sees the mix-up; the first caller that changes one tile size (a 64-row M
tile, a smaller K step for SBUF room) gets rows written at the wrong offsets or tiles of the wrong width.
AWS's matmul tutorial shipped both forms and fixed them (nki-samples b2be1a5, 5480d25).

## Example
```python
nl.store(result[(TILES_IN_BLOCK_M * m + bm) * TILE_K + i.p, BLOCK_N * n + i.x], value=packed)
```

## Fix
Use the constant of the axis being indexed (`TILE_M` for result's rows); size tiles by the axis they hold.
"""),
    RuleSpec("NKI212", "loop-variable-after-loop", "indexing-error", W,
             "A loop variable is read after its loop has ended (`k` where the enclosing loop's `m` was meant).",
             fix="Use the variable of the loop the statement is in, or compute the value explicitly.",
             doc="""\
## What it finds
A name bound by a `for` loop inside a kernel that a later statement of the same block reads before
assigning it again: `for k in nl.affine_range(...): ...` followed by `x[k * 128:...]` outside that loop.
Reads inside a later loop that rebinds the name, and reads after the name is assigned again, are not
reported.

## Why it matters on Trainium
An `nl.affine_range`/`sequential_range` index has no value outside its loop; a Python `range` variable
keeps its last value, which in a kernel is almost always the wrong tile (`k` where the enclosing loop's `m`
was meant). The kernel still traces and runs, and only the rows it misplaces show the mistake, often
explained as a tail problem.

## Example
```python
for m in nl.affine_range(M // 128):
    for k in nl.affine_range(K // 128):
        ...
    nl.store(out[k * 128:(k + 1) * 128, :], value=res)   # `m` was meant
```

## Fix
Index with the variable of the loop the statement is in.
"""),
    RuleSpec("NKI213", "bit-test-as-divisibility-guard", "missing-boundary-mask", W,
             "A guard tests one bit (`dim & 128 == 0`) where divisibility (`dim % 128 == 0`) was meant.",
             fix="Write the guard with `%` (`dim % 128 == 0`).",
             doc="""\
## What it finds
An `assert`, `if` or `while` condition that compares `x & C` with 0 (`==`, `!=`, or `not x & C`) where `C`
is an integer literal that is a power of two of at least 2. Masks of low bits (`x & 127 == 0`, a correct
multiple-of-128 test) and parity tests (`x & 1`) are not reported.

## Why it matters on Trainium
Tile loops assume the guarded size is a multiple of the tile (`dim // 128` tiles of 128). `dim & 128 == 0`
only says that the bit of value 128 is clear: it rejects 384 (three full tiles) and accepts 100, so ragged
sizes pass the guard and lose their tail, while valid ones are refused. nki-samples shipped this guard in
its fused RMSNorm-QKV kernel and fixed it (fc202b2).

## Example
```python
assert dim <= 8192 and dim & 128 == 0, "Unsupported hidden dimension"   # NKI213
```

## Fix
`assert dim % 128 == 0` (equivalently `dim & 127 == 0`).
"""),
    RuleSpec("NKI214", "misspelled-branch-assignment", "uninitialized-read", W,
             "One branch of an if/elif chain assigns a near-miss of the name the other branches assign and the "
             "code reads after it (`casual_mask` for `causal_mask`).",
             fix="Assign the name the other branches assign.",
             doc="""\
## What it finds
In a function, a name assigned in one branch of an `if`/`elif`/`else` chain and never read anywhere (as
pyflakes reports it: `local variable ... is assigned to but never used`), when another branch of the same
chain assigns a name one or two edits away (a typo or a swapped pair of letters; one edit for names under 8
characters), this branch does not assign that name, and the code after the chain reads it.

## Why it matters on Trainium
On the path through the misspelled branch the name read after the chain is never set: the kernel raises
`UnboundLocalError` when traced with that flag, or, inside a loop, silently reuses the value an earlier
iteration computed (a stale mask). Tests that only take the other branches pass. nki-samples' flash attention
assigned `casual_mask` in its no-mask branch and fixed it (2844505).

## Example
```python
if use_causal_mask:
    causal_mask = i * B_P_SIZE >= j * LARGE_TILE_SZ
else:
    casual_mask = True          # NKI214: `causal_mask` was meant
if causal_mask:
    ...
```

## Fix
Assign the name the other branches assign (`causal_mask = True`).
"""),
    RuleSpec("NKI215", "softmax-sum-after-dropout", "output-mismatch", W,
             "The softmax denominator is summed from the probabilities after dropout was applied to them.",
             fix="Sum the probabilities before the dropout; apply dropout to the numerator only.",
             doc="""\
## What it finds
In one function, in source order: a tile written by an exp (`nl.exp`, `nisa.activation(_reduce)` with
`op=nl.exp`), then a call whose name contains `dropout` (`nl.dropout`, or a local helper such as
`dropout_p_local(p_local=...)`) that takes that tile (in place, or writing a new one), then a sum of the
dropped tile (`nl.sum`, `tensor_reduce(op=nl.add)`) before any new exp rewrites it.

## Why it matters on Trainium
Attention dropout multiplies the probabilities by a random keep mask (and 1/(1-p)) after the softmax; the
normaliser is the sum of the undropped exp values. Summing the dropped tile renormalises each row by the
fraction dropout kept, so the output's expectation is no longer the attention output: training diverges
slightly from the reference at dropout > 0, and tests at dropout 0 pass. nki-samples' flash attention
forward did this and fixed it (d3b64a8) by taking the sum with the exp's `reduce_res=` before the dropout.

## Example
```python
p[:, s] = nisa.activation(np.exp, qk[:, s], bias=-m)
dropout_p_local(p_local=p, dropout_p=rate, ...)
partial_sum[:, i] = nl.sum(p[:, s], axis=1)       # NKI215: sums the dropped-out probabilities
```

## Fix
Take the sum from the exp itself (`activation_reduce(..., reduce_op=nl.add, reduce_res=partial_sum[:, i])`)
and apply dropout afterwards to the numerator only.
"""),
    RuleSpec("NKI202", "unused-kernel-input", "unused-input", W,
             "A kernel parameter is never read.",
             fix="Use the input (a missing epilogue such as bias?) or remove it from the signature.",
             doc="""\
## What it finds
A kernel parameter that the kernel body never reads. A parameter the body writes into (`out[...] = ...`, or the `dst=` of an ISA call: an output buffer the caller passes) and `*args`/`**kwargs` are not reported. Only entry kernels (and functions no other checked function calls) are judged: a helper or sub-kernel that ignores a parameter (a buffer manager, a name suffix passed to every helper) is plumbing, not a dropped kernel input. Names read inside f-strings and parameters that are called (`activation_fn(x)`) count as reads.

## Why it matters on Trainium
In a CUDA port this usually means part of the computation was dropped (a bias, a scale, a residual), and the results differ from the CUDA kernel only for inputs where that argument matters.

## Example
```python
def gemm_bias(lhsT, rhs, bias):   # bias is never loaded
```

## Fix
Apply the input the way the CUDA kernel does, or remove it from the signature and the call sites.
"""),
    RuleSpec("NKI203", "floor-div-trip-count-unguarded", "missing-boundary-mask", W,
             "A loop runs `N // T` iterations with no assert that T divides N and no mask or clamp for the tail.",
             fix="Add `assert N % T == 0`, or iterate ceil(N / T) tiles and clamp the last one (min()/mask=).",
             doc="""\
## What it finds
A loop whose trip count floor-divides by a tile size (`M // 128`, directly or through a name bound to it) when no assert proves divisibility (`assert M % 128 == 0`), and the loop has no mask, `min()` clamp or `if` guard for the tail, and no store after the loop completes the same output (a separate tail tile; NKI207 checks where it starts). An assert on a derived size counts (`L = LX - 128; assert L % 512 == 0`). With constant operands that do not divide, the rule fires as an error and states how many elements are dropped.

The finding declares its runtime claim (`evidence["claim"]`, kind `tail-dropped`, with the numerator as a linear form of the kernel's shape symbols). In a review with a port spec the claim is evaluated on every size: when a size that leaves a partial tile passes with every output element written (a tail handled where the static check cannot see, e.g. in a helper), the finding is demoted to info with that evidence; when such a size leaves output unwritten, it is promoted to error and leads the item as the root cause. Guards also count when they are a library assert helper (`kernel_assert(M % 128 == 0, ...)`), in any function that calls this one (directly or through others, the argument passed for a parameter included), in a validator or config builder such a caller runs, or in a method of a config class (`if self.H % 512 != 0: raise`). A ceiling division (`(T + 15) // 16`) rounds up and is not reported, and constants imported from other checked modules fold (`PSUM_SIZE // TILE_SIZE`). A loop over MX quadrants (`// 32` or `// 4` in a loop whose variable names a quadrant) is not reported: the format keeps the partition dimension a multiple of 32.

## Why it matters on Trainium
The CUDA kernel guards its tail threads with `if (row < M)`. The floored NKI loop silently skips the last `M % 128` rows: output is correct for aligned test sizes and uninitialised for everything else.

## Example
```python
M, N = a.shape
for i in nl.affine_range(M // 128):   # M % 128 rows are never processed
```

## Fix
Assert the precondition (`assert M % 128 == 0`), or iterate `(M + 127) // 128` tiles and clamp the last one (`min(128, M - i * 128)` in new NKI, `mask=` in legacy NKI).
"""),
    RuleSpec("NKI207", "tail-tile-offset", "indexing-error", E,
             "A floored main loop is completed by a partial tile after it, but that tile starts at a different "
             "offset than where the loop stopped (e.g. R // 128 instead of (R // 128) * 128).",
             fix="Start the partial tile at tile * (N // tile) (= N - N % tile), the first row the loop did not cover.",
             doc="""\
## What it finds
A kernel that tiles an axis with a floored loop (`for t in range(R // 128)`, storing rows
`t * 128 ... (t + 1) * 128`) and completes it with one partial tile after the loop, where that partial
tile starts at a different offset than where the loop stopped. The usual slip is the tile *count*
`R // 128` used as the first *row*, instead of `(R // 128) * 128` (= `R - R % 128`).

## Why it matters on Trainium
Shapes are static at trace time, so a separate tail tile is a common and correct way to handle a ragged
size without masks. Started at the wrong row it rewrites rows the main loop already produced (with the
wrong inputs) and leaves the last `R % 128` rows of the output unwritten: garbage in HBM, and NaN in the
simulator, only on sizes that are not a multiple of the tile.

## Example
```python
full = R // P
for t in range(full):
    nisa.dma_copy(dst=out[t * P:(t + 1) * P, 0:D], src=...)
rem = R - full * P
if rem > 0:
    r0 = R // P                      # a tile count, not a row
    nisa.dma_copy(dst=out[r0:r0 + rem, 0:D], src=...)
```

## Fix
Start the partial tile at `full * P` (or `R - rem`), the first row the loop did not cover, and read the
inputs at the same offset. NKI203 and MIG101 stay silent on a floored loop that such a tail tile
completes; the numerics (a ragged size in the port spec) confirm the tail either way.
"""),
    RuleSpec("NKI206", "shape-special-cased", "output-mismatch", E,
             "The kernel computes only when a shape equals literal values (`if R == 256 and D == 1024`) and "
             "otherwise returns an input or writes no output.",
             fix="Compute for any shape (tile loops over the symbolic sizes, masked/clamped tail), or assert the "
                 "supported shapes so other shapes fail loudly.",
             doc="""\
## What it finds
An `if` whose test compares shape values of kernel inputs (names bound from `x.shape`, or `x.shape[i]`
itself) with literal numbers — `R == 256 and D == 1024`, `x.shape == (256, 1024)`, or the negated form
`R != 256 or D != 1024` — where the path for the literal shape computes and the path for every other shape
computes nothing: it returns a kernel input unchanged, returns a tensor it never wrote, or writes no
output at all. A two-way test only: an `if`/`elif` dispatch, tests such as `K % 128 == 0`, a path that
still computes (a generic fallback) or one that raises/asserts are not reported. Helpers and sub-kernels are not judged: their caller consumes what they return, so a path that passes a tile through unchanged (a bias already broadcast) is no missing output.

## Why it matters on Trainium
A kernel tuned (or faked) for the one shape its author tested passes that test and silently returns
garbage for every other shape; nothing fails, the numbers are just wrong. NKI specialises kernels per
input shape at trace time, so a shape test costs nothing at run time — the problem is only what happens
on the other branch.

## Example
```python
R, D = gate.shape
if R == 256 and D == 1024:          # the tested shape
    ...                              # the real computation
    return out
return gate                          # any other shape: the input, unchanged
```

## Fix
Compute for any shape (loop over `R // 128` tiles with a clamped or masked tail, tile the free axis over
`D`), or, if only some shapes are supported, say so with `assert R % 128 == 0, "..."` so other shapes
fail loudly instead of returning a wrong value.
"""),
    # hardware utilization
    RuleSpec("NKI301", "small-matmul-tile", "tensor-engine-underutilized", W,
             "A matmul contracts over (K) or produces (M) fewer than 128 rows, idling most of the 128x128 array.",
             fix="Grow K and M tiles to 128 (pack several small problems along the partition axis).",
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
    RuleSpec("NKI303", "row-tile-below-128-partitions", "partition-underutilized", W,
             "A loop walks the rows of the data in blocks of fewer than 128, so every instruction and DMA on "
             "those tiles uses only that many of the 128 partitions (lanes).",
             fix="Tile 128 rows per iteration (nl.tile_size.pmax) and handle the ragged tail; a row count "
                 "copied from a CUDA block shape does not carry over.",
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
    RuleSpec("NKI302", "fp32-matmul-operands", "fp32-matmul", W,
             "Matmul operands are float32, which runs the Tensor Engine at a quarter of the bf16 rate.",
             fix="Cast operands to bfloat16 on load; PSUM still accumulates in fp32.",
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
    # numerical accuracy
    RuleSpec("NKI401", "low-precision-sbuf-accumulator", "low-precision-accumulation", W,
             "A bf16/fp16/fp8 SBUF tile accumulates a sum across loop iterations.",
             fix="Accumulate in a float32 tile (or in PSUM) and cast once after the loop.",
             doc="""\
## What it finds
A bfloat16/float16/fp8 SBUF tile that is defined before a loop and accumulates a sum in it (`acc += x`, `nisa.tensor_tensor(dst=acc, data1=acc, ..., op=nl.add)`).
Also a bfloat16/float16 PSUM tile defined before a loop that is the accumulating matmul destination in it
(`nisa.nc_matmul(dst=acc, ...)` or `acc += nl.matmul(...)`): the Tensor Engine adds in fp32 but rounds the
sum to the tile's dtype on every write, so each K tile's partial sum is rounded.

## Why it matters on Trainium
Vector and Scalar engines compute in fp32 but round the result to the destination dtype on every write. A bf16 running sum keeps 8 significant bits: after a few hundred additions, small terms stop changing it at all. CUDA kernels typically accumulate in fp32 registers.

## Example
```python
acc = nl.zeros((nl.par_dim(128), 512), dtype=nl.bfloat16, buffer=nl.sbuf)
for k in nl.sequential_range(16):
    acc += nl.load(a[k * 128:(k + 1) * 128, 0:512])
```

## Fix
When the running sum adds matmul results (a K loop), accumulate in PSUM: allocate the accumulator with
`buffer=nl.psum, dtype=nl.float32`; the Tensor Engine adds into fp32 PSUM as it multiplies, which also
removes a Vector Engine add per K tile. Copy it to bf16 once after the loop. For other sums, accumulate
in a float32 SBUF tile and convert to bf16 once after the loop.
"""),
    RuleSpec("NKI402", "exp-without-max-subtraction", "overflow-risk", W,
             "exp() of data with no preceding max reduction: large inputs overflow to inf.",
             fix="Subtract the row max first: exp(x - max(x)) (e.g. activation(exp, x, bias=-max)).",
             doc="""\
## What it finds
`nl.exp` or `nisa.activation(op=nl.exp)` with no max reduction (`nl.max`, `tensor_reduce(op=nl.max)`, `max8`) earlier in the kernel, no `bias=` and no subtraction in the argument. When the activation multiplies by a tensor `scale=`, the exponent's sign depends on data the code does not show (state-space models compute exp(delta * A) with A < 0): that case is a low-confidence info saying what to check. An exp whose operand was written one instruction earlier by a subtraction (`tensor_tensor(..., op=nl.subtract)`, `tensor_scalar(op0=nl.subtract, operand0=lse)`) or the add of a negated max is not reported.
When the argument is a running sum over a loop that the exp sits in or follows (`cum += x` or
`tensor_tensor(dst=cum, data1=cum, ...)`, a cumulative decay), the message names the loop: the exponent
grows with the trip count, and the fix keeps it bounded (a running max, or per-step factors).
When the operand is a cumulative sum that the kernel receives or computes (a tensor named like one, `g_cumsum`,
`prefix_sum`, or an `nl.cumsum` result), reached through copies, loads, transposes and multiplications by a
constant (`tensor_scalar(op0=nl.multiply, operand0=-1.0)`, `scale=-1.0`, a leading `-`), the finding names it
(`bias=None` shifts nothing): exp of the negated cumulative sum is a warning (for log-decay terms, <= 0, the
gated-attention form, it grows with the position: exp(-g_cumsum) overflows float32 after ~30 steps of -3), exp of
the cumulative sum itself is an info (bounded by 1 exactly when the terms are <= 0, which the code does not show).
Differences of it (`g_last - g_cumsum`, clamped `cum[i] - cum[j]`) are bounded and not reported.

In `review`, the simulator's value ranges back the claim: the message gains, per size that ran, the
largest argument reached and its margin to fp32 overflow (88.72) and to the output dtype's limit; an
argument that passed it confirms the finding and links it to the NUM104 it caused; for a running sum the
largest size's maximum is extrapolated linearly with the trip count to 2x the size, saying whether exp
would overflow there (docs/simulator.md "Value ranges").

## Why it matters on Trainium
exp overflows float32 above about 88.7. Softmax and attention kernels without the max subtraction produce inf and then NaN on realistic logits, while the CUDA reference (which subtracts the max) does not.

## Example
```python
e = nl.exp(x)   # no row max subtracted
```

## Fix
Subtract the row max first: `m = nl.max(x, axis=1)`, then `nl.exp(nl.subtract(x, m))`, or fold it into `nisa.activation(op=nl.exp, data=x, bias=-m)`.
"""),
    RuleSpec("NKI403", "variance-cancellation", "catastrophic-cancellation", W,
             "Variance computed as E[x^2] - E[x]^2, which cancels catastrophically when |mean| >> std (bf16 and fp32).",
             fix="Use nisa.bn_stats/bn_aggr, or subtract the mean first and average (x - mean)^2 in fp32.",
             doc="""\
## What it finds
A subtraction of the form E[x^2] - E[x]^2: a reduction of squared values (`tensor_reduce`/`nl.sum`/`nl.mean` of a square, or the `reduce_res=` of `activation(_reduce)(op=nl.square, reduce_op=nl.add)`) minus the square of a reduction, as an expression, `nl.subtract` or `tensor_tensor(op=nl.subtract)`. The reductions may write tensor views (`v.get_view()` as the destination, nki-library's TensorView) and may be completed by a matmul against a constant (`nc_matmul(dst=m, stationary=ones_over_h, moving=sums)`, the Tensor Engine's cross-partition average): the result keeps the sum's meaning, and a view reused for the squared mean takes the new one. Confidence is high for bf16/fp16/fp8 operands and medium for float32 or unknown dtypes.

## Why it matters on Trainium
When the mean is large compared with the spread, the two terms are nearly equal and the subtraction cancels almost all significant bits. The relative error of the difference is about eps * (1 + mean^2/var): in bf16 every bit is gone once |mean|/std reaches ~16, in float32 once it reaches ~4096 (layer-norm inputs with a large DC offset get there). The variance can then come out zero or negative, and rsqrt gives inf/NaN. CUDA layer norms use Welford or a centred second pass for this reason, so a port that switches to the one-pass form loses accuracy the original had.

## Example
```python
mean = nl.mean(x, axis=1)
ex2 = nl.mean(nl.square(x), axis=1)
var = ex2 - mean * mean
```

## Fix
Use `nisa.bn_stats`/`bn_aggr`, or subtract the mean first and average `(x - mean)^2` in float32.
"""),
    RuleSpec("NKI404", "activation-valid-range", "activation-approximation", W,
             "A ScalarE activation with a documented valid input range (sin, arctan, log, sqrt, rsqrt, "
             "reciprocal) gets input that is not range-reduced or guarded.",
             fix="Range-reduce or clamp the input first, or use the nl.* form that range-reduces (nl.sin).",
             doc="""\
## What it finds
`nisa.activation` with a function whose ScalarE approximation has a documented valid input range: sin [-pi, pi], arctan [-pi/2, pi/2] (warning), and log, sqrt, rsqrt, reciprocal (info). A `sin` whose operand went through a modulo before the call (`(x + pi) % 2pi - pi` via an ISA `mod` op or a helper named like one) is range-reduced and not reported.

In `review`, the simulator counts the arguments each activation line actually received outside that
range: any at all confirm the finding with the count and the range reached (error for sin and arctan,
warning for the others); arguments all inside it are reported as measured, and the static claim stands.

## Why it matters on Trainium
ScalarE evaluates these functions with piece-wise polynomials. Outside the valid range the output is simply wrong: `activation(op=nl.sin)` on 9.0 returns about 27.65. The CUDA `sinf` range-reduces, so the port diverges only for large inputs.

## Example
```python
s = nisa.activation(op=nl.sin, data=x)   # no range reduction
```

## Fix
Range-reduce or clamp the input first, or use `nl.sin`, which adds range reduction.
"""),
    RuleSpec("NKI405", "fp8-variant-unsupported", "fp8-range", E,
             "float8_e4m3fn (OCP, max 448) is used on a target whose TensorE supports only float8_e4m3 (max 240).",
             fix="Use nl.float8_e4m3 with a scale that keeps values within 240, or target trn3.",
             doc="""\
## What it finds
`float8_e4m3fn` (OCP fp8, max 448) used for a tile or a load on a target whose Tensor Engine supports only Neuron's `float8_e4m3` (max 240): trn1 and trn2.

## Why it matters on Trainium
The two fp8 formats differ in range and special values. trn1/trn2 reject e4m3fn matmul operands, and values quantised for a 448 range overflow a 240 range.

## Example
```python
st = nl.ndarray((128, 128), dtype=nl.float8_e4m3fn, buffer=nl.sbuf)   # trn2
```

## Fix
Use `nl.float8_e4m3` with a scale that keeps values within 240, or target trn3.
"""),
    # dialect / API version
    RuleSpec("NKI501", "removed-api-in-new-nki", "deprecated-api", E,
             "New-dialect file uses an API removed (error) or deprecated (warning) at or before the target NKI version.",
             fix="Use the replacement named in the message (see the NKI migration guide).",
             doc="""\
## What it finds
In a new-dialect file (`import nki`): APIs and keyword arguments that the versioned NKI API table (docs/api-table.md) lists as removed or deprecated at or before the target NKI version (`nki-version`, `--nki-version`, the project's pins, else the newest). These are `mask=` (removed 0.2), `nl.arange`/`nl.mgrid`, `nki.simulate_kernel`/`baremetal`/`benchmark`/`profile` (removed 0.2), `dst_rmw_op=` and `nki.jit(platform_target=)` (removed 0.3), `tensor_copy_dynamic_src/dst` (deprecated 0.3, removed 0.4), `nl.tile_size.psum_fmax` and `total_available_sbuf_size` (deprecated 0.4, not removed), and `nl.dynamic_range` (deprecated 0.6).

Removed at or before the target is an `error`; deprecated at or before it is a `warning` (it still compiles); deprecated or removed only after the target is silent. So `nl.tile_size.psum_fmax` is fine for a project that targets 0.3, which is what nki-library uses it for. A fix names the replacement only when the target version has it.

## Why it matters on Trainium
The compiler rejects removed APIs outright. Kernels half-ported from legacy samples fail to compile, or (for masks) lose their tail handling when the mask is just deleted. Deprecated APIs still work but will break on the next upgrade.

## Example
```python
x = nl.load(a[0:128, 0:512], mask=(i_p < M))   # mask= removed in 0.2
```

## Fix
Use the replacement in the message: min()-clamped slices instead of masks, slices or `.ap()` instead of `nl.arange`, `nl.tile_size.psum_bank_fmax` (0.4+) instead of `psum_fmax`.
"""),
    RuleSpec("NKI502", "deprecated-loop-iterator", "deprecated-api", I,
             "New NKI: nl.affine_range / sequential_range / static_range are deprecated aliases of range.",
             fix="Write `for i in range(n)` (or nl.fori_loop for a runtime loop).",
             doc="""\
## What it finds
In new NKI, loops over `nl.affine_range`, `nl.sequential_range` or `nl.static_range`.

## Why it matters on Trainium
New NKI unrolls every Python loop at specialization; these iterators are deprecated aliases of `range`. Their legacy meanings (parallel vs carried) no longer apply, which misleads readers porting legacy reasoning.

## Example
```python
for i in nl.affine_range(4):   # same as range(4) in new NKI
```

## Fix
Write `range(...)`, or `nl.fori_loop` for a loop that must stay a runtime loop.
"""),
    RuleSpec("NKI503", "new-api-in-legacy-nki", "deprecated-api", E,
             "Legacy (neuronxcc.nki) file uses an API that only exists in new NKI (fori_loop, dma_compute, ...).",
             fix="Port the file to `import nki` or use the legacy equivalent named in the message.",
             doc="""\
## What it finds
In a legacy (`neuronxcc.nki`) file: APIs that exist only in new NKI. These are `nl.fori_loop`/`while_loop`, `nisa.dma_compute`, `nisa.register_*`, `nki.simulate`, `nl.tile_size.psum_bank_fmax`, MX/topk/exponential ISA calls, and `accumulate=` on `nc_matmul`.

## Why it matters on Trainium
The legacy toolchain has none of these names, so the kernel fails at import or trace time. This usually means a file mixes code copied from the new docs into a legacy kernel.

## Example
```python
nisa.nc_matmul(ps, st, mv, accumulate=True)   # legacy: ps += nisa.nc_matmul(st, mv)
```

## Fix
Use the legacy equivalent named in the message, or port the whole file to `import nki`.
"""),
    RuleSpec("NKI504", "mixed-nki-namespaces", "deprecated-api", E,
             "The file imports both neuronxcc.nki and nki; NKI 0.4+ rejects neuronxcc.nki inside kernels.",
             fix="Import only `nki` (nki.language, nki.isa) and port the legacy calls.",
             doc="""\
## What it finds
A file that imports both the legacy `neuronxcc.nki` namespace and the new `nki` namespace. At a target NKI version of 0.4 or later, with the legacy namespace used inside a kernel, it is an `error` (a compile error since 0.4); otherwise a `warning`. Up to 0.3 a legacy import used only in type annotations (`neuronxcc.nki.typing`) is legal and not reported.

## Why it matters on Trainium
Since NKI 0.4, using `neuronxcc.nki` inside a kernel is a compile error, and all kernels in one model must use the same NKI version. Mixed files are half-migrated and break on current toolchains.

## Example
```python
import nki.isa as nisa
import neuronxcc.nki.language as nl   # legacy namespace
```

## Fix
Import only `nki`, `nki.language` and `nki.isa`, and port the legacy calls (see NKI501).
"""),
    RuleSpec("NKI505", "block-dimension-in-new-nki", "deprecated-api", E,
             "New NKI: a tile has dimensions before its partition dim (block dims), removed in NKI 0.2.",
             fix="Make the partition dim leftmost and keep a Python list of tiles instead of block dims.",
             doc="""\
## What it finds
In new NKI: an SBUF/PSUM allocation with dimensions before its `nl.par_dim` partition dimension (legacy block dimensions).

## Why it matters on Trainium
NKI 0.2 removed block dimensions: the partition dimension must be leftmost. The allocation no longer compiles, and indexing `buf[i]` means something different.

## Example
```python
buf = nl.ndarray((2, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
```

## Fix
Allocate a Python list of `(128, 512)` tiles (one per block), or fold the block into the free dimension.
"""),
]
