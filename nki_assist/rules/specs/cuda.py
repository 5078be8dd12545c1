"""Static CUDA rules (CUDA1xx): hazards in the CUDA kernel a port starts from."""

from ...findings import Severity
from ..registry import RuleSpec

_CUDA = ("cuda",)

RULES = [
    RuleSpec(
        id="CUDA100",
        name="cuda-parse-error",
        category="unsupported-construct",
        severity=Severity.INFO,
        summary="Part of the CUDA file could not be parsed; facts from those lines may be missing.",
        fix="Check the reported lines compile; macros that hide braces or declarations cannot be parsed "
            "without preprocessing.",
        languages=_CUDA,
        doc="""\
## What it finds
A `.cu`/`.cuh` file that tree-sitter-cuda could not fully parse (a half-typed statement, a macro
that hides braces or a declaration), or a file that was not analysed at all (binary, over the 4 MB
parse limit). The finding points at the first unparsable line and lists the others in
`evidence.lines`.

## Why it matters on Trainium
Migration checks compare the NKI port with facts taken from the CUDA kernel: bounds guards,
epilogue work, accumulator dtypes, shared-memory tiles. Facts from unparsed lines are missing, so a
port review could miss, say, the bias add that lives on the broken line. The rest of the file is
still analysed.

## Example
```cuda
__global__ void broken(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * ;   // CUDA100: cannot parse '*'
}
```

## Fix
Make the reported lines compile (`nvcc -c` shows the same spot). For macros that expand to
statements or declarations, expand them by hand in the kernel under review or wrap them so that
each use is a complete statement.
""",
    ),
    RuleSpec(
        id="CUDA101",
        name="shared-read-without-syncthreads",
        category="uninitialized-read",
        severity=Severity.ERROR,
        summary="A `__shared__` element written by one thread is read by another with no `__syncthreads()` "
                "in between.",
        fix="Put `__syncthreads()` between the shared-memory writes and the reads of other threads' elements.",
        languages=_CUDA,
        doc="""\
## What it finds
A read of a `__shared__` array element that other threads wrote, with no `__syncthreads()` (or
`__syncwarp()`, cooperative-groups `sync()`, PTX `bar.sync`) between the write and the read — in
straight-line code or around the back edge of a loop (a tree reduction whose halving loop has no
barrier). Reads of the thread's own element (same thread-indexed subscript) are not reported.

## Why it matters on Trainium
The CUDA kernel is the reference the port is compared with. If it reads shared memory before the
other threads have written it, its output depends on warp scheduling, and differences between the
port and the "reference" are noise rather than port defects. NKI has no threads: a port computes
the value the programmer intended, so the CUDA side must be fixed before numerics are compared.
Warp-synchronous reductions without `__syncwarp()` are also reported: they are races on Volta and
later GPUs (independent thread scheduling).

## Example
```cuda
partial[tid] = (i < n) ? in[i] : 0.0f;
if (tid == 0)
    for (int j = 0; j < BLOCK; ++j) s += partial[j];   // CUDA101: no barrier since the write
```

## Fix
Insert `__syncthreads()` after the writes and before any thread reads another thread's element;
inside a reduction loop, one barrier per iteration after the update.
""",
    ),
    RuleSpec(
        id="CUDA102",
        name="shared-overwrite-before-syncthreads",
        category="indexing-error",
        severity=Severity.ERROR,
        summary="A loop refills a `__shared__` tile in its next iteration with no `__syncthreads()` after the "
                "last read, so fast threads overwrite data slow threads still read.",
        fix="Add `__syncthreads()` at the end of the loop body, after the last read of the tile "
            "(or double-buffer the tile).",
        languages=_CUDA,
        doc="""\
## What it finds
A write to a `__shared__` element that other threads may still be reading: the read and the
write have no barrier between them, either directly (`v = buf[t + 1]; buf[t] = v;`) or across loop
iterations — the classic tiled GEMM that loads the next `As`/`Bs` tile at the top of the loop with
no `__syncthreads()` after the inner product of the previous tile.

## Why it matters on Trainium
A write-after-read race makes the CUDA reference output depend on timing, so a port cannot be
validated against it. It also signals a misunderstanding the port may copy: on Trainium, reusing an
SBUF tile across iterations of `nl.affine_range` is the same hazard (a loop-carried dependency),
and the fix there is separate tiles per iteration or `sequential_range`.

## Example
```cuda
for (int k0 = 0; k0 < K; k0 += TILE) {
    As[ty][tx] = A[row * K + k0 + tx];   // CUDA102: overwrites what slow threads still read below
    __syncthreads();
    for (int kk = 0; kk < TILE; ++kk) acc += As[ty][kk] * Bs[kk][tx];
}
```

## Fix
Add `__syncthreads()` at the end of the loop body (after the last read of the tile), or
double-buffer the tile and alternate buffers between iterations.
""",
    ),
    RuleSpec(
        id="CUDA103",
        name="float-atomic-accumulation",
        category="accumulation-order",
        severity=Severity.INFO,
        summary="Floating-point `atomicAdd`-style accumulation: summation order varies run to run, so "
                "results are not bitwise reproducible and a port cannot match them exactly.",
        fix="Compare the port with a tolerance; on Trainium accumulate in PSUM (fp32, fixed order) or "
            "reduce per tile and combine once.",
        languages=_CUDA,
        doc="""\
## What it finds
`atomicAdd`/`atomicSub` (including `_block`/`_system` variants and `unsafeAtomicAdd`) on a float,
double, half or bfloat16 target: split-K GEMMs, block sums combined in global memory, scatter-adds
of gradients. Integer atomics are exact and are not reported.

## Why it matters on Trainium
Floating-point addition is not associative, and atomics add in whatever order threads arrive, so
the CUDA result changes between runs in its last bits (more for half/bfloat16). An NKI port
accumulates in a fixed order (PSUM accumulation or a sequential reduction), so it cannot match the
CUDA output bitwise; the review must compare with a tolerance derived from the sum length and dtype,
and should not report these differences as port defects.

## Example
```cuda
float part = 0.0f;
for (int c = c0; c < c0 + chunk; ++c) part += A[r * cols + c] * x[c];
atomicAdd(&y[r], part);   // CUDA103: order of the partial sums varies run to run
```

## Fix
Nothing to change for correctness. For the port: accumulate the K-split partial products in PSUM
(fp32) or reduce per tile and combine once; compare with a tolerance, not `array_equal`.
""",
    ),
    RuleSpec(
        id="CUDA104",
        name="fast-math-intrinsic",
        category="activation-approximation",
        severity=Severity.INFO,
        summary="An approximate math intrinsic (`__expf`, `__fdividef`, `rsqrtf`, tanh-GELU, ...) whose "
                "error the port's ScalarE approximation will not reproduce.",
        fix="Set the port's tolerance from the intrinsic's documented error, or use the precise function "
            "in the CUDA reference when comparing.",
        languages=_CUDA,
        doc="""\
## What it finds
Approximate math in the CUDA kernel: `__expf`, `__logf`, `__sinf`, `__cosf`, `__powf`,
`__fdividef`, `rsqrtf`, half-precision `hexp`/`h2exp`/`hrsqrt`, PTX `*.approx` instructions, and
`tanhf` used in a tanh-approximated GELU (the 0.044715 / sqrt(2/pi) form). Correctly rounded
intrinsics (`__fmaf_rn`, `__frcp_rn`, ...) are recorded as facts but not reported.

## Why it matters on Trainium
ScalarE evaluates transcendentals with its own approximations (and valid input ranges), and NKI
offers both `gelu` (erf) and `gelu_apprx_tanh`. A port matches a CUDA kernel that used `__expf` or
tanh-GELU only up to the intrinsic's documented error (e.g. `__expf`: 2 + floor(|1.173 x|) ulp), and
picking the wrong GELU variant changes results by up to ~1e-3 absolute. The finding tells the
review which tolerance and which NKI activation correspond to the CUDA code.

## Example
```cuda
for (int c = 0; c < cols; ++c) s += __expf(row[c] - m);   // CUDA104
return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));   // CUDA104: tanh-GELU
```

## Fix
In the port, choose the matching activation (`gelu_apprx_tanh` for tanh-GELU) and set the
comparison tolerance from the intrinsic's error; to compare against a precise reference, build the
CUDA side with `expf`/`erff` instead.
""",
    ),
    RuleSpec(
        id="CUDA105",
        name="low-precision-accumulator",
        category="low-precision-accumulation",
        severity=Severity.WARNING,
        summary="A loop accumulates into a half/bfloat16 (or fp8) variable or tensor-core accumulator.",
        fix="Accumulate in float (convert each term with __half2float / __bfloat162float) and round once "
            "at the store; on Trainium accumulate in fp32 PSUM.",
        languages=_CUDA,
        doc="""\
## What it finds
A variable declared `__half`, `half2`, `__nv_bfloat16` (or fp8) that a loop updates with `+=`,
`x = x + ...`, `__hfma(a, b, x)` or `__hadd(x, ...)`, and tensor-core code (`wmma::mma_sync`,
PTX `mma.sync`/`wgmma`) whose accumulator fragment is half precision.

## Why it matters on Trainium
Every add rounds the running sum to 8 (bfloat16) or 11 (half) significant bits, so once the sum is
large the small terms vanish: the error grows with the reduction length. The NKI port will
normally accumulate in fp32 PSUM, so it will be *more* accurate than this CUDA kernel; the
difference must not be blamed on the port, and if the port copies the 16-bit accumulator into an
SBUF tile it inherits the loss.

## Example
```cuda
__nv_bfloat16 s = __float2bfloat16(0.0f);
for (int c = 0; c < cols; ++c) s += x[blockIdx.x * cols + c];   // CUDA105
```

## Fix
Accumulate in `float` (convert each term with `__half2float`/`__bfloat162float`, or use a float
`wmma::accumulator` fragment) and round once when storing; on Trainium keep partial sums in fp32
PSUM or fp32 SBUF tiles.
""",
    ),
    RuleSpec(
        id="CUDA106",
        name="unguarded-global-store",
        category="missing-boundary-mask",
        severity=Severity.WARNING,
        summary="A thread-indexed store to global memory has no bounds check (`if (i < n)`, early return "
                "or a bounded grid-stride loop), so ragged sizes write out of bounds.",
        fix="Guard the store with the tensor extent (`if (row < M && col < N)`) or return early for "
            "threads past the end.",
        languages=_CUDA,
        doc="""\
## What it finds
A store through a pointer parameter whose index depends on `threadIdx` but which no bounds check
covers: no enclosing `if (i < n)`, no earlier `if (i >= n) return;`, no bounded grid-stride
`for (...; i < n; i += blockDim.x * gridDim.x)`, no clamped index. Stores indexed only by
`blockIdx` (one result per block) are not reported.

## Why it matters on Trainium
The kernel silently assumes that every size is a multiple of the block size. The NKI port usually
makes the same assumption by flooring trip counts (`N // 128`) with no mask, and then ragged shapes
either write out of bounds (CUDA) or drop the tail (NKI). Finding the assumption on the CUDA side
tells the reviewer which port shapes need a mask, clamp or divisibility assert.

## Example
```cuda
int i = blockIdx.x * blockDim.x + threadIdx.x;
y[i] = a * x[i] + y[i];   // CUDA106: no `if (i < n)`
```

## Fix
Guard the store with the extent (`if (i < n)`, `if (row < M && col < N)`), return early for
threads past the end, or use a grid-stride loop bounded by `n`.
""",
    ),
]
