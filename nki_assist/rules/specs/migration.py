"""Port-pair migration checks (MIG1xx): CUDA kernel facts compared with the NKI port's facts."""

from ...findings import Severity
from ..registry import RuleSpec

_PORT = ("port",)

RULES = [
    RuleSpec(
        id="MIG101", name="cuda-bounds-guard-dropped", category="missing-boundary-mask",
        severity=Severity.WARNING, source="migration", languages=_PORT,
        summary="The CUDA kernel guards ragged tails (`if (row < M)`), the port floors its trip count with "
                "no mask, min() clamp or divisibility assert.",
        fix="Loop over ceil(n / tile) tiles and clamp the last one (new NKI: min()-bounded slices; legacy: "
            "mask=), or assert the divisibility the port relies on.",
        doc="""\
## What it finds
CUDA kernels guard ragged tails per thread (`if (row < M && col < N)`), so they accept any size. A port that loops `M // 128` times with no mask, no min() clamp and no `assert M % 128 == 0` silently drops the tail.

## Why it matters on Trainium
Trainium has no threads to guard: a tile loop must cover the tail itself. The simulator and hardware give no error; the last `M % 128` rows are simply never written (garbage in a `shared_hbm` output).

## Example
```c
if (row < M && col < N) C[row * N + col] = acc;      // CUDA, line 70
```
```python
for m in nl.affine_range(M // 128):                  # port: tail dropped
```

## Fix
Loop over ceil(n / tile) tiles and clamp the last one (new NKI: min()-bounded slices; legacy: mask=), or assert the divisibility the port relies on.
""",
    ),
    RuleSpec(
        id="MIG102", name="cuda-epilogue-dropped", category="missing-epilogue",
        severity=Severity.ERROR, source="migration", languages=_PORT,
        summary="Work the CUDA kernel applies to its output (bias, scale/alpha/beta, activation) has no "
                "counterpart in the port.",
        fix="Apply the missing operation before the output store (activation(op, data, bias=, scale=) fuses "
            "bias, scale and activation in one ScalarE instruction).",
        doc="""\
## What it finds
Bias, scale (alpha/beta) or activation work the CUDA kernel applies to the value it stores, with no counterpart in the port: the paired parameter is missing or never read, or no matching op (`nl.relu`, `op=nl.gelu`, ...) exists.

It also covers a scale applied to an intermediate rather than the stored value: the CUDA kernel multiplies
(or divides) values by a data-independent factor — a local computed from `rsqrtf`/`sqrtf` of a size
(`const float scale = rsqrtf((float)d)`), an inline `* rsqrtf((float)d)`, or a scalar named
scale/alpha/temperature — and the port never scales anything (no `scale=` argument, no multiply or
divide by a sqrt expression, a literal, or a scale-named value or parameter). The finding sits on the NKI
call that consumes the unscaled values (the exp of a softmax, else the first read of the matmul result,
else the output store) and relates the CUDA line that applies the factor.

## Why it matters on Trainium
The port runs and its shapes match, so nothing fails until the numbers are compared; a dropped bias or activation is a silent wrong answer. On Trainium the epilogue is nearly free: `nisa.activation(op, data, bias=, scale=)` fuses it into the PSUM eviction.

## Example
```c
C[row * N + col] = acc + bias[col];                  // CUDA
```
```python
nisa.tensor_copy(dst=res, src=acc)                   # port: bias never added
nisa.dma_copy(dst=out[...], src=res)
```

Attention scores the port forgets to scale by 1/sqrt(d):
```c
const float scale = rsqrtf((float)d);
sc[j] = dot * scale;                                 // CUDA
```
```python
nisa.nc_matmul(dst=scores, stationary=q_sb, moving=k_sb)
nisa.activation(dst=probs, op=nl.exp, data=scores, bias=neg_max)   # no scale=: softmax far too sharp
```

## Fix
Apply the missing operation before the output store (activation(op, data, bias=, scale=) fuses bias, scale and activation in one ScalarE instruction).
""",
    ),
    RuleSpec(
        id="MIG103", name="cuda-input-unused-in-port", category="unused-input",
        severity=Severity.WARNING, source="migration", languages=_PORT,
        summary="An input the CUDA kernel reads has no counterpart in the port, or its counterpart is never read.",
        fix="Read the input where the CUDA kernel does, or document why the port does not need it.",
        doc="""\
## What it finds
A value input of the CUDA kernel (pointer or float scalar) that has no counterpart among the port's parameters, or whose counterpart the port never reads. Parameters are paired by name, then by role (A/lhsT, B/rhs, bias, C/out), then by position; the evidence says how.

## Why it matters on Trainium
An unused input means part of the CUDA computation (residual, scale, mask) is missing from the port; the kernel still compiles and runs.

## Example
```c
__global__ void k(const float* x, const float* residual, float* y, int n)
```
```python
def k(x, residual):   # residual never read
```

## Fix
Read the input where the CUDA kernel does, or document why the port does not need it.
""",
    ),
    RuleSpec(
        id="MIG104", name="port-accumulates-in-low-precision", category="low-precision-accumulation",
        severity=Severity.WARNING, source="migration", languages=_PORT,
        summary="The CUDA kernel accumulates in fp32, the port keeps its running sum in bf16/fp16.",
        fix="Keep the running sum in fp32 and cast to the output dtype once after the loop.",
        doc="""\
## What it finds
The CUDA kernel accumulates in fp32 (a `float` accumulator, fmaf into registers, fp32 MMA accumulators) while the port keeps its running sum in a bf16/fp16 tile.

## Why it matters on Trainium
bf16 keeps 8 significant bits: every add rounds the partial sum, so the error grows ~linearly with the reduction length (NUM105 measures the slope). PSUM accumulates in fp32 for free; SBUF tiles are as precise as their dtype.

## Example
```c
float acc = 0.0f; for (...) acc += x[i];             // CUDA: fp32
```
```python
acc = nl.ndarray((P, 1), dtype=nl.bfloat16)          # port: bf16 running sum
nisa.tensor_tensor(dst=acc, data1=acc, data2=part, op=nl.add)
```

## Fix
Accumulate in PSUM or an fp32 SBUF tile and cast to the output dtype once after the loop.
""",
    ),
    RuleSpec(
        id="MIG105", name="port-dtype-differs", category="dtype-mismatch",
        severity=Severity.WARNING, source="migration", languages=_PORT,
        summary="The port's output or accumulation dtype differs from the CUDA kernel's.",
        fix="Use the CUDA kernel's output dtype, or state the change in the port spec's tolerance and docs.",
        doc="""\
## What it finds
The port's output dtype differs from the CUDA output pointer's element type, or the port accumulates in fp32 where the CUDA kernel accumulates in fp16/bf16 (info: the port is the more accurate one).

## Why it matters on Trainium
A narrower output dtype rounds every result; a wider one cannot match the GPU bitwise. Either way the comparison tolerance must account for it.

## Example
```c
float* C  // CUDA output
```
```python
out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
```

## Fix
Use the CUDA kernel's output dtype, or state the change in the port spec's tolerance and docs.
""",
    ),
    RuleSpec(
        id="MIG106", name="reduction-order-differs", category="accumulation-order",
        severity=Severity.INFO, source="migration", languages=_PORT,
        summary="The CUDA kernel reduces in a tree/atomic/split-K/tensor-core order, the port sequentially in "
                "PSUM: results differ by rounding, within the stated tolerance.",
        fix="Compare GPU and Trainium outputs with the stated relative tolerance, not bitwise.",
        doc="""\
## What it finds
The CUDA kernel reduces with warp-shuffle trees, float atomics (split-K) or tensor-core MMAs; the port accumulates sequentially (PSUM or a reduce instruction). The finding states the tolerance a fair comparison needs: relative differences up to ~2*sqrt(n)*u (u = 2^-24 for fp32 accumulation).

## Why it matters on Trainium
Floating-point addition is not associative. Expect last-bit differences between GPU and Trainium, and between GPU runs when atomics are involved; do not compare bitwise.

## Example
```c
for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(~0u, s, off);
```
```python
nisa.tensor_reduce(dst=part, op=nl.add, data=tile, axis=1)
```

## Fix
Compare GPU and Trainium outputs with the stated relative tolerance, not bitwise.
""",
    ),
    RuleSpec(
        id="MIG107", name="activation-approximation-differs", category="activation-approximation",
        severity=Severity.INFO, source="migration", languages=_PORT,
        summary="The CUDA kernel uses a fast-math intrinsic or tanh-GELU where the port uses a ScalarE "
                "function (piecewise polynomial) or a different GELU form.",
        fix="Use the same formula on both sides, or compare with a tolerance that covers both approximations.",
        doc="""\
## What it finds
A CUDA fast-math intrinsic (`__expf`, `__logf`, `rsqrtf`, `__fdividef`, ...) or the tanh-approximated GELU, matched with the port's ScalarE function. For GELU it says whether the two sides use the same formula (erf vs tanh differ by up to 4.7e-4 absolute).

## Why it matters on Trainium
ScalarE evaluates transcendentals as piecewise polynomials; CUDA intrinsics are different approximations. Neither is correctly rounded, so outputs differ at the ULP level (more for large arguments) and a GELU formula change is a real difference.

## Example
```c
y = 0.5f * x * (1.f + tanhf(0.79788456f * (x + 0.044715f * x * x * x)));
```
```python
nisa.activation(dst=y, op=nl.gelu, data=x)   # erf GELU: use nl.gelu_apprx_tanh to match
```

## Fix
Use the same formula on both sides (e.g. the tanh-approximated GELU) or widen the tolerance.
""",
    ),
    RuleSpec(
        id="MIG108", name="cuda-tile-size-carried-over", category="tensor-engine-underutilized",
        severity=Severity.WARNING, source="migration", languages=_PORT,
        summary="A CUDA shared-memory tile size (32/64) was copied into an NKI matmul dimension that could be "
                "128 (contraction, stationary) or 512 (moving).",
        fix="Size tiles for the Tensor Engine: contraction and stationary free 128, moving free up to 512.",
        doc="""\
## What it finds
A matmul contraction (K) or stationary free size (M) below 128 whose value equals a CUDA shared-memory tile dimension or TILE/BLOCK constant: the GPU tiling was carried over.

## Why it matters on Trainium
CUDA tiles are sized for shared memory and warps; the Tensor Engine is a 128x128 array. A K of 64 uses half the PE rows for the same instruction cost.

## Example
```c
__shared__ float As[64][65];                          // CUDA tile
```
```python
TILE_K = 64
nisa.nc_matmul(dst=acc, stationary=a_tile, moving=b_tile)   # K = 64 of 128
```

## Fix
Size tiles for the Tensor Engine: contraction and stationary free 128, moving free up to 512.
""",
    ),
    RuleSpec(
        id="MIG109", name="operand-layout-changed", category="indexing-error",
        severity=Severity.INFO, source="migration", languages=_PORT,
        summary="The port expects an operand in a different layout than the CUDA kernel (A [M, K] row-major vs "
                "lhsT [K, M]): the caller or the kernel must transpose it.",
        fix="Transpose on the host (pass A.T) and say so in the kernel docstring, or load A and transpose on "
            "chip with nc_transpose.",
        doc="""\
## What it finds
The CUDA kernel takes `A` row-major [M, K]; the port takes `lhsT` [K, M] (a name saying it arrives transposed) and uses it as the stationary operand. Info: the caller or the kernel must transpose.

## Why it matters on Trainium
`nc_matmul` contracts over the partition axis of both operands, so the stationary operand must be [K, M]. The transpose has to happen somewhere: on the host per call, via DMA transpose, or on chip with nc_transpose; a caller passing A as-is gets wrong results on non-square shapes.

## Example
```c
const float* A   // [M, K]
```
```python
def gemm(lhsT, rhs):   # expects A.T
```

## Fix
Transpose on the host (pass A.T) and say so in the kernel docstring, or load A and transpose on chip with nc_transpose.
""",
    ),
    RuleSpec(
        id="MIG110", name="matmul-operand-offset-mismatch", category="indexing-error",
        severity=Severity.ERROR, source="migration", languages=_PORT,
        summary="A matmul operand tile is loaded at offsets that do not match the contraction or output tile "
                "(wrong loop variable, or offset step different from the tile extent).",
        fix="Index the stationary tile [k-tile, m-tile] and the moving tile [k-tile, n-tile] with the same "
            "contraction offset, and step each offset by its tile extent.",
        doc="""\
## What it finds
A matmul operand loaded from a kernel input at offsets that cannot be right: stationary and moving tiles with different contraction offsets, an output row/column tile index that selects neither operand (every tile gets the same product), or an offset step different from the tile extent (overlap or gaps).

## Why it matters on Trainium
Offsets are ordinary Python arithmetic in NKI: a wrong loop variable compiles, runs and produces plausible numbers. Ports from CUDA are prone to it because `A[row * K + k]` becomes a [K, M] lhsT slice with the axes swapped.

## Example
```python
for m in range(M // 128):
    for n in range(N // 512):
        a_tile = nl.load(lhsT[k * 128 + i_k, n * 128 + i_m])   # should be m * 128
```

## Fix
Index the stationary tile [k-tile, m-tile] and the moving tile [k-tile, n-tile] with the same contraction offset, and step each offset by its tile extent.
""",
    ),
    RuleSpec(
        id="MIG111", name="port-keeps-fp32-matmul-operands", category="fp32-matmul",
        severity=Severity.INFO, source="migration", languages=_PORT,
        summary="Matmul operands are loaded from inputs that are fp32 in the CUDA kernel with no cast, so the "
                "Tensor Engine runs at the fp32 rate (a quarter of bf16).",
        fix="Load the operands with dtype=nl.bfloat16 (or cast the tiles) if the accuracy budget allows; PSUM "
            "still accumulates in fp32.",
        doc="""\
## What it finds
A matmul whose stationary or moving tile is filled straight from a kernel input with no cast (legacy
`nl.load(x[...])` without `dtype=`, or a tile allocated with `dtype=x.dtype` and filled by `dma_copy`),
where the CUDA input paired with that parameter is `float*`. The NKI file alone cannot know the input
dtype (so NKI302 stays silent); the CUDA signature says it is float32.

## Why it matters on Trainium
The Tensor Engine multiplies fp32 operands at a quarter of the bf16 rate (trn2: 19.7 vs 78.6 TFLOPS).
A CUDA SGEMM runs on CUDA cores in fp32 because that is what the GPU offers; on Trainium bf16 operands
with fp32 PSUM accumulation are the normal choice when the accuracy budget allows.

## Example
```c
__global__ void sgemm(const float* A, const float* B, float* C, int M, int N, int K);
```
```python
a = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])   # fp32, as the CUDA input
b = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
acc += nl.matmul(a, b, transpose_x=True)                           # fp32 matmul: 4x slower
```

## Fix
Load the operands as bf16 (`nl.load(..., dtype=nl.bfloat16)`, or allocate the SBUF tiles as
`nl.bfloat16` and let the DMA cast); PSUM still accumulates in fp32. Keep fp32 only when the
tolerance needs it, and say so in the port spec.
""",
    ),
    RuleSpec(
        id="MIG112", name="format-range-differs", category="fp8-range",
        severity=Severity.ERROR, source="migration", languages=_PORT, category_note="`overflow-risk` for fp16 vs bf16",
        summary="A scale or clamp constant targets another number format's range (448 = CUDA's OCP fp8 e4m3, "
                "240 = Neuron float8_e4m3, 57344 = e5m2, 65504 = fp16) than the one the port casts to, or the "
                "port casts to float16 where the CUDA kernel rounds to bfloat16.",
        fix="Scale and clamp to the largest finite value of the dtype the port casts to on its target.",
        doc="""\
## What it finds
Number-format semantics that changed between the CUDA kernel and the port:

- a scale or clamp constant that is the largest finite value of one format, while the port casts to a
  format with a smaller one: 448 (OCP E4M3, CUDA's `__nv_fp8_e4m3`) with Neuron `float8_e4m3` (240 on
  trn1/trn2), 57344 (E5M2) with `float8_e4m3`, 65504 (fp16) with an fp8 type. Reported at the line of
  the constant (a module constant `FP8_MAX = 448.0`, or the literal in a `nl.minimum`/`tensor_scalar`
  clamp), with both maxima, the cast line, the CUDA constant and conversion lines, and whether CUDA
  saturates (`__NV_SATFINITE`, which the `__nv_fp8_*` constructors use). Error.
- 240 (the Neuron e4m3 maximum) with `float8_e4m3fn` (448, trn3): half the range unused. Info.
- `float16` tiles or casts where the CUDA kernel rounds to bfloat16 (`__float2bfloat16_rn`,
  `__nv_bfloat16`) and uses no half: 65504 against the fp32 range. Reported at the cast. Warning.
  (The output dtype itself is MIG105's.)

A literal counts as a format constant when it is a float (`448.0`), a clamp operand, or bound to a name
like `FP8_MAX`/`scale`/`amax`; an integer shape `448` does not. Numbers: `nki_assist/api/hardware.py`
(`FLOAT_MAX`, `CUDA_FLOAT_MAX`; nki-facts §3 "Data types"). In a review, the simulator's sanitizer
finds the cast that overflowed (NUM104 on the cast line); both findings then form one review item.

## Why it matters on Trainium
fp8 formats share a name and a byte but not a range. CUDA kernels quantise to 448 and saturate; on
trn1/trn2 `float8_e4m3` ends at 240, so every value between 240 and 448 overflows (inf in the
simulator; NKI documents no saturation for the cast). bfloat16 keeps the fp32 exponent range, float16
overflows above 65504.

## Example
```python
FP8_MAX = 448.0                                    # from the CUDA kernel: OCP e4m3
y = nl.multiply(t, s, dtype=nl.float8_e4m3)        # trn2: largest finite value 240
```

## Fix
Scale and clamp to the largest finite value of the dtype the port casts to on its target
(`float8_e4m3`: 240; `float8_e4m3fn` on trn3: 448; `float8_e5m2`: 57344), and clamp before the cast
when inputs can exceed the scaled range; use `nl.bfloat16` where the CUDA kernel used bfloat16.
""",
    ),
]
