"""The table of claim kinds: which findings make each claim, the run evidence that confirms it and the evidence
that refutes it, and the check that weighs them. docs/feedback.md "Claims against evidence" is generated from
CLAIMS (tests/review/test_claims_table.py keeps them equal); `reconcile` dispatches through it, first match wins."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ...findings import Finding
from .cost import check_layout_limited_dma, check_ragged_underuse
from .dtype import check_operand_dtype
from .evidence import RunContext
from .inputs import check_input_unused
from .output import check_output_wrong
from .tail import check_tail
from .unwritten import check_unwritten

Check = Callable[[RunContext, Finding, dict[str, Any], list[Finding], "str | None"], "Finding | None"]


@dataclass(frozen=True)
class ClaimKind:
    kind: str
    rules: str  # who makes the claim, for the docs
    confirms: str  # run evidence that confirms it
    refutes: str  # run evidence that refutes it (the claim is then info, with the number)
    module: str  # where the check lives
    matches: Callable[[Finding, str | None], bool]
    check: Check


def _claimed(kind: str) -> Callable[[Finding, str | None], bool]:
    return lambda f, k: k == kind


def _static(rule: str) -> Callable[[Finding, str | None], bool]:
    return lambda f, k: f.rule == rule and f.source == "static"


def _simulated(rule: str) -> Callable[[Finding, str | None], bool]:
    return lambda f, k: f.rule == rule and f.source == "simulation"


def _cost(category: str) -> Callable[[Finding, str | None], bool]:
    return lambda f, k: f.source == "cost-model" and f.category == category


CLAIMS: tuple[ClaimKind, ...] = (
    ClaimKind("tail-dropped", "NKI203, MIG101 (evidence claim.kind)",
              "a ragged size leaves output elements unwritten, or fails while the aligned sizes pass",
              "every ragged size passes with every element written (the tail is handled), or an aligned size "
              "fails the same way (another cause)",
              "review/claims/tail.py", _claimed("tail-dropped"),
              lambda ctx, f, c, fs, p: check_tail(ctx, f, c)),
    ClaimKind("output-wrong", "MIG110, MIG102 (missing scale or epilogue), NKI207 (evidence claim.kind)",
              "a numerics finding names it as its cause (attribution)",
              "every size of the spec ran and passes; a missing scale: any size passes (a constant factor would "
              "fail every size)",
              "review/claims/output.py", _claimed("output-wrong"),
              lambda ctx, f, c, fs, p: check_output_wrong(ctx, f, c)),
    ClaimKind("input-unused", "NKI202, MIG103 (evidence claim.kind)",
              "a numerics finding names it as its cause",
              "a CUDA scalar the port bakes in: every size passes (the constant is the reference's value)",
              "review/claims/inputs.py", _claimed("input-unused"),
              lambda ctx, f, c, fs, p: check_input_unused(ctx, f, c)),
    ClaimKind("operand-dtype", "MIG111 (evidence claim.kind)",
              "the port spec declares an operand fp32",
              "the port spec declares every operand's dtype and none is fp32 (the claim is dropped)",
              "review/claims/dtype.py", _claimed("operand-dtype"),
              lambda ctx, f, c, fs, p: check_operand_dtype(ctx, f, c)),
    ClaimKind("exp-overflow", "NKI402",
              "the exp argument reached the fp32 (or output dtype) overflow on a size; a running sum projected "
              "past it at 2x the largest size",
              "as the cause of a failure: the argument stayed below the overflow on every size (the margin)",
              "review/ranges.py", _static("NKI402"),
              lambda ctx, f, c, fs, p: ctx.ranges.exp(f, fs)),
    ClaimKind("activation-range", "NKI404",
              "arguments outside the ScalarE valid range were reached (the count)",
              "every argument stayed inside the range (measured, the static severity stays)",
              "review/ranges.py", _static("NKI404"),
              lambda ctx, f, c, fs, p: ctx.ranges.activation(f)),
    ClaimKind("output-unwritten", "SIM112 on the output's allocation (the drafted text: memory not initialized, "
              "round the trip count up)",
              "no store into the unwritten region ran (the finding stays at the allocation)",
              "a store into that output ran and moved 0 bytes: the finding moves to that store line, with the "
              "empty region",
              "review/claims/unwritten.py", _simulated("SIM112"),
              lambda ctx, f, c, fs, p: check_unwritten(ctx, f)),
    ClaimKind("partition-underuse", "PERF103 (cost model)",
              "-",
              "the narrow instructions are the ragged tail tile of the size estimated",
              "review/claims/cost.py", _cost("partition-underutilized"),
              lambda ctx, f, c, fs, p: check_ragged_underuse(ctx, f, p)),
    ClaimKind("small-dma", "PERF102 (cost model)",
              "-",
              "every small transfer moves whole rows of a tensor whose HBM rows are shorter than the threshold",
              "review/claims/cost.py", _cost("small-dma"),
              lambda ctx, f, c, fs, p: check_layout_limited_dma(ctx, f, p)),
)


def claim_kind(f: Finding) -> ClaimKind | None:
    """The table row that checks `f` (None: it makes no claim about the run)."""
    claim = f.evidence.get("claim") if f.source in ("static", "migration") else None
    kind = claim.get("kind") if isinstance(claim, dict) else None
    return next((c for c in CLAIMS if c.matches(f, kind)), None)


def check(ctx: RunContext, f: Finding, findings: list[Finding], perf_size: str | None) -> Finding | None:
    row = claim_kind(f)
    if row is None:
        return f
    claim = f.evidence.get("claim")
    return row.check(ctx, f, claim if isinstance(claim, dict) else {}, findings, perf_size)


def claims_markdown() -> str:
    """The table as docs/feedback.md shows it (between its claims-table markers)."""
    rows = ["| claim kind | made by | confirmed by | refuted by (then info, with the number) | check |",
            "|---|---|---|---|---|"]
    rows += [f"| `{c.kind}` | {c.rules} | {c.confirms} | {c.refutes} | `nki_assist/{c.module}` |" for c in CLAIMS]
    return "\n".join(rows)
