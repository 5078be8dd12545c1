"""Migration checks of precision (MIG104 accumulators, MIG105 output dtype, MIG107 activation forms,
MIG111 fp32 matmul operands)."""

from __future__ import annotations

from typing import Any, Iterable

from ...api.hardware import LOW_PRECISION_FLOATS
from ...findings import Finding, Severity
from ...parse.cuda_model import canonical_dtype
from ...parse.cuda_vocab import FAST_MATH
from ...parse.nki_model import NkiKernel
from ..nki.common import allocation_of, defined_outside, fresh_in_loop_before, reads_self
from ..registry import RuleSpec
from .common import CHECKS, Ctx
from .pair import CUDA_TO_NKI_DTYPE, PRECISION_BITS, cuda_accumulators, cuda_outputs, nki_dtype, nki_output_names

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec(
        id="MIG104", name="port-accumulates-in-low-precision", category="low-precision-accumulation",
        severity=Severity.WARNING, source="migration", languages=("port",),
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
        severity=Severity.WARNING, source="migration", languages=("port",),
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
        emits=(Severity.INFO,),
    ),
    RuleSpec(
        id="MIG107", name="activation-approximation-differs", category="activation-approximation",
        severity=Severity.INFO, source="migration", languages=("port",),
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
        policy="defect", emits=(Severity.WARNING,),
    ),
    RuleSpec(
        id="MIG111", name="port-keeps-fp32-matmul-operands", category="fp32-matmul",
        severity=Severity.INFO, source="migration", languages=("port",),
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
]


def _nki_accumulators(k: NkiKernel) -> list[tuple[str, str, int, str]]:
    """(name, dtype, line, where) of running sums in the port: SBUF `+=` in loops and matmul PSUM tiles."""
    out = []
    for w in k.assignments:
        if not w.loops or not reads_self(w):
            continue
        if not (w.op in ("+=", "-=") or w.value_kind in ("add", "sub", "matmul")):
            continue
        a = allocation_of(k, w.name, w.line)
        if a is None or a.dtype is None:
            continue
        if any(defined_outside(k, w.name, lp) and not fresh_in_loop_before(k, w, lp)
               and lp.id not in w.index_dep_loops for lp in w.loops):
            out.append((w.name, a.dtype, w.line, a.buffer))
    for mm in k.matmuls:
        d = mm.dst
        if d is not None and d.dtype and mm.call.loops:
            out.append((d.name or "?", d.dtype, mm.call.line, d.buffer or "psum"))
    return out


@CHECKS.register("MIG104")
def _accumulation(c: Ctx) -> Iterable[Finding]:
    caccs = cuda_accumulators(c.cf, c.ck)
    naccs = _nki_accumulators(c.nk)
    if not caccs or not naccs:
        return
    cdt = {a.dtype for a in caccs}
    if cdt & {"float", "double"}:
        ca = next(a for a in caccs if a.dtype in ("float", "double"))
        for name, dt, line, buf in naccs:
            if dt in LOW_PRECISION_FLOATS:
                yield c.finding(
                    "MIG104", line, ca.line,
                    f"The CUDA kernel accumulates `{ca.name}` in {ca.dtype} (line {ca.line}); the port keeps the "
                    f"running sum `{name}` in {dt} ({buf.upper()}): {PRECISION_BITS.get(dt, '?')} significant bits "
                    f"instead of 24, so the error grows with the reduction length.",
                    {"cuda_accumulator": ca.name, "cuda_dtype": ca.dtype, "nki_accumulator": name, "nki_dtype": dt,
                     "buffer": buf, "nki_bits": PRECISION_BITS.get(dt), "cuda_bits": 24 if ca.dtype == "float" else 53},
                    f"{ca.dtype} accumulator `{ca.name}`",
                    fix=(f"Allocate the PSUM accumulator `{name}` as nl.float32 (the matmul accumulates in it) and "
                         "cast once when evacuating it to SBUF." if buf == "psum" else
                         f"Allocate `{name}` as nl.float32, as CUDA's `{ca.name}` is {ca.dtype}, and cast to {dt} "
                         "once after the loop."))
                return
    elif cdt and cdt <= {"half", "bfloat16"}:
        ca = caccs[0]
        for name, dt, line, buf in naccs:
            if dt in ("float32", "float64"):
                yield c.finding(
                    "MIG105", line, ca.line,
                    f"The CUDA kernel accumulates `{ca.name}` in {ca.dtype} (line {ca.line}); the port accumulates "
                    f"`{name}` in {dt}. The port is the more accurate one: expect GPU outputs to differ by "
                    f"{ca.dtype} rounding of the partial sums.",
                    {"cuda_accumulator": ca.name, "cuda_dtype": ca.dtype, "nki_accumulator": name, "nki_dtype": dt},
                    f"{ca.dtype} accumulator `{ca.name}`", severity=Severity.INFO)
                return


