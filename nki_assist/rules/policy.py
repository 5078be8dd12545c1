"""The severity policy (issue 41): what each severity claims, and which severities each kind of rule may give.

error    the kernel fails (does not compile or run) or computes wrong results at the target, by an argument the
         message states.
warning  a probable defect a reviewer would ask to change.
info     everything else: performance observations, advice, expected differences, tool limits, and a defect's
         cases the check proves harmless or documented.

A performance observation is info unless the cost model (or a measured profile) says that very cost bounds the
kernel, and then the finding carries the estimated gain (`est_speedup`, and the factor in its message). A dtype the
kernel chooses on purpose (fp32 inputs, fp32 accumulators feeding fp32 outputs) is therefore never a warning.

Each RuleSpec names its kind (`policy`; derived from its category and default severity when left empty) and the
severities its checks give besides the default (`emits`); its docs page states both, and
tests/rules/test_severity_policy.py checks every rule, and every finding the fixtures and public corpora draw,
against this table.
"""

from __future__ import annotations

from ..severity import Severity

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

# kind -> (severities it may give, the sentence its docs page states)
KINDS: dict[str, tuple[frozenset[Severity], str]] = {
    "failure": (frozenset({E, W, I}),
                "`error` when the kernel fails (compile, run) or computes wrong results at the target, by the argument "
                "the message states; `warning` where that argument rests on something the check cannot see (a size, "
                "version or caller it does not know); `info` for the cases it proves harmless."),
    "defect": (frozenset({W, I}),
               "`warning` for a probable defect a reviewer would ask to change; `info` where the code shows the choice "
               "is deliberate or harmless. Never `error`: the kernel does not fail by this alone."),
    "performance": (frozenset({W, I}),
                    "`info`: a performance observation; a static check cannot tell that this cost bounds the kernel. "
                    "`warning` only in a review whose cost model (PERF rules) estimates that this very line or "
                    "category bounds the kernel: the finding then carries the estimated gain (`est_speedup` and the "
                    "factor in its message)."),
    "bound": (frozenset({W, I}),
              "`warning` only when the cost model or a measured profile says this cost bounds the kernel, with the "
              "estimated gain (`est_speedup`) or the measured share in the message; `info` otherwise."),
    "note": (frozenset({I}),
             "`info`: advice, an expected difference or a tool limit; never a defect by itself."),
    "hygiene": (frozenset({W, I}),
                "`warning` when a suppression, configuration or tool run no longer matches the code and someone must "
                "act (remove the comment, fix the spec, re-run); `info` for what needs no action."),
}

# Categories whose findings are costs, not wrong results (the hardware-utilization criterion and the
# memory-hierarchy categories about traffic rather than capacity).
PERFORMANCE_CATEGORIES = frozenset({
    "tensor-engine-underutilized", "partition-underutilized", "fp32-matmul", "instruction-overhead",
    "engine-imbalance", "transpose-overhead", "redundant-dma", "small-dma", "dma-transpose", "strided-access",
})
MEASURED_SOURCES = ("cost-model", "profile")


def default_kind(category: str, criterion: str, severity: Severity, source: str) -> str:
    if category in PERFORMANCE_CATEGORIES:
        return "bound" if source in MEASURED_SOURCES else "performance"
    if criterion == "review-hygiene":
        return "hygiene"
    return {E: "failure", W: "defect", I: "note"}[severity]


def allowed(kind: str) -> frozenset[Severity]:
    return KINDS[kind][0]


def statement(kind: str) -> str:
    return KINDS[kind][1]


def finding_problem(kind: str, severity: Severity, est_speedup: float | None, evidence: dict,
                    message: str) -> str | None:
    """Why a finding breaks its rule's policy, or None."""
    if severity not in allowed(kind):
        return f"{severity.value} is not allowed for a {kind} rule"
    if kind in ("bound", "performance") and severity is W:
        measured = isinstance(evidence, dict) and evidence.get("measured")
        if not measured and (est_speedup is None or not any(ch.isdigit() for ch in message)):
            return "a performance warning must carry the estimated gain (est_speedup and the factor in its message)"
    return None
