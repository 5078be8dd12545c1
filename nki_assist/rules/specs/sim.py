"""Violations the built-in simulator finds while running a kernel (nki_assist.sim)."""

from ...findings import Severity
from ..registry import RuleSpec

_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO


def _sim(id, name, category, severity, summary, fix, doc=""):
    return RuleSpec(id=id, name=name, category=category, severity=severity, summary=summary, source="simulation",
                    fix=fix, doc=doc)


RULES = [
    _sim("SIM101", "sim-partition-limit", "partition-limit", _E,
         "A tile allocated while running puts more than 128 rows on the partition axis.",
         "Tile the partition dimension in blocks of nl.tile_size.pmax (128) rows and loop over the blocks.",
             doc="""\
## What it finds
A tile created while the kernel runs (by `nl.ndarray`, `nl.zeros`, `nl.load` or any op that returns a
new tile) has more than 128 rows on its partition axis. The simulator reports the allocation line once;
tiles computed from an already oversized tile are not reported again.

## Why it matters on Trainium
SBUF and PSUM are 128 partitions wide on every NeuronCore (`nl.tile_size.pmax`). A 256-row tile
does not exist in hardware: the legacy compiler stops with `Size of partition dimension 256 exceeds
architecture limitation of 128`, and the new compiler rejects the allocation.

## Example
```python
tile = nl.load(x[i * 256:(i + 1) * 256, :])   # [256, D]: two partitions' worth of rows
```

## Fix
Tile the row dimension in blocks of `nl.tile_size.pmax` (128) and loop over the blocks:
`nl.load(x[i * 128:(i + 1) * 128, :])` inside `for i in nl.affine_range(N // 128)`.
"""),
    _sim("SIM102", "sim-psum-tile-exceeds-bank", "psum-bank-overflow", _E,
         "A PSUM tile needs more than one 2 KiB bank (512 fp32) per partition.",
         "Split the free dimension into 512-wide fp32 blocks, one PSUM bank each.",
             doc="""\
## What it finds
A PSUM tile whose free size needs more than one 2 KiB bank per partition (more than 512 fp32
values), e.g. a `[128, 1024]` fp32 accumulator. On trn3 the limit is the whole 16 KiB PSUM partition.

## Why it matters on Trainium
A matmul accumulates into one PSUM bank; a tile spanning two banks cannot be the destination of one
accumulation group on trn1/trn2 and the compiler refuses it (or splits it and serialises the Tensor
Engine).

## Example
```python
acc = nl.zeros((128, 1024), nl.float32, buffer=nl.psum)   # 4096 B per partition, a bank is 2048 B
```

## Fix
Split the N dimension into 512-wide blocks (`nl.tile_size.psum_fmax`), one PSUM accumulator each, and
evict each block to SBUF before moving on.
"""),
    _sim("SIM103", "sim-psum-banks-exhausted", "psum-bank-overflow", _W,
         "More than the 8 PSUM banks per partition are live at the same time (the compiler must spill).",
         "Evict PSUM tiles to SBUF sooner, or allocate fewer accumulators inside the loop nest.",
             doc="""\
## What it finds
More PSUM banks are live at the same moment than the 8 a NeuronCore has (or more than 16 KiB per
partition). The simulator counts live PSUM tiles by their lifetime (loop-body scope and Python
object lifetime) and reports the allocation that crossed the limit.

## Why it matters on Trainium
PSUM has 8 banks of 2 KiB per partition, so at most 8 accumulation groups can be in flight. Beyond
that the compiler has to spill finished banks to SBUF and reload them, or serialise the matmuls: the
kernel still compiles (AWS's own attention tutorial v3 keeps 16-256 banks' worth of `qk` in PSUM), but
every spill is extra traffic, hence a warning rather than an error. A single tile wider than one bank is
SIM102 (an error). Direct allocations (`ncc.psum.mod_alloc(num_bank_tiles=...)`, `ncc.psum.alloc(fn)`)
count the physical banks they rotate through, not the tensor's logical blocks.

## Example
```python
accs = [nl.zeros((128, 512), nl.float32, buffer=nl.psum) for _ in range(9)]   # 9 banks
```

## Fix
Keep fewer accumulators alive: evict a finished PSUM tile to SBUF (`nl.copy`/`tensor_copy`) before
allocating the next, or block the loop so that at most 8 (better 2-4, for double buffering) are live.
"""),
    _sim("SIM104", "sim-sbuf-over-budget", "sbuf-budget", _E,
         "Live SBUF tiles exceed the usable SBUF bytes per partition of the target.",
         "Shrink or reuse tiles, move allocations into the loop body that uses them, or tile the free dimension.",
             doc="""\
## What it finds
The live SBUF tiles, in bytes per partition, exceed the usable SBUF of the target (trn2: 224 KiB minus
about 16.6 KiB the compiler reserves). A tile is live from its allocation to its last read or write, as
the compilers allocate (a variable that still holds a tile after its last use does not keep it live), and
the finding names the allocation that reached the peak and the live total there. A legacy block-dimension tile (`nl.ndarray((32, 7, nl.par_dim(128), 1024))`)
counts only the blocks in use at the same time (each block lives from its first to its last use); when
those overlap past the budget the finding is a warning, since the legacy compiler allocates such tiles
itself and can fuse the loops that use them or spill.

## Why it matters on Trainium
SBUF is the only working memory of the compute engines. When live tiles do not fit, the compiler
spills to HBM (slow, shows up as `spill_save_bytes`/`spill_reload_bytes`) or fails allocation with
errors such as `[GCA046] Some infinite-cost nodes remain`.

## Example
```python
a = nl.load(x[i * 128:(i + 1) * 128, :])   # [128, 32768] fp32 = 128 KiB per partition
b = nl.load(y[i * 128:(i + 1) * 128, :])   # another 128 KiB: over the ~207 KiB budget
```

## Fix
Tile the free dimension (process 2048-8192 columns at a time), reuse tiles, and allocate tiles inside
the loop body that uses them so their lifetime ends with the iteration.
"""),
    _sim("SIM105", "sim-engine-tile-limit", "matmul-tile-limit", _E,
         "A matmul, transpose or bn_stats exceeds its engine's tile limits (K<=128, M<=128, N<=512, ...).",
         "Tile the operand the message names to the engine's limit and loop over the tiles (accumulating "
         "partial results where the operation reduces).",
             doc="""\
## What it finds
A Tensor Engine instruction beyond its tile limits: matmul contraction K > 128, stationary free size
M > 128, moving free size N > 512 (trn1/trn2; 4096 fp32 / 8192 bf16 on trn3), a Tensor Engine
transpose larger than [128, 128], a Vector Engine transpose beyond 32x32, or `bn_stats` over more
than 512 elements per partition.

## Why it matters on Trainium
The PE array is 128x128 and one matmul writes one PSUM bank (512 fp32). Larger operands are not
encodable as one instruction; the compiler rejects them.

## Example
```python
acc += nl.matmul(a, b, transpose_x=True)   # b is [128, 1024]: N = 1024 > 512
```

## Fix
Tile operands to stationary [128, 128] and moving [128, 512], and loop; for `bn_stats` split the row
into 512-element chunks and merge them with `bn_aggr`.
"""),
    _sim("SIM106", "sim-buffer-placement", "buffer-placement", _E,
         "An operand lives in the wrong memory (matmul from PSUM/HBM, load from SBUF, both inputs in PSUM, ...).",
         "Move the operand: matmul reads SBUF and writes PSUM, DMA moves HBM<->SBUF, evict PSUM with tensor_copy.",
             doc="""\
## What it finds
An operand in the wrong memory: a matmul operand in PSUM or HBM, a matmul or TensorE-transpose
destination outside PSUM, `nl.load` from SBUF, `nl.store` into SBUF, compute on an HBM tensor, both
`tensor_tensor` inputs in PSUM, GpSimd touching PSUM, a DMA from PSUM (new dialect) or a kernel
output that is not `nl.shared_hbm` (new dialect).

In the legacy dialect a matmul operand in PSUM (e.g. an `nisa.nc_transpose` result fed straight to
`nc_matmul`, as AWS's flash attention backward does) is a warning: the legacy compiler inserts the
PSUM->SBUF copy, so it costs a copy rather than failing.

## Why it matters on Trainium
Each engine is wired to specific memories: TensorE reads SBUF and writes PSUM, DMA moves HBM and
SBUF, GpSimd cannot reach PSUM. The compiler rejects misplaced operands (`err_unsupported_memory`) or
inserts extra copies.

## Example
```python
e = nl.exp(junk)
again = nl.load(e)      # e is an SBUF tile, nl.load reads HBM
```

## Fix
Put the operand where the engine expects it: DMA HBM->SBUF with `nl.load`/`dma_copy`, evict PSUM to
SBUF with `nl.copy`/`nisa.tensor_copy`, and create outputs with `buffer=nl.shared_hbm`.
"""),
    _sim("SIM107", "sim-invalid-dtype", "dtype-mismatch", _E,
         "A dtype the hardware rejects (matmul dst not fp32 on trn1/trn2, fp32 mixed with bf16 operands, ...).",
         "Use an fp32 PSUM destination for matmuls on trn1/trn2 and matching operand dtypes.",
             doc="""\
## What it finds
A dtype the hardware rejects: a matmul destination that is not fp32 on trn1/trn2 (bf16 is allowed on
trn3), fp32/tf32 matmul operands mixed with bf16/fp8, `float8_e4m3fn` on the Tensor Engine before
trn3, a TensorE transpose whose destination dtype differs from the input, activation bias/scale of
an unsupported dtype, or a float `memset` value into an integer tile (new dialect).

## Why it matters on Trainium
PSUM accumulation is fp32 on NeuronCore-v2/v3 (`nc_matmul dst dtype must be float32 on gen2`);
mixed-precision operand pairs and OCP fp8 are not encodable there, so the kernel does not compile.

## Example
```python
acc = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.psum)
nisa.nc_matmul(acc, a, b)                  # trn2: dst must be float32
```

## Fix
Accumulate matmuls into an fp32 PSUM tile and cast when evicting (`tensor_copy` into a bf16 SBUF
tile); give both matmul operands the same precision class.
"""),
    _sim("SIM108", "sim-out-of-bounds", "indexing-error", _E,
         "A load, store or tile access reaches outside the tensor and no mask excludes it.",
         "Clamp the tail tile (min(size, remaining)) or mask it (legacy mask=).",
             doc="""\
## What it finds
A load, store, copy or tile access touches elements outside the tensor, and no `mask=` excludes
them: typically the tail block of a loop whose trip count was rounded up without clamping.

## Why it matters on Trainium
There is no bounds check at run time on the device: an out-of-bounds DMA reads or overwrites
neighbouring HBM (another tensor) or fails at compile time with `err_tensor_access_out_of_bound`.

## Example
```python
for i in nl.affine_range((M + 127) // 128):
    t = nl.load(x[i * 128:(i + 1) * 128, :])   # M = 300: the last block reads rows 300..383
```

## Fix
Clamp the tail (`rows = min(128, M - i * 128)`, slice `[0:rows]`) in the new dialect, or mask it in
the legacy dialect: `mask=(i * 128 + nl.arange(128)[:, None] < M)`.
"""),
    _sim("SIM109", "sim-affine-write-conflict", "loop-carried-dependency", _E,
         "Different iterations of an nl.affine_range loop write the same elements.",
         "Use nl.sequential_range for the loop, or give each iteration its own output region.",
             doc="""\
## What it finds
Two iterations of the same legacy `nl.affine_range` loop write the same elements of a tensor
that lives outside the loop (PSUM `+=` accumulation of matmuls is allowed and not reported).
When the tensor is a kernel output written by a store whose offset advances by a step other than the
extent it writes, the finding adds the offsets from the store log (`actual_step`, `expected_step`,
`actual_offsets`, `expected_offsets`, `offset_expression`) and the fix they imply (`n * 512`).

## Why it matters on Trainium
`affine_range` promises the compiler that iterations are independent, so it reorders and overlaps
them; which write survives is undefined. The compiler reports `err_unexpected_output_dependencies`
when it can see it.

## Example
```python
for i in nl.affine_range(N // 128):
    nl.store(out[0:128, :], value=nl.exp(t))   # every iteration writes the same block
```

## Fix
Index the destination by the loop variable, or use `nl.sequential_range` when the overwrite is
intended.
"""),
    _sim("SIM110", "sim-affine-carried-read", "loop-carried-dependency", _E,
         "An nl.affine_range iteration reads a value written by an earlier iteration.",
         "Declare the loop nl.sequential_range: its iterations then run in order, so each reads the value the "
         "previous one wrote.",
             doc="""\
## What it finds
An iteration of a legacy `nl.affine_range` loop reads a value that an earlier iteration of the same
loop wrote: a loop-carried dependency (a running sum, a carry, a previous row) in a loop declared
independent. Accumulating with `t += x` (`-=`, `*=`) is an associative reduction, whose result does not
depend on the iteration order, and is not reported here (the static rule NKI201 warns about `+=` outside
PSUM).

## Why it matters on Trainium
The compiler may run `affine_range` iterations in any order or in parallel; a carried value is then
read before it is written and the result is silently wrong ("unsafe, could lead to numerical
errors"). `+=` on SBUF in such a loop also fails with `[TEN404]`.

## Example
```python
for j in nl.affine_range(D // 512):
    acc[...] = nl.add(acc, nl.sum(t, axis=[1], keepdims=True))
```

## Fix
Declare the loop `nl.sequential_range`, or restructure the reduction as matmul accumulation into
PSUM (`psum += nl.matmul(...)`), which affine loops allow.
"""),
    _sim("SIM111", "sim-uninitialized-read", "uninitialized-read", _E,
         "An instruction reads tile or tensor elements that nothing has written.",
         "Initialise the tile (nl.zeros / memset) or only read the region that was written.",
             doc="""\
## What it finds
Never-written values that reach a result: an `nl.ndarray` read before it is filled (an uninitialized
accumulator), a partly written tile stored without a mask, a reduction or matmul that mixes written and
never-written elements into one result, or `nc_matmul(accumulate=True)` onto fresh PSUM. The simulator
tracks a written-mask per tensor, so NaN-looking data is not needed to detect it.

What is *not* reported: the legacy ragged-tail pattern. A tile loaded with `mask=(t * 128 + i_p < R)`
leaves its last partitions unwritten; unmasked elementwise ops, per-partition (free-axis) reductions,
`[P, 1]` statistics broadcast along the free axis, transposes and matmuls whose every product reads
only such rows carry that "unwritten" state to their results element by element, and a store under the
same mask never reads it. That is correct on hardware, so the finding appears only where the garbage
could reach HBM or mix with valid data.

## Why it matters on Trainium
`nl.ndarray` does not initialise memory. On hardware the read returns stale data from a previous
kernel or iteration; results differ run to run and from the simulator.

## Example
```python
junk = nl.ndarray((128, N), dtype=nl.float32)
e = nl.exp(junk)        # reads 128 x N uninitialized values
```

## Fix
Initialise with `nl.zeros`/`nisa.memset`, or read only the region the kernel wrote (e.g. `[0:rows]`
of a clamped tail tile).
"""),
    _sim("SIM112", "sim-output-not-written", "uninitialized-read", _E,
         "A kernel output is never written, or only partly (e.g. a ragged tail the loops skip).",
         "Cover the whole output: round the trip count up and mask or clamp the last tile.",
             doc="""\
## What it finds
A kernel output is never written, or some of its elements are never written, by the end of the
run. The finding gives the number of unwritten elements and their bounding region, and it is located
at the statement to change, found from the simulator's store log (which store wrote which region, in
which loop iteration):

| what the log shows | location | category | evidence |
|---|---|---|---|
| a store whose block has the extent of the hole but lands elsewhere, over elements another store wrote | the assignment of the offset variable when the slice starts at a plain name (`r0 = R // P`), else the store | `indexing-error` | `actual_offset`, `expected_offset`, `store_line`, `overwrites_line`, `offset_expression`, `offset_defined_line` |
| a store whose offset advances by a step other than the extent it writes (`n * 128` for 512-wide blocks) | the store | `indexing-error` | `actual_step`, `expected_step`, `actual_offsets`, `expected_offsets`, `loop_var` |
| tiles that abut and stop right before the hole | the loop header whose trip count is short | `missing-boundary-mask` | `trip_count`, `needed_trip_count`, `tile_extent`, `store_line` |
| none of these (no store at all, an irregular hole) | the line that created the output | `uninitialized-read` | the stores as related locations |

The line that created the output stays a related location whenever the finding moves.

When every unwritten element was addressed by a store whose own mask excluded it (e.g. AWS's
`add_kernel_nx8x128x512` stores only `offset < n_elements`), the kernel chose not to write it: the
finding is then a warning with `excluded_by_store_mask: true`, fine if callers read only the stored part.
A tail the loops never reach stays an error.

## Why it matters on Trainium
The unwritten part of the output returns whatever the HBM held before; for ragged shapes this is
usually a tail the CUDA kernel covered with a bounds check and the port's floored trip count skips,
or a tail tile whose offset was computed wrongly.

## Example
```python
out = nl.ndarray((M, N), dtype=x.dtype, buffer=nl.shared_hbm)
for i in range(M // 128):            # M = 300: rows 256..299 are never stored -> reported on this line
    ...
if rem > 0:
    r0 = M // 128                    # a tile count, not a row: reported here (expected 256, actual 2)
    nisa.dma_copy(dst=out[r0:r0 + rem, :], src=t[0:rem, :])
```

## Fix
Round the trip count up (`(M + 127) // 128`) and clamp or mask the last block; start a tail block at
`full * 128`; step a block offset by the extent the block writes.
"""),
    _sim("SIM118", "sim-output-overwritten", "indexing-error", _W,
         "A store overwrites output elements that another store (or another iteration of the same store) "
         "already wrote, with different values, and nothing read them in between.",
         "Give every store its own region: step each offset by the extent the store writes, and check the "
         "offsets of the tail/epilogue stores.",
             doc="""\
## What it finds
A store writes kernel-output elements that an earlier store (another statement, or another iteration
of the same statement) already wrote, with different values, and nothing read them in between: the
first values are lost. Reported at the overwriting store, with the store it overwrote (line and loop
iteration), the number of elements and the first of them. When both writes come from one store in a
loop, the finding adds the offset arithmetic: how far the offset advances per iteration (`actual_step`)
against the extent each store writes (`expected_step`).

Not reported: a store that rewrites the same values (a clamped last tile that overlaps the previous
one), a store repeated with the same region by a loop around it, overwriting a constant fill (an
initialisation such as zeros), and a read-modify-write (the output region is loaded in between). When
the output also has never-written elements and the overwriting store explains them, the overlap is part
of SIM112 instead; in a legacy `nl.affine_range` loop SIM109 reports it and gains the offsets.

## Why it matters on Trainium
Two writes to one HBM location cost a DMA each and only the last one counts; when they come from
stores that should cover different regions, one index expression is wrong and part of the output
holds the wrong values (or, for independent iterations, depends on the order the compiler picks).

## Example
```python
for n in range((N - 512) // 448 + 1):
    ...
    nisa.dma_copy(dst=out[0:P, n * 448:n * 448 + 512], src=t)   # each window rewrites 64 columns
```

## Fix
Give every store its own region: step each offset by the extent it writes (`n * 512`), or store only
the columns a window owns (`n * 448 : n * 448 + 448`), and check the offsets of tail/epilogue stores.
"""),
    _sim("SIM119", "sim-partition-axis-reduction", "unsupported-construct", _E,
         "A Vector Engine reduction runs over axis 0, the partition axis: the engines reduce along free "
         "axes only, so the kernel does not compile as written.",
         "Reduce across partitions on the Tensor Engine: matmul a [P, 1] ones tile (the stationary operand) with "
         "the tile into PSUM, or transpose the tile first and reduce along the free axis.",
             doc="""\
## What it finds
`nl.sum`/`nl.max`/`nl.mean`/`nisa.tensor_reduce` (and the other reductions) called with `axis=0`
(or a tuple containing 0) on a tile with more than one dimension, seen while the kernel runs.

## Why it matters on Trainium
The Vector Engine has one lane per partition; a reduction combines elements along the free axes of
each lane and cannot combine lanes (nki.isa `tensor_reduce`: "free axes only", never the partition
axis). The NKI compiler rejects the call, so this is an error, not a performance note. The simulator
still computes the intended sum so the rest of the run can be judged.

## Example
```python
col_sums = nl.sum(t, axis=0)          # t is [128, 512]: sums across partitions
```

## Fix
Contract over the partition axis on the Tensor Engine, which is what it does natively:
`nl.matmul(ones[128, 1], t, transpose_x=True)` (or `nisa.nc_matmul(ones, t)`) accumulates the 128
rows into a [1, 512] PSUM tile in fp32. For a max/min, transpose 128x128 blocks first
(`nisa.nc_transpose`) and reduce along the free axis; `nisa.tensor_partition_reduce` (GpSimd) is
the slow fallback.
"""),
    _sim("SIM113", "sim-kernel-shape-error", "indexing-error", _E,
         "The kernel stopped on a shape, broadcast or index error while running.",
         "Make operand shapes agree (partition counts, free sizes, element counts of DMA copies).",
             doc="""\
## What it finds
The kernel stopped on a shape, broadcast or index error: operands whose partition counts or free
sizes do not match, a DMA between tensors with different element counts, a mask that does not fit
the operand.

## Why it matters on Trainium
The NKI compiler rejects mismatched shapes (`err_num_partition_mismatch`,
`err_store_dst_shape_smaller_than_other_shape`); the kernel never reaches hardware.

## Example
```python
a = nl.load(x[0:128, 0:512])
b = nl.load(x[0:128, 0:256])
nl.store(out, value=nl.add(a, b))    # [128, 512] + [128, 256]
```

## Fix
Make the shapes agree; slice both operands to the same tile size.
"""),
    _sim("SIM114", "sim-kernel-raised", "unsupported-construct", _E,
         "The kernel raised an exception while running in the simulator.",
         "Fix the failing statement; the message names the exception and line.",
             doc="""\
## What it finds
The kernel raised a Python exception while the simulator ran it (an assertion on the input shape, a
division by zero in index arithmetic, a `TypeError`, ...), or the file does not parse. The finding
sits on the deepest kernel line of the traceback.

## Why it matters on Trainium
A kernel that raises during tracing does not compile; with the real toolchain the error would
appear at compile time, often with a less direct message.

## Example
```python
blocks = M // 128
scale = 1.0 / (blocks - blocks)      # ZeroDivisionError
```

## Fix
Fix the failing statement, or validate inputs with a clear assertion message.
"""),
    _sim("SIM115", "sim-unsupported-api", "unsupported-construct", _W,
         "The kernel uses an API the built-in simulator (or the NKI compiler) does not support.",
         "Use a supported NKI API, or run the kernel with the neuron backend where the toolchain is installed.",
             doc="""\
## What it finds
The kernel calls an API the built-in simulator does not implement (for example
`nisa.nc_stream_shuffle`, `.ap()` access patterns, registers), or uses a third-party module (torch,
jax) inside the kernel body. The run stops at that call; the finding names the API.

## Why it matters on Trainium
The simulation could not finish, so later checks and the numerical comparison did not run.
Framework calls inside a kernel body are not NKI and do not compile for the device either.

## Example
```python
s = nisa.nc_stream_shuffle(t, shuffle_mask=list(range(32)))
```

## Fix
Use a supported NKI API (see docs/simulator.md), keep framework code outside the kernel, or run the
kernel with the `neuron` backend where the real toolchain is installed.
"""),
    _sim("SIM117", "sim-api-not-modelled", "toolchain-failure", _I,
         "The kernel calls a documented NKI API the built-in simulator does not model, so it was not run "
         "past that call (the API itself is valid NKI).",
         "Judge numerics and performance with the neuron backend (`--backend neuron`) where the toolchain "
         "is installed; the static and migration checks still apply.",
             doc="""\
## What it finds
A kernel that calls a documented NKI API which the built-in simulator does not model — for example
`nisa.scalar_load`, `.ap(...)` access patterns, indexing with a tensor (indirect DMA), `tensor.view(dtype)`,
registers, `nl.fori_loop` bodies that need
them, `nc_matmul_mx`, `topk`, collectives. The simulator stops at that call, so the port's numerics and
performance are not judged. The API itself is valid NKI: this is a limit of the tool, not a defect of
the kernel (an API that NKI does not have is SIM115 instead).

## Why it matters on Trainium
A review that silently skipped the numerical comparison would read as a pass. Saying which call stopped
the simulation tells the reviewer exactly what was not verified, and that the static and migration
checks still apply.

## Example
```python
base = nisa.scalar_load(n_tiles)        # NKI 0.6 runtime scalar: not modelled by the built-in simulator
```

## Fix
Nothing to fix in the kernel. Run `nki-assist review --backend neuron` (or `simulate --backend neuron`)
where the Neuron toolchain is installed to judge numerics with `nki.simulate`.
"""),
    _sim("SIM116", "sim-low-precision-accumulation", "low-precision-accumulation", _W,
         "A running sum is accumulated in a bf16/fp16/fp8 tile inside a loop.",
         "Accumulate in an fp32 tile and cast once at the end.",
             doc="""\
## What it finds
A running sum is accumulated in a bf16/fp16/fp8 tile inside a loop: the tile is both an input and the
destination of an add in each iteration.

## Why it matters on Trainium
Each add rounds the sum to bf16's 8 significant bits (one of them implicit); once the sum is large, small terms vanish and the
error grows with the trip count. CUDA code usually accumulates in fp32 registers, so the port loses
accuracy that the original had.

## Example
```python
acc = nl.zeros((128, 1), dtype=nl.bfloat16)
for j in nl.sequential_range(D // 128):
    acc[...] = nl.add(acc, nl.sum(t, axis=[1], keepdims=True))
```

## Fix
Keep the accumulator in fp32 (or PSUM via matmul) and cast once when storing.
"""),
]
