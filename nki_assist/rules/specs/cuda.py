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
    ),
]
