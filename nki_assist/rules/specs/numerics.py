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
    ),
    RuleSpec(
        id="NUM102", name="algorithmic-output-mismatch", category="output-mismatch",
        severity=Severity.ERROR, source="numerics",
        summary="The kernel fails the tolerance even with fp32 storage, on aligned sizes: the algorithm "
                "(indexing, missing operation, wrong operand) differs from the reference.",
        fix="Return intermediates as extra outputs and compare each with the reference to find the first stage "
            "that differs.",
    ),
    RuleSpec(
        id="NUM103", name="ragged-size-failure", category="missing-boundary-mask",
        severity=Severity.ERROR, source="numerics",
        summary="The kernel passes on tile-aligned sizes and fails (or crashes) only on ragged sizes: "
                "the tail is not handled.",
        fix="Use a ceiling trip count and clamp the last tile (new NKI: min()-bounded slices; legacy: mask=).",
    ),
    RuleSpec(
        id="NUM104", name="non-finite-output", category="overflow-risk",
        severity=Severity.ERROR, source="numerics",
        summary="The kernel output has NaN/Inf where the reference is finite (overflow, or memory read "
                "before it was written).",
        fix="Find the statement that first produces a non-finite value: an output element never written, or a "
            "value beyond the dtype's range.",
    ),
    RuleSpec(
        id="NUM105", name="error-grows-linearly", category="low-precision-accumulation",
        severity=Severity.WARNING, source="numerics",
        summary="The output error grows ~linearly with the reduction length (slope >= 0.8 in log-log), "
                "where fp32 accumulation grows ~0.5: partial sums are kept in low precision.",
        fix="Keep the running sum in an fp32 tile and cast to the output dtype once after the loop.",
    ),
    RuleSpec(
        id="NUM106", name="accumulation-order-gap", category="accumulation-order",
        severity=Severity.INFO, source="numerics",
        summary="The port differs from the modelled CUDA output by no more than rounding and reduction "
                "order explain; a fair GPU-vs-Trainium comparison needs the stated tolerance.",
        fix="Compare GPU and Trainium outputs with at least the stated rtol/atol, not bitwise.",
    ),
]
