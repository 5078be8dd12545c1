"""Numerical attributions: the scenario matrix turned into findings with a stated cause."""

from ...findings import Severity
from ..registry import RuleSpec

RULES = [
    RuleSpec(
        id="NUM101", name="precision-loss-in-storage", category="low-precision-accumulation",
        severity=Severity.ERROR, source="numerics",
        summary="The kernel fails the tolerance with real storage dtypes but passes with fp32 storage: "
                "rounding of an intermediate (accumulator, statistic, tile) causes the error.",
        fix="Keep the named intermediate in fp32 (PSUM or an fp32 SBUF tile) and round once at the end.",
        doc="""\
## What it finds
A port whose outputs fail the spec's tolerance when the simulator stores tiles in their declared
dtypes (bf16, fp16, fp8) but pass when every tile is kept in fp32 (`trainium` fails,
`trainium-fp32` passes). The algorithm is right; the rounding of some intermediate is not. The
finding is placed on the static finding that names the intermediate when there is one (a bf16
running sum, an `E[x^2]-E[x]^2` variance, a low-precision statistic) and takes its category.

## Why it matters on Trainium
TensorE accumulates matmuls in fp32 PSUM and the Vector/Scalar engines compute in fp32, but every
write to an SBUF tile rounds to the tile's dtype. A value that is stored and re-read many times (a
running sum, a statistic) collects one rounding per write; bf16 keeps 8 significant bits, so after a
few hundred additions small terms stop changing the sum at all.

## Example
```python
acc = nl.zeros((128, 1), dtype=nl.bfloat16)      # running sum stored in bf16
for k in nl.sequential_range(K // 512):
    acc[...] = nl.add(acc, nl.sum(x_tile, axis=1))
```
`trainium`: max abs 3.1 (62% of elements out); `trainium-fp32`: max abs 2e-5.

## Fix
Keep the intermediate in fp32 (PSUM, or an fp32 SBUF tile) and round once, when writing the output.
""",
    ),
    RuleSpec(
        id="NUM102", name="algorithmic-output-mismatch", category="output-mismatch",
        severity=Severity.ERROR, source="numerics",
        summary="The kernel fails the tolerance even with fp32 storage, on aligned sizes: the algorithm "
                "(indexing, missing operation, wrong operand) differs from the reference.",
        fix="Return intermediates as extra outputs and compare each with the reference to find the first stage "
            "that differs.",
        doc="""\
## What it finds
Outputs that differ from the NumPy reference beyond tolerance even when the simulator keeps all
storage in fp32, on tile-aligned sizes. Rounding cannot explain the difference: the kernel computes
something else (a wrong offset, a transposed operand, a dropped bias or activation). When a static
or migration finding names a likely cause (missing-epilogue, indexing-error, unused-input, ...) the
finding takes its category and line.

## Why it matters on Trainium
A port is only as good as its worst element. Precision effects on Trainium are bounded and
explainable (fp32 PSUM, fp32 engine math); an fp32-storage failure is a real bug that will also
appear on hardware, whatever the tolerance.

## Example
```python
nisa.nc_matmul(dst=acc, stationary=lhsT[k0:k0 + 128, m0:m0 + 128], moving=rhs[k0 + 128:k0 + 256, :])  # rhs offset off by one tile
```
`trainium-fp32`: 100% of elements out, worst at [0, 0].

## Fix
Read the worst element's index, recompute it by hand from the inputs, and check offsets, operand
layout (lhsT vs lhs) and the epilogue against the CUDA kernel.
""",
    ),
    RuleSpec(
        id="NUM103", name="ragged-size-failure", category="missing-boundary-mask",
        severity=Severity.ERROR, source="numerics",
        summary="The kernel passes on tile-aligned sizes and fails (or crashes) only on ragged sizes: "
                "the tail is not handled.",
        fix="Use a ceiling trip count and clamp the last tile (new NKI: min()-bounded slices; legacy: mask=).",
        doc="""\
## What it finds
A kernel that passes on the spec's tile-aligned sizes but fails — wrong values, NaN from unwritten
memory, or an exception — on a size whose dimensions are not multiples of 128. The tail tile is not
handled.

## Why it matters on Trainium
CUDA kernels guard their tails per thread (`if (row < M)`). NKI tiles are fixed-size blocks on 128
partitions: a trip count computed as `M // 128` silently drops the last partial tile, and a full-size
DMA past the end reads or writes out of bounds. Real model shapes (sequence lengths, vocabulary
sizes) are rarely multiples of 128.

## Example
```python
for m in nl.affine_range(M // 128):            # M = 200 -> one tile, rows 128..199 never written
    ...
```

## Fix
Use a ceiling trip count and clamp the last tile: in new NKI, `min()`-bounded slices
(`rows = min(128, M - m * 128)`); in legacy NKI, `mask=(i_p + m * 128 < M)`. Or assert the shape
contract (`assert M % 128 == 0`) and document it.
""",
    ),
    RuleSpec(
        id="NUM104", name="non-finite-output", category="overflow-risk",
        severity=Severity.ERROR, source="numerics",
        summary="The kernel output has NaN/Inf where the reference is finite (overflow, or memory read "
                "before it was written).",
        fix="Find the statement that first produces a non-finite value: an output element never written, or a "
            "value beyond the dtype's range.",
        doc="""\
## What it finds
NaN or Inf in a kernel output where the reference is finite. With a simulator finding of an
uninitialized read the cause is memory read before it was written (the simulator fills new tiles
with NaN); otherwise values left the dtype's range (exp without max subtraction, fp8 without
scaling).

## Why it matters on Trainium
On hardware, unwritten SBUF and HBM hold stale data, not NaN: the same bug returns plausible garbage
that depends on what ran before. Overflow behaves the same on GPU and Trainium, but bf16/fp8 storage
makes it reachable at smaller magnitudes (fp8 e4m3 saturates at 240).

## Example
```python
e = nl.exp(scores)            # scores up to 120: exp overflows fp32 and bf16
```

## Fix
Subtract the running row max before `exp`, scale before fp8 casts, and make sure every element of
every output tile is written (memset or a full-coverage loop).
""",
    ),
    RuleSpec(
        id="NUM105", name="error-grows-linearly", category="low-precision-accumulation",
        severity=Severity.WARNING, source="numerics",
        summary="The output error grows ~linearly with the reduction length (slope >= 0.8 in log-log), "
                "where fp32 accumulation grows ~0.5: partial sums are kept in low precision.",
        fix="Keep the running sum in an fp32 tile and cast to the output dtype once after the loop.",
        doc="""\
## What it finds
Across the spec's sizes, the output error grows about linearly with the reduction length (slope >= 0.8
in a log-log fit), while fp32 accumulation of zero-mean terms grows about as its square root (slope
~0.5). The evidence lists the lengths, the errors and both slopes (real storage and fp32 storage).

## Why it matters on Trainium
Passing a tolerance at K = 512 says little about K = 65536. A partial sum stored in bf16 loses
about 2^-9 of its magnitude at every update, so the error compounds with every tile; accumulating in
PSUM (fp32) or an fp32 SBUF tile keeps it at the rounding of the final result. This is the
"matches on small tensors, diverges on large ones" pattern.

## Example
Mean abs error 0.02 at K=512, 2.7 at K=65536 (slope 1.01); fp32-storage run slope 0.49.

## Fix
Accumulate in PSUM or an fp32 tile and cast to the output dtype once after the loop.
""",
    ),
    RuleSpec(
        id="NUM106", name="accumulation-order-gap", category="accumulation-order",
        severity=Severity.INFO, source="numerics",
        summary="The port's gap to the CUDA output (captured or modelled): rounding and reduction order with the "
                "tolerance a fair comparison needs, or, as a warning, a gap that is not rounding.",
        fix="Compare GPU and Trainium outputs with at least the stated rtol/atol, not bitwise.",
        doc="""\
## What it finds
The port passes against the float64 reference; this is its gap to the CUDA output: captured on a GPU
by `nki-assist golden` ("captured on NVIDIA H200 (driver ..., CUDA ...)") or modelled ("reference at
the CUDA kernel's accumulation precision"). One function decides what the gap is
(`tolerance.gap_verdict`):

- **rounding** (info, not a defect): at most 4·u·|output|·(1 + √K) + 2 ULPs of the output dtype +
  the GPU's own run-to-run spread (u: unit roundoff of the coarser of the output and accumulation
  dtypes, K: the reduction length). The finding states the rtol/atol a fair GPU-vs-Trainium
  comparison needs, covering that spread.
- **storage-rounding** (info): with fp32 storage the gap shrinks at least 4x, but it is within what
  rounding of bf16 storage explains (the bound above at u = 2^-8) and the review found no precision
  defect: bf16 matmul operands of a faithful port. Stated as storage rounding, never as reduction
  order, with the tolerance it needs.
- **precision-loss** (warning): with fp32 storage the gap shrinks at least 4x and it exceeds bf16
  storage rounding, or the same review found a precision defect (a bf16 accumulator, NUM101,
  NUM105): the port's storage dtypes lose precision. No tolerance is recommended: one loose enough
  would hide the loss.
- **beyond-rounding** / **non-finite** (warning): larger than rounding explains (e.g. a golden 1000
  off; the message says when the GPU output itself disagrees with the reference), or NaN/Inf on one
  side only. Find which side is wrong before comparing with any tolerance.

## Why it matters on Trainium
CUDA kernels reduce in warp trees, atomics or split-K order; TensorE accumulates sequentially in
fp32 PSUM; ScalarE transcendentals are polynomial approximations. Bitwise equality with the GPU is
not expected, and a test with `rtol=1e-5` copied from the CUDA suite will fail for no reason; but a
tolerance wide enough to swallow a real precision loss hides a defect.

## Example
Max rel 3.1e-6 between `trainium` and the CUDA output modelled at float32, K = 512: rounding, compare
with rtol >= 5e-6. A bf16 K-tile accumulator 0.36 relative from the GPU while the fp32-storage run
agrees: precision loss, no tolerance.

## Fix
Compare GPU and Trainium outputs with at least the stated tolerance, or against a float64 reference;
for a precision loss, keep the partial sums in fp32.
""",
    ),
]