@CHECKS.register("MIG105")
def _output_dtype(c: Ctx) -> Iterable[Finding]:
    outs = cuda_outputs(c.ck)
    names = nki_output_names(c.nk)
    if len(outs) != 1 or not names:
        return
    cp = outs[0]
    cdt = CUDA_TO_NKI_DTYPE.get(canonical_dtype(cp.type) or "")
    allocs = [a for n in names if (a := allocation_of(c.nk, n)) is not None and a.dtype]
    if cdt is None or len(allocs) != 1:
        return
    a = allocs[0]
    ndt = nki_dtype(a.dtype)
    if ndt == cdt or ndt not in PRECISION_BITS:
        return
    lower = PRECISION_BITS[ndt] < PRECISION_BITS.get(cdt, 0)
    yield c.finding(
        "MIG105", a.line, cp.line,
        f"The CUDA kernel writes `{cp.name}` as {cp.type} ({cdt}); the port's output `{a.name}` is {ndt}"
        + (": results are rounded to fewer bits than the GPU produces." if lower else
           ": wider than the GPU output, so a bitwise comparison cannot match."),
        {"cuda_output": cp.name, "cuda_dtype": cdt, "nki_output": a.name, "nki_dtype": ndt},
        f"output `{cp.name}` ({cp.type})", severity=Severity.WARNING if lower else Severity.INFO, column=a.col)


_INTRINSIC_FN = {"__expf": "exp", "__exp10f": "exp", "hexp": "exp", "h2exp": "exp", "__logf": "log",
                 "__log2f": "log", "__log10f": "log", "hlog": "log", "h2log": "log", "__sinf": "sin",
                 "__cosf": "cos", "__sincosf": "sin", "__tanf": "tan", "__tanhf": "tanh", "htanh_approx": "tanh",
                 "rsqrtf": "rsqrt", "rsqrt": "rsqrt", "hrsqrt": "rsqrt", "h2rsqrt": "rsqrt",
                 "__fdividef": "divide", "hrcp": "reciprocal", "h2rcp": "reciprocal", "__powf": "power",
                 "tanhf": "gelu", "tanh": "gelu"}


GELU_ERF_VS_TANH_MAX_ABS = 4.73e-4  # max |gelu_erf(x) - gelu_tanh(x)|, at x ~ -2.70 (computed)


@CHECKS.register("MIG107")
def _activations(c: Ctx) -> Iterable[Finding]:
    nk = c.nk
    reported: set[str] = set()
    for fm in c.ck.fast_math:
        approx, note = FAST_MATH.get(fm.intrinsic, (False, ""))
        fn = _INTRINSIC_FN.get(fm.intrinsic)
        if not approx or fn is None or fn in reported:
            continue
        for call in nk.calls:
            names = [call.api.split(".")[-1].lower()] + [v.split(".")[-1].lower() for key, v in call.kwargs.items()
                                                        if key.startswith("op")] + ([call.op.split(".")[-1].lower()] if call.op else [])
            hit = next((n for n in names if fn in n or (fn == "reciprocal" and n == "divide")
                        or (fn == "divide" and n == "reciprocal")), None)
            if hit is None:
                continue
            reported.add(fn)
            ev: dict[str, Any] = {"cuda_intrinsic": fm.intrinsic, "cuda_note": note, "nki_function": hit,
                                  "nki_api": call.api}
            if fn == "gelu":
                tanh_form = "tanh" in hit or "apprx" in hit
                ev["gelu_forms"] = {"cuda": "tanh approximation", "nki": "tanh approximation" if tanh_form else "erf"}
                if not tanh_form:
                    ev["max_abs_difference"] = GELU_ERF_VS_TANH_MAX_ABS
                msg = (f"The CUDA kernel computes GELU with the tanh approximation (`{fm.intrinsic}`, line {fm.line}); "
                       + (f"the port's `{hit}` is the same form but evaluated by a ScalarE polynomial: expect "
                          "ULP-level differences." if tanh_form else
                          f"the port's `{hit}` is the erf form. The two formulas differ by up to "
                          f"{GELU_ERF_VS_TANH_MAX_ABS:.2g} absolute (at x ~ -2.7), before any rounding; use "
                          "nl.gelu_apprx_tanh to match the GPU or widen atol to >= 5e-4."))
            else:
                msg = (f"The CUDA kernel uses the fast-math intrinsic `{fm.intrinsic}` (line {fm.line}: {note}); the "
                       f"port's `{hit}` runs on ScalarE as a piecewise polynomial. Neither is correctly rounded, and "
                       "they differ from each other and from NumPy at the ULP level (more for large arguments).")
            if fn == "gelu" and not ev["gelu_forms"]["nki"].startswith("tanh"):
                fix = (f"Use nl.gelu_apprx_tanh (the tanh form of `{fm.intrinsic}`) instead of `{hit}`, or widen atol "
                       "to >= 5e-4.")
            else:
                fix = (f"Compare with a tolerance that covers both approximations (`{fm.intrinsic}` on the GPU, the "
                       f"ScalarE `{hit}` on Trainium): a few ULP, more for large arguments; bitwise equality is not "
                       "expected.")
            yield c.finding("MIG107", call.line, fm.line, msg, ev, f"fast-math `{fm.intrinsic}`", column=call.col,
                            fix=fix)
            break
    if "gelu" not in reported:
        yield from _gelu_erf_vs_tanh(c)


