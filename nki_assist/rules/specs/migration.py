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
    ),
    RuleSpec(
        id="MIG102", name="cuda-epilogue-dropped", category="missing-epilogue",
        severity=Severity.ERROR, source="migration", languages=_PORT,
        summary="Work the CUDA kernel applies to its output (bias, scale/alpha/beta, activation) has no "
                "counterpart in the port.",
        fix="Apply the missing operation before the output store (activation(op, data, bias=, scale=) fuses "
            "bias, scale and activation in one ScalarE instruction).",
    ),
    RuleSpec(
        id="MIG103", name="cuda-input-unused-in-port", category="unused-input",
        severity=Severity.WARNING, source="migration", languages=_PORT,
        summary="An input the CUDA kernel reads has no counterpart in the port, or its counterpart is never read.",
        fix="Read the input where the CUDA kernel does, or document why the port does not need it.",
    ),
    RuleSpec(
        id="MIG104", name="port-accumulates-in-low-precision", category="low-precision-accumulation",
        severity=Severity.WARNING, source="migration", languages=_PORT,
        summary="The CUDA kernel accumulates in fp32, the port keeps its running sum in bf16/fp16.",
        fix="Accumulate in PSUM or an fp32 SBUF tile and cast to the output dtype once after the loop.",
    ),
    RuleSpec(
        id="MIG105", name="port-dtype-differs", category="dtype-mismatch",
        severity=Severity.WARNING, source="migration", languages=_PORT,
        summary="The port's output or accumulation dtype differs from the CUDA kernel's.",
        fix="Use the CUDA kernel's output dtype, or state the change in the port spec's tolerance and docs.",
    ),
    RuleSpec(
        id="MIG106", name="reduction-order-differs", category="accumulation-order",
        severity=Severity.INFO, source="migration", languages=_PORT,
        summary="The CUDA kernel reduces in a tree/atomic/split-K/tensor-core order, the port sequentially in "
                "PSUM: results differ by rounding, within the stated tolerance.",
        fix="Compare GPU and Trainium outputs with the stated relative tolerance, not bitwise.",
    ),
    RuleSpec(
        id="MIG107", name="activation-approximation-differs", category="activation-approximation",
        severity=Severity.INFO, source="migration", languages=_PORT,
        summary="The CUDA kernel uses a fast-math intrinsic or tanh-GELU where the port uses a ScalarE "
                "function (piecewise polynomial) or a different GELU form.",
        fix="Use the same formula on both sides (e.g. the tanh-approximated GELU) or widen the tolerance.",
    ),
    RuleSpec(
        id="MIG108", name="cuda-tile-size-carried-over", category="tensor-engine-underutilized",
        severity=Severity.WARNING, source="migration", languages=_PORT,
        summary="A CUDA shared-memory tile size (32/64) was copied into an NKI matmul dimension that could be "
                "128 (contraction, stationary) or 512 (moving).",
        fix="Size tiles for the Tensor Engine: contraction and stationary free 128, moving free up to 512.",
    ),
    RuleSpec(
        id="MIG109", name="operand-layout-changed", category="indexing-error",
        severity=Severity.INFO, source="migration", languages=_PORT,
        summary="The port expects an operand in a different layout than the CUDA kernel (A [M, K] row-major vs "
                "lhsT [K, M]): the caller or the kernel must transpose it.",
        fix="Transpose on the host (pass A.T) and say so in the kernel docstring, or load A and transpose on "
            "chip with nc_transpose.",
    ),
    RuleSpec(
        id="MIG110", name="matmul-operand-offset-mismatch", category="indexing-error",
        severity=Severity.ERROR, source="migration", languages=_PORT,
        summary="A matmul operand tile is loaded at offsets that do not match the contraction or output tile "
                "(wrong loop variable, or offset step different from the tile extent).",
        fix="Index the stationary tile [k-tile, m-tile] and the moving tile [k-tile, n-tile] with the same "
            "contraction offset, and step each offset by its tile extent.",
    ),
    RuleSpec(
        id="MIG111", name="port-keeps-fp32-matmul-operands", category="fp32-matmul",
        severity=Severity.INFO, source="migration", languages=_PORT,
        summary="Matmul operands are loaded from inputs that are fp32 in the CUDA kernel with no cast, so the "
                "Tensor Engine runs at the fp32 rate (a quarter of bf16).",
        fix="Load the operands with dtype=nl.bfloat16 (or cast the tiles) if the accuracy budget allows; PSUM "
            "still accumulates in fp32.",
    ),
    RuleSpec(
        id="MIG112", name="format-range-differs", category="fp8-range",
        severity=Severity.ERROR, source="migration", languages=_PORT,
        summary="A scale or clamp constant targets another number format's range (448 = CUDA's OCP fp8 e4m3, "
                "240 = Neuron float8_e4m3, 57344 = e5m2, 65504 = fp16) than the one the port casts to, or the "
                "port casts to float16 where the CUDA kernel rounds to bfloat16.",
        fix="Scale and clamp to the largest finite value of the dtype the port casts to on its target.",
    ),
]
