"""CUDA vocabulary the front end recognises: intrinsics, barriers, shuffles, atomics, epilogue ops."""

from __future__ import annotations

import re

from .cuda_model import EpilogueHint

# name -> (approximate, what it approximates / note). Approximate ones differ from the correctly
# rounded libm function (CUDA C++ Programming Guide, "Intrinsic Functions" and Table "Single-Precision
# Floating-Point Intrinsic Functions"); the `_rn`-style ones are exactly rounded but fix an
# evaluation order/rounding (fused vs separate) that a port may not reproduce.
FAST_MATH: dict[str, tuple[bool, str]] = {
    "__expf": (True, "expf; 2 + floor(abs(1.173 * x)) ulp, flushes denormals"),
    "__exp10f": (True, "exp10f; 2 + floor(abs(2.97 * x)) ulp"),
    "__logf": (True, "logf; 2^-21.41 absolute error in [0.5, 2], else 3 ulp"),
    "__log2f": (True, "log2f; 2^-22 absolute error in [0.5, 2], else 2 ulp"),
    "__log10f": (True, "log10f; 2^-24 absolute error in [0.5, 2], else 3 ulp"),
    "__powf": (True, "powf; computed as exp2(y * log2(x))"),
    "__sinf": (True, "sinf; 2^-21.41 absolute error in [-pi, pi], worse outside"),
    "__cosf": (True, "cosf; 2^-21.19 absolute error in [-pi, pi], worse outside"),
    "__sincosf": (True, "sincosf; as __sinf/__cosf"),
    "__tanf": (True, "tanf; derived from __sinf/__cosf, large error near pi/2"),
    "__tanhf": (True, "tanhf; hardware tanh.approx"),
    "__fdividef": (True, "x / y; 2 ulp, returns 0 for 2^126 < |y| < 2^128"),
    "rsqrtf": (True, "1 / sqrtf(x); 2 ulp"),
    "rsqrt": (True, "1 / sqrt(x)"),
    "hexp": (True, "half exp approximation"), "h2exp": (True, "half2 exp approximation"),
    "hlog": (True, "half log approximation"), "h2log": (True, "half2 log approximation"),
    "hrsqrt": (True, "half rsqrt approximation"), "h2rsqrt": (True, "half2 rsqrt approximation"),
    "hrcp": (True, "half reciprocal approximation"), "h2rcp": (True, "half2 reciprocal approximation"),
    "hsin": (True, "half sin approximation"), "hcos": (True, "half cos approximation"),
    "htanh_approx": (True, "half tanh approximation"),
    "tanhf": (True, "tanh-approximated GELU: 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))) instead of erf GELU"),
    "tanh": (True, "tanh-approximated GELU instead of erf GELU"),
    "__fmaf_rn": (False, "fused multiply-add, one rounding"),
    "__fmaf_rz": (False, "fused multiply-add, round toward zero"),
    "__fmaf_ieee_rn": (False, "fused multiply-add, IEEE"),
    "__fma_rn": (False, "double fused multiply-add"),
    "__frcp_rn": (False, "1/x correctly rounded"),
    "__fdiv_rn": (False, "x/y correctly rounded"),
    "__fsqrt_rn": (False, "sqrtf correctly rounded"),
    "__frsqrt_rn": (False, "1/sqrtf correctly rounded"),
    "__fadd_rn": (False, "add, not contracted into an FMA"),
    "__fmul_rn": (False, "multiply, not contracted into an FMA"),
    "__saturatef": (False, "clamp to [0, 1]"),
}
APPROX_PTX = re.compile(r"\b(ex2|lg2|sin|cos|tanh|rsqrt|rcp|sqrt)\.approx(?:\.ftz)?\.(?:f32|f16|bf16|f16x2|bf16x2)")
GELU_CONSTANTS = re.compile(r"0\.044715|0\.79788|M_2_SQRTPI|sqrt\w*\(\s*2\.?0?f?\s*/\s*M_PI")
GELU_CONTEXT = re.compile(GELU_CONSTANTS.pattern + "|gelu", re.I)

BLOCK_BARRIERS = frozenset({"__syncthreads", "__syncthreads_count", "__syncthreads_and",
                            "__syncthreads_or", "__barrier_sync"})
WARP_BARRIERS = frozenset({"__syncwarp"})
SHUFFLE = re.compile(r"^(?:__shfl(?:_up|_down|_xor)?(?:_sync)?|__reduce_(?:add|min|max|and|or|xor)_sync|"
                     r"__ballot(?:_sync)?|__any(?:_sync)?|__all(?:_sync)?|__match_(?:any|all)_sync|"
                     r"shfl(?:_up|_down|_xor)?|reduce)$")
ATOMIC = re.compile(r"^(?:unsafe)?[aA]tomic(Add|Sub|Exch|Min|Max|Inc|Dec|CAS|And|Or|Xor)(?:_block|_system)?$")
SHARED_WRITERS = frozenset({"store_matrix_sync", "__pipeline_memcpy_async", "memcpy_async",
                            "cp_async", "__stcs", "__stwt"})
TENSOR_CORE_CALLS = frozenset({"mma_sync", "bmma_sync"})

_PTX_DTYPES = {"f16": "half", "bf16": "bfloat16", "tf32": "tf32", "f32": "float", "f64": "double",
               "e4m3": "fp8_e4m3", "e5m2": "fp8_e5m2", "s8": "int8", "u8": "uint8", "s4": "int4",
               "u4": "uint4", "b1": "b1", "s32": "int32"}
PTX_MMA = re.compile(r"\b(wgmma\.mma_async|mma\.sp|mma\.sync)[\w.]*")
PTX_BARRIER = re.compile(r"\b(bar\.sync|barrier\.sync|bar\.red|barrier\.cta\.sync)\b")


