"""CUDA facts about number formats: which fp8/bf16/fp16 formats a kernel converts to, whether the
conversion saturates, and the format-maximum constants (448, 57344, 65504, ...) it scales or clamps with.

Read from the source text of the kernel and the `__device__` helpers it calls (cuda_fp8.h, cuda_bf16.h
and cuda_fp16.h spellings); rule input for the migration format check, not part of the JSON contract.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .cuda_model import CudaFile, CudaKernel


class FormatUse(NamedTuple):
    kind: str  # type (a variable/cast of the format) | convert (an intrinsic) | saturate | constant
    format: str | None  # fp8_e4m3 | fp8_e5m2 | bfloat16 | half (None for a saturation mode)
    text: str  # the token or literal as written
    line: int
    value: float | None = None  # a constant's value


# token -> (kind, format)
_TOKENS = {
    "__nv_fp8_e4m3": ("type", "fp8_e4m3"), "__nv_fp8x2_e4m3": ("type", "fp8_e4m3"),
    "__nv_fp8x4_e4m3": ("type", "fp8_e4m3"), "__nv_fp8_e5m2": ("type", "fp8_e5m2"),
    "__nv_fp8x2_e5m2": ("type", "fp8_e5m2"), "__nv_fp8x4_e5m2": ("type", "fp8_e5m2"),
    "__NV_E4M3": ("convert", "fp8_e4m3"), "__NV_E5M2": ("convert", "fp8_e5m2"),
    "__NV_SATFINITE": ("saturate", None),
    "__float2bfloat16": ("convert", "bfloat16"), "__float2bfloat16_rn": ("convert", "bfloat16"),
    "__float2bfloat16_rz": ("convert", "bfloat16"), "__floats2bfloat162_rn": ("convert", "bfloat16"),
    "__float22bfloat162_rn": ("convert", "bfloat16"), "__nv_bfloat16": ("type", "bfloat16"),
    "nv_bfloat16": ("type", "bfloat16"), "__nv_bfloat162": ("type", "bfloat16"),
    "__float2half": ("convert", "half"), "__float2half_rn": ("convert", "half"),
    "__float2half_rz": ("convert", "half"), "__floats2half2_rn": ("convert", "half"),
    "__half": ("type", "half"), "__half2": ("type", "half"), "half": ("type", "half"),
}
_WORD = re.compile(r"\b(" + "|".join(sorted((re.escape(t) for t in _TOKENS), key=len, reverse=True)) + r")\b")
# the largest finite values of the formats (and Neuron's fp8 e4m3, 240, which a CUDA kernel never uses)
FORMAT_MAXIMA = {448.0: "fp8_e4m3", 57344.0: "fp8_e5m2", 65504.0: "half", 240.0: "fp8_e4m3 (Neuron)"}
_NUM = re.compile(r"(?<![\w.])(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)[fF]?(?![\w.])")
_COMMENT = re.compile(r"//.*$")


def _scan(lines: list[str], first: int, last: int, out: list[FormatUse]) -> None:
    in_block = False
    for ln in range(first, min(last, len(lines)) + 1):
        text = lines[ln - 1]
        if in_block:
            if "*/" not in text:
                continue
            text = text.split("*/", 1)[1]
            in_block = False
        text = re.sub(r"/\*.*?\*/", " ", text)
        if "/*" in text:
            text, in_block = text.split("/*", 1)[0], True
        text = _COMMENT.sub("", text)
        for m in _WORD.finditer(text):
            kind, fmt = _TOKENS[m.group(1)]
            out.append(FormatUse(kind, fmt, m.group(1), ln))
        for m in _NUM.finditer(text):
            try:
                v = float(m.group(1))
            except ValueError:
                continue
            if v in FORMAT_MAXIMA:
                out.append(FormatUse("constant", FORMAT_MAXIMA[v].split(" ")[0], m.group(0), ln, v))


def format_facts(cf: CudaFile, kernel: CudaKernel) -> list[FormatUse]:
    """Format uses in `kernel`, in the `__device__` functions it calls, and in the file's #define /
    constexpr constants (a `#define FP8_MAX 448.0f` above the kernel)."""
    out: list[FormatUse] = []
    for k in [kernel, *cf.callees(kernel)]:
        _scan(cf.lines, k.line, k.end_line, out)
    for i, text in enumerate(cf.lines, 1):
        if re.match(r"\s*#\s*define\b|.*\b(constexpr|const)\b.*=", text) and not any(
                k.line <= i <= k.end_line for k in cf.kernels):
            _scan(cf.lines, i, i, out)
    return sorted(set(out), key=lambda u: (u.line, u.kind, u.text))


def saturates(uses: list[FormatUse]) -> bool:
    """Conversions to fp8 saturate: an explicit __NV_SATFINITE, or the __nv_fp8_* types (whose
    constructors convert with __NV_SATFINITE)."""
    return any(u.kind == "saturate" or (u.kind == "type" and (u.format or "").startswith("fp8")) for u in uses)
