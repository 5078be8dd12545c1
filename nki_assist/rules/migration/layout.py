"""Migration checks of tiling and layout (MIG108 tile sizes carried over, MIG109 operand layout) and number
formats (MIG112, through formats.py)."""

from __future__ import annotations

from typing import Iterable

from ...findings import Finding, Severity
from ..registry import RuleSpec
from .common import CHECKS, Ctx
from .formats import check_formats
from .pair import cuda_tile_sizes, cuda_value_inputs, params_by_name, transposed_name

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec(
        id="MIG108", name="cuda-tile-size-carried-over", category="tensor-engine-underutilized",
        severity=Severity.INFO, source="migration", languages=("port",), emits=(Severity.WARNING,),
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
        severity=Severity.INFO, source="migration", languages=("port",),
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
        id="MIG112", name="format-range-differs", category="fp8-range",
        severity=Severity.ERROR, source="migration", languages=("port",), category_note="`overflow-risk` for fp16 vs bf16",
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


@CHECKS.register("MIG108")
def _tile_sizes(c: Ctx) -> Iterable[Finding]:
    tiles = cuda_tile_sizes(c.cf, c.ck)
    if not tiles:
        return
    pmax = c.target.partitions
    seen = set()
    for mm in c.nk.matmuls:
        for dim, val, limit, what in (("K", mm.K, pmax, "contraction (partition) size"),
                                      ("M", mm.M, pmax, "stationary free size (output partitions)")):
            if not isinstance(val, int) or val >= limit or val not in tiles or (dim, val) in seen:
                continue
            seen.add((dim, val))
            where, cline = tiles[val]
            yield c.finding(
                "MIG108", mm.call.line, cline,
                f"The matmul's {what} is {val}, the CUDA kernel's shared-memory tile ({where}, line {cline}); the "
                f"Tensor Engine takes {limit}, so each matmul uses {val}/{limit} = {val / limit:.0%} of the PE "
                f"{'rows' if dim == 'K' else 'columns'}.",
                {"dim": dim, "value": val, "limit": limit, "cuda_tile": where, "utilization": round(val / limit, 3)},
                f"CUDA tile {where}", column=mm.call.col)


@CHECKS.register("MIG109")
def _layout(c: Ctx) -> Iterable[Finding]:
    stationary = {mm.stationary.name for mm in c.nk.matmuls if mm.stationary}
    loaded_from = {}
    for call in c.nk.calls:
        src = call.operand("src")
        dst = call.operand("dst")
        if src is not None and src.is_param:
            loaded_from[call.target or (dst.name if dst else None)] = src.name
    st_params = {loaded_from.get(s) for s in stationary} - {None}
    nparams = params_by_name(c.nk)
    for cp in cuda_value_inputs(c.ck):
        n = c.pairing.nki_for(cp.name)
        if not n or not cp.is_pointer or transposed_name(cp.name) or not transposed_name(n):
            continue
        if st_params and n not in st_params and not any(n == s for s in stationary):
            continue
        p = nparams[n]
        yield c.finding(
            "MIG109", p.line, cp.line,
            f"The CUDA kernel reads `{cp.name}` in its own layout ({cp.type}*, line {cp.line}); the port takes "
            f"`{n}`, the transposed layout the Tensor Engine wants for the stationary operand "
            f"({c.pairing.describe(cp.name)}). The caller must pass {cp.name}.T (a host-side transpose per call), "
            "or the kernel must transpose on chip.",
            {"cuda_param": cp.name, "nki_param": n, "paired_by": c.pairing.how[cp.name]},
            f"`{cp.name}` in CUDA layout", column=p.col)


@CHECKS.register("MIG112")
def _formats(c: Ctx) -> Iterable[Finding]:
    return check_formats(c.cf, c.nf, c.ck, c.nk, c.target)