def _gelu_erf_vs_tanh(c: Ctx) -> Iterable[Finding]:
    """CUDA computes the exact erf GELU; the port calls the tanh approximation (a formula change)."""
    erf = next((h for h in c.ck.epilogue if h.kind == "activation" and h.detail == "erf"), None)
    if erf is None:
        return
    for call in c.nk.calls:
        names = [call.api.split(".")[-1].lower()] + [v.split(".")[-1].lower() for key, v in call.kwargs.items()
                                                    if key.startswith("op")] + ([call.op.split(".")[-1].lower()] if call.op else [])
        hit = next((n for n in names if "gelu" in n and ("tanh" in n or "apprx" in n)), None)
        if hit is None:
            continue
        yield c.finding(
            "MIG107", call.line, erf.line,
            f"The CUDA kernel computes GELU in the exact erf form (line {erf.line}); the port's `{hit}` is the tanh "
            f"approximation. The two formulas differ by up to {GELU_ERF_VS_TANH_MAX_ABS:.2g} absolute (at x ~ -2.7) "
            "before any rounding, and the model was trained with the erf form: use nl.gelu.",
            {"cuda_function": "erf", "nki_function": hit, "nki_api": call.api,
             "gelu_forms": {"cuda": "erf", "nki": "tanh approximation"},
             "max_abs_difference": GELU_ERF_VS_TANH_MAX_ABS},
            "exact erf GELU", severity=Severity.WARNING, column=call.col,
            fix=f"Call nl.gelu (the erf form the CUDA kernel computes) instead of `{hit}`.")
        return


def _operand_source(k: NkiKernel, name: str, before: int) -> tuple[str, int] | None:
    """(NKI param, line) when tile `name` holds a param's values in the param's own dtype: a legacy
    `nl.load(param[...])` with no dtype=, or a tile allocated with `dtype=param.dtype` and filled by a copy
    from the param. None when the tile is cast or its origin is not that simple."""
    loads = [c for c in k.calls if c.line <= before and c.api in ("nl.load", "nisa.dma_copy")
             and (c.target == name or ((d := c.operand("dst")) is not None and d.name == name))]
    if not loads:
        return None
    ld = max(loads, key=lambda c: c.line)
    src = ld.operand("src")
    if src is None or not src.is_param or getattr(ld, "_kw_dtype", None) or "dtype" in ld.kwargs:
        return None
    if ld.api == "nisa.dma_copy":
        alloc = allocation_of(k, name, before)
        call = next((c for c in k.calls if c.line == getattr(alloc, "line", -1) and c.target == name), None)
        if call is None or call.kwargs.get("dtype", "").replace(" ", "") != f"{src.name}.dtype":
            return None
    return src.name, ld.line


@CHECKS.register("MIG111")
def _fp32_operands(c: Ctx) -> Iterable[Finding]:
    cuda_of = {n: cn for cn, n in c.pairing.pairs.items()}
    t = c.target
    rate = round(t.peak_bf16_flops / t.peak_fp32_flops)
    for mm in c.nk.matmuls:
        hits = []
        for op in (mm.stationary, mm.moving):
            if op is None or op.name is None or op.dtype is not None:
                continue  # a known dtype is NKI302's business
            src = (op.name, mm.call.line) if op.is_param else _operand_source(c.nk, op.name, mm.call.line)
            cp = c.ck.param(cuda_of.get(src[0], "")) if src else None
            if cp is None or not cp.is_pointer or CUDA_TO_NKI_DTYPE.get(canonical_dtype(cp.type) or "") != "float32":
                continue
            hits.append((op.name, src[0], cp))
        if not hits:
            continue
        names = ", ".join(f"`{o}` (from `{p}`)" for o, p, _ in hits)
        cp = hits[0][2]
        yield c.finding(
            "MIG111", mm.call.line, cp.line,
            f"`{mm.call.api}` multiplies {names} in float32, the dtype of the CUDA `{cp.type}*` input "
            f"`{cp.name}` (line {cp.line}): the Tensor Engine runs fp32 at {t.peak_fp32_flops / 1e12:.1f} TFLOPS "
            f"vs {t.peak_bf16_flops / 1e12:.1f} for bf16 on {t.name} ({rate}x slower); PSUM accumulates in fp32 "
            "either way.",
            {"operands": [o for o, _, _ in hits], "nki_params": [p for _, p, _ in hits],
             "cuda_params": [x.name for _, _, x in hits], "dtype": "float32",
             "claim": {"kind": "operand-dtype", "nki_params": [p for _, p, _ in hits], "dtype": "float32",
                       "matmul_line": mm.call.line},
             "fp32_tflops": round(t.peak_fp32_flops / 1e12, 1), "bf16_tflops": round(t.peak_bf16_flops / 1e12, 1)},
            f"fp32 input `{cp.name}`", column=mm.call.col, confidence="medium")