def ptx_mma_dtypes(instr: str) -> tuple[str | None, ...]:
    """`mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32` -> (a, b, acc) = (half, half, float)."""
    types = [_PTX_DTYPES[t] for t in re.findall(r"\.(f16|bf16|tf32|f32|f64|e4m3|e5m2|s8|u8|s4|u4|b1|s32)\b", instr)]
    if len(types) >= 3:  # PTX order: d, a, b[, c]
        return (types[1], types[2], types[0])
    if len(types) == 2:
        return (types[1], types[1], types[0])
    return (None, None, types[0] if types else None)


# --- epilogue hints --------------------------------------------------------------------------
_ACT = re.compile(r"\b(relu\w*|gelu\w*|silu\w*|swish\w*|sigmoid\w*|softplus\w*|elu|leaky\w*|mish\w*|"
                  r"hardswish\w*|__tanhf|tanhf?|erff?|__expf|expf?|exp2f?|h2?exp)\s*\(", re.I)
_RELU_MAX = re.compile(r"\b(?:fmaxf|fmax|max|__hmax|fmaxf?)\s*\(\s*(?:[^,()]|\([^()]*\))*,\s*0(?:\.0*)?[fF]?\s*\)"
                       r"|\b(?:fmaxf|fmax|max|__hmax)\s*\(\s*0(?:\.0*)?[fF]?\s*,")
_RELU_TERNARY = re.compile(r">\s*0(?:\.0*)?[fF]?\s*\)?\s*\?\s*[\w.\[\]]+\s*:\s*0(?:\.0*)?[fF]?\b")
_SIGMOID = re.compile(r"1(?:\.0*)?[fF]?\s*/\s*\(\s*1(?:\.0*)?[fF]?\s*\+\s*(?:__)?expf?\s*\(\s*-")
_BIAS = re.compile(r"\b(\w*(?:bias|beta)\w*)\s*\[")
_SCALE_VEC = re.compile(r"\*\s*(\w*(?:gamma|weight|scale)\w*)\s*\[")


def value_hints(text: str, line: int, scale_params: re.Pattern | None) -> list[EpilogueHint]:
    """Bias / scale / activation work visible in one value expression."""
    if "(" not in text and "[" not in text and "?" not in text and (
            scale_params is None or not scale_params.search(text)):
        return []
    hints: list[EpilogueHint] = []
    gelu_ctx = bool(GELU_CONTEXT.search(text))
    if _SIGMOID.search(text):
        hints.append(EpilogueHint("activation", "sigmoid", line))
    for m in _ACT.finditer(text):
        name = m.group(1).lower()
        if name.startswith(("relu", "leaky")):
            act = "relu" if name.startswith("relu") else "leaky_relu"
        elif name.startswith(("gelu",)) or (gelu_ctx and name.lstrip("_").startswith(("tanh", "erf"))):
            act = "gelu"
        elif name.startswith(("silu", "swish")):
            act = "silu"
        elif name.startswith("sigmoid"):
            act = "sigmoid"
        elif name.lstrip("_").startswith("tanh"):
            act = "tanh"
        elif name.startswith("erf"):
            act = "erf"
        elif "exp" in name:
            if hints and hints[-1].detail == "sigmoid":
                continue
            act = "exp"
        else:
            act = name.rstrip("f") if name in ("softplusf",) else name
        hints.append(EpilogueHint("activation", act, line))
    if _RELU_MAX.search(text) or _RELU_TERNARY.search(text):
        hints.append(EpilogueHint("activation", "relu", line))
    for m in _BIAS.finditer(text):
        hints.append(EpilogueHint("bias", m.group(1), line))
    for m in _SCALE_VEC.finditer(text):
        hints.append(EpilogueHint("scale", m.group(1), line))
    if scale_params is not None:
        for m in scale_params.finditer(text):
            hints.append(EpilogueHint("scale", m.group(1) or m.group(2), line))
    return hints


# --- scale factors (1/sqrt(d), alpha, temperature) ------------------------------------------------
SCALE_NAME = re.compile(r"^(?:\w*_)?(?:scale|scaling|alpha|temperature|temp|inv_?temp\w*|inv_?sqrt\w*|rsqrt_?\w*|"
                        r"softmax_scale|sm_scale|qk_scale|norm_?factor)$", re.I)
SQRT_CALL = re.compile(r"\b(?:rsqrtf?|sqrtf?|__frsqrt_rn|__fsqrt_rn|hrsqrt|hsqrt|rsqrt)\s*\(")
_INLINE_SCALE = re.compile(r"(?:\*|/)\s*((?:rsqrtf?|sqrtf?|__frsqrt_rn|__fsqrt_rn|hrsqrt|hsqrt)\s*\("
                           r"[^()]*(?:\([^()]*\)[^()]*)*\))")


def scaled_by(text: str, op: str, factors: dict[str, tuple[str, int]]) -> list[str]:
    """Scale factors that multiply or divide the value `text` assigned with `op` (`=`, `*=`, `/=`)."""
    out = []
    for name in factors:
        if name not in text:
            continue
        if op in ("*=", "/=") and re.fullmatch(rf"\s*\(?\s*{re.escape(name)}\s*\)?\s*", text):
            out.append(name)
        elif re.search(rf"(?:\*|/)\s*{re.escape(name)}\b|\b{re.escape(name)}\s*\*", text):
            out.append(name)
    return out


def inline_scales(text: str) -> list[str]:
    """`x * rsqrtf((float)d)` / `x / sqrtf(d)`: the sqrt expressions the value is scaled by."""
    return [m.group(1) for m in _INLINE_SCALE.finditer(text)] if "sqrt" in text else []
