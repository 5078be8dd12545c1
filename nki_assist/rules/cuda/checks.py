"""Static CUDA rules over the facts of `parse.cuda` (metadata in rules/cuda/checks.py).

`run_cuda_rules(cuda_file, target)` runs every rule; a rule that raises becomes one low-confidence
info finding naming the crash, and the other rules still run. CUDA facts do not depend on the
Trainium target; it is accepted so every rule family has the same signature.
"""

from __future__ import annotations

from typing import Iterator

from ...api.hardware import Target
from ...findings import Finding, Severity
from ...parse.cuda_model import FLOAT_DTYPES, LOW_PRECISION_DTYPES, CudaFile, CudaKernel, canonical_dtype
from ...parse.cuda_vocab import FAST_MATH
from ..registry import RuleSpec, get
from ..runner import Check, CheckSet, crash_message
from .sync import find_races

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec(
        id="CUDA100",
        name="cuda-parse-error",
        category="unsupported-construct",
        severity=Severity.INFO,
        summary="Part of the CUDA file could not be parsed; facts from those lines may be missing.",
        fix="Check the reported lines compile; macros that hide braces or declarations cannot be parsed "
            "without preprocessing.",
        languages=("cuda",),
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
        languages=("cuda",),
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
        languages=("cuda",),
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
        languages=("cuda",),
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
        languages=("cuda",),
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
        languages=("cuda",),
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
        languages=("cuda",),
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

# The CUDA checks in registration (= definition) order; run by run_cuda_rules.
CHECKS = CheckSet("cuda")


def _col(cf: CudaFile, line: int, token: str) -> int | None:
    if 1 <= line <= len(cf.lines):
        i = cf.lines[line - 1].find(token)
        if i >= 0:
            return i + 1
    return None


def _kernels(cf: CudaFile) -> Iterator[CudaKernel]:
    yield from cf.kernels


@CHECKS.register("CUDA100")
def cuda100_parse_error(cf: CudaFile, target: Target) -> Iterator[Finding]:
    spec = get("CUDA100")
    if cf.syntax_errors:
        first = cf.syntax_errors[0]
        lines = sorted({e.line for e in cf.syntax_errors})
        more = f" (and {len(lines) - 1} more lines)" if len(lines) > 1 else ""
        yield spec.finding(
            f"Could not parse line {first.line}: {first.message}{more}; kernel facts from these lines may be "
            f"missing.", file=cf.path, line=first.line, column=first.column,
            evidence={"lines": lines[:20], "errors": len(cf.syntax_errors)}, confidence="medium")
    for note in cf.notes:
        yield spec.finding(f"CUDA file not analysed: {note}.", file=cf.path, line=1,
                           evidence={"note": note}, confidence="high")


@CHECKS.register("CUDA101", "CUDA102")
def cuda101_102_races(cf: CudaFile, target: Target) -> Iterator[Finding]:
    raw_spec, war_spec = get("CUDA101"), get("CUDA102")
    for k in _kernels(cf):
        raw_lines: set[tuple[int, str]] = set()
        war: list = []
        seen: set[tuple[str, int, str]] = set()
        for race in find_races(k):
            key = (race.kind, race.second.line, race.second.array)
            if key in seen:
                continue
            seen.add(key)
            a, b = race.first, race.second
            where = f" in the next iteration of the loop at line {race.via_loop.line}" if race.via_loop else ""
            ev = {"kernel": k.name, "array": a.array, "first_line": a.line, "first_index": a.index,
                  "second_line": b.line, "second_index": b.index,
                  "loop_line": race.via_loop.line if race.via_loop else None}
            if race.kind == "raw":
                raw_lines.add((b.line, b.array))
                yield raw_spec.finding(
                    f"`{b.array}{b.index}` reads shared memory that other threads write at line {a.line} "
                    f"(`{a.array}{a.index}`){where} with no `__syncthreads()` in between, so it can read the "
                    f"element before it is written.",
                    file=cf.path, line=b.line, column=b.column, evidence=ev,
                    related=[{"file": cf.path, "line": a.line, "message": "shared-memory write"}])
            else:
                war.append((race, ev, where))
        for race, ev, where in war:
            a, b = race.first, race.second
            if (b.line, b.array) in raw_lines:
                continue
            yield war_spec.finding(
                f"`{b.array}{b.index}` overwrites shared memory that other threads read at line {a.line} "
                f"(`{a.array}{a.index}`){where} with no `__syncthreads()` after that read, so a fast thread "
                f"can replace the element before a slow one has used it.",
                file=cf.path, line=b.line, column=b.column, evidence=ev,
                related=[{"file": cf.path, "line": a.line, "message": "shared-memory read"}])


@CHECKS.register("CUDA103")
def cuda103_float_atomics(cf: CudaFile, target: Target) -> Iterator[Finding]:
    spec = get("CUDA103")
    for k in _kernels(cf):
        for at in k.atomics:
            dtype = canonical_dtype(at.dtype)
            if at.op not in ("add", "sub") or dtype not in FLOAT_DTYPES:
                continue
            yield spec.finding(
                f"atomic {at.op} on {at.dtype} `{at.target}` in `{k.name}`: the order in which threads add "
                f"changes from run to run, so the CUDA result is not bitwise reproducible and the port must "
                f"be compared with a tolerance.",
                file=cf.path, line=at.line, column=_col(cf, at.line, "tomic"),
                evidence={"kernel": k.name, "op": at.op, "dtype": at.dtype, "target": at.target})


@CHECKS.register("CUDA104")
def cuda104_fast_math(cf: CudaFile, target: Target) -> Iterator[Finding]:
    spec = get("CUDA104")
    for k in _kernels(cf):
        seen = set()
        for name, line in k.fast_math:
            approx, note = FAST_MATH.get(name, (".approx" in name, "PTX approximate instruction"))
            if not approx or (name, line) in seen:
                continue
            seen.add((name, line))
            token = name.split(".")[0]
            yield spec.finding(
                f"`{name}` in `{k.name}` is an approximation ({note}); the port's ScalarE function uses a "
                f"different approximation, so expect element differences at this level rather than bitwise "
                f"equality.",
                file=cf.path, line=line, column=_col(cf, line, token),
                evidence={"kernel": k.name, "intrinsic": name, "error": note})


@CHECKS.register("CUDA105")
def cuda105_low_precision_accumulator(cf: CudaFile, target: Target) -> Iterator[Finding]:
    spec = get("CUDA105")
    for k in _kernels(cf):
        lines = set()
        for acc in k.accumulators:
            dtype = canonical_dtype(acc.dtype)
            if dtype in LOW_PRECISION_DTYPES:
                lines.add(acc.line)
                yield spec.finding(
                    f"`{acc.name}` ({acc.dtype}) accumulates inside a loop in `{k.name}`: every add rounds "
                    f"to {dtype}'s {'8' if dtype == 'bfloat16' else '11'}-bit significand, so long sums "
                    f"lose the small terms.",
                    file=cf.path, line=acc.line, column=_col(cf, acc.line, acc.name),
                    evidence={"kernel": k.name, "variable": acc.name, "dtype": acc.dtype})
        for tc in k.tensor_core:
            acc_dtype = tc.dtypes[2] if len(tc.dtypes) > 2 else None
            if acc_dtype in LOW_PRECISION_DTYPES and tc.line not in lines:
                lines.add(tc.line)
                yield spec.finding(
                    f"Tensor-core {tc.api} in `{k.name}` accumulates in {acc_dtype} (`{tc.op}`); the port "
                    f"should accumulate in fp32 PSUM and will differ from this kernel.",
                    file=cf.path, line=tc.line, column=_col(cf, tc.line, tc.op.split(".")[0]),
                    evidence={"kernel": k.name, "api": tc.api, "dtypes": list(tc.dtypes)})


@CHECKS.register("CUDA106")
def cuda106_unguarded_store(cf: CudaFile, target: Target) -> Iterator[Finding]:
    spec = get("CUDA106")
    for k in _kernels(cf):
        if k.qualifier != "global":
            continue  # a __device__ helper's pointer may be __shared__ scratch (block_sum(v, red)); its callers are judged
        seen = set()
        for st in k.global_stores:
            if not st.thread_indexed or st.guarded or (st.line, st.target) in seen:
                continue
            seen.add((st.line, st.target))
            yield spec.finding(
                f"Store to `{st.target}{st.index}` in `{k.name}` is indexed by the thread index but no "
                f"bounds check covers it; with sizes that are not a multiple of the block, threads past the "
                f"end write out of bounds (a port that floors trip counts drops the same tail).",
                file=cf.path, line=st.line, column=st.column,
                evidence={"kernel": k.name, "target": st.target, "index": st.index,
                          "bounds_guards": [g.line for g in k.bounds_guards]})


def run_cuda_rules(cuda_file: CudaFile, target: Target) -> list[Finding]:
    """All CUDA rules on one parsed file; one rule's crash never loses the others' findings."""

    def crashed(check: Check, exc: Exception) -> Finding:
        return get(check.rules[0]).finding(
            crash_message(check, exc), severity=Severity.INFO, file=cuda_file.path, confidence="low",
            evidence={"internal_error": f"{type(exc).__name__}: {exc}", "check": check.name})

    return CHECKS.run(cuda_file, target, on_crash=crashed)
