"""Evidence reconciliation: static and migration claims about runtime behaviour, checked against the run.

One stage of the review, after every check and before drafting. Each finding that predicts what happens at
run time (a claim: `evidence["claim"]`, NKI402/NKI404's value ranges, two cost-model estimates) is checked by
its kind; the kinds, the evidence that confirms and refutes each, and the checks are in review/claims/
(claims/table.py holds the table). This module runs them and links what they confirm.

The claim is evaluated on every size of the port spec that ran. A claim the run contradicts is demoted
to info (or dropped, when its premise is false) and says which evidence contradicts it; a claim the run
confirms is promoted to the severity of the numerics finding that shows it and linked to it as the root
cause (evidence["root_cause"], evidence["root_cause_lead"]), unless the run's own numbers refute it as the
cause (claims/refute.py: then it is demoted with the number instead). Input dtypes declared by the port spec
override the ones inferred from the CUDA declarations.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from ..findings import Finding, Severity
from .claims.evidence import RunContext, kernel_params, shape_symbols  # noqa: F401 (tests read them here)
from .claims.evidence import confirm as _confirm
from .claims.evidence import contradict as _contradict
from .claims.evidence import status as _status
from .claims.refute import refuted_cause
from .claims.table import check as _check_claim
from .claims.unwritten import follow_relocated


def _same_file(a: str | None, b: str | None) -> bool:
    return bool(a and b) and PurePath(a).name == PurePath(b).name


def _named_elsewhere(nf: Finding, findings: list[Finding]) -> int | None:
    """A cause another numerics finding of the file names at its own line (a partly written output the
    simulator saw), when it stands: the cause of this failure too, once the one named here is refuted."""
    for k, g in enumerate(findings):
        if g.source == "numerics" or not _same_file(g.file, nf.file) or _status(g) in ("contradicted", "untested"):
            continue
        if any(o is not nf and o.source == "numerics" and o.evidence.get("cause_rule") == g.rule and o.line == g.line
               and _same_file(o.file, g.file) for o in findings):
            return k
    return None


def _reanchor(nf: Finding, old: Finding | None, findings: list[Finding],
              refuted: bool = False) -> tuple[Finding, int | None]:
    """The attribution named a cause the run did not bear out (its claim untested or contradicted on the
    spec's sizes): point the numerics finding at a finding of the same category the run confirmed instead;
    when the run refuted the named cause, at a cause another numerics finding names, else at none."""
    j = next((k for k, g in enumerate(findings) if _status(g) == "confirmed" and g.category == nf.category
              and g.source in ("static", "migration") and _same_file(g.file, nf.file)), None)
    if j is None and refuted:
        j = _named_elsewhere(nf, findings)
    if j is None:
        if refuted and old is not None:  # the text no longer names a cause the run refutes
            msg = nf.message.replace(f", consistent with {old.rule} {old.name} at line {old.line}",
                                     f"; {old.rule} at line {old.line} is not its cause (the run refutes it)")
            ev = {k: v for k, v in nf.evidence.items() if k != "cause_rule"}
            return nf.model_copy(update={"message": msg, "evidence": {**ev, "cause_refuted": old.rule}}), None
        return nf, None
    new = findings[j]
    msg = nf.message if old is None else nf.message.replace(f"{old.rule} {old.name} at line {old.line}",
                                                            f"{new.rule} {new.name} at line {new.line}")
    return nf.model_copy(update={"line": new.line, "end_line": new.end_line, "column": new.column, "message": msg,
                                 "fix": new.fix or nf.fix, "evidence": {**nf.evidence, "cause_rule": new.rule}}), j


def _link_causes(findings: list[Finding]) -> list[Finding]:
    """A numerics finding that names its cause (evidence["cause_rule"] at its line) confirms that finding:
    the cause is promoted to the numerics severity and both share one root cause, the cause leading."""
    out = list(findings)
    for i, nf in enumerate(out):
        rule = nf.evidence.get("cause_rule")
        if nf.source != "numerics" or not rule or nf.severity is Severity.INFO:
            continue
        j = next((k for k, f in enumerate(out) if f.rule == rule and f.line == nf.line and f.source != "numerics"
                  and _same_file(f.file, nf.file)), None)
        refuted = refuted_cause(out[j]) if j is not None and out[j].source in ("static", "migration") else None
        if refuted is not None:  # named as the cause, but the run's own numbers say otherwise: demoted
            out[j] = _contradict(out[j], refuted[0], refuted[1], fix=_refuted_fix(out[j], nf))
        if j is None or _status(out[j]) in ("contradicted", "untested"):
            nf, j = _reanchor(nf, out[j] if j is not None else None, out, refuted is not None)
            out[i] = nf
            if j is None:
                continue
        f = out[j]
        root = f.evidence.get("root_cause") or nf.evidence.get("root_cause") or f"cause:{f.rule}:{f.line}"
        out[i] = nf.model_copy(update={"evidence": {**nf.evidence, "root_cause": root}})
        if f.source not in ("static", "migration"):  # a simulator finding is run evidence itself: link only
            out[j] = f.model_copy(update={"evidence": {**f.evidence, "root_cause": root}})
            continue
        if _status(f) != "confirmed":
            out[j] = _confirm(f, f"{nf.rule} ({nf.name}) shows it: {nf.message}", [], nf.severity, root)
        else:
            out[j] = f.model_copy(update={"evidence": {**f.evidence, "root_cause": root}})
        # the same mistake elsewhere in the file (a tail tile repeating the main loop's exp) is the same defect
        for m, g in enumerate(out):
            if m != j and g.rule == f.rule and _same_file(g.file, f.file) and g.category == f.category \
                    and not g.evidence.get("reconciled") and g.source != "numerics" and refuted_cause(g) is None:
                out[m] = _confirm(g, f"the same defect as line {f.line}, which {nf.rule} confirms", [],
                                  out[j].severity, root)
    return out


def _refuted_fix(f: Finding, nf: Finding) -> str:
    keep = f" The pattern itself ({f.name}) may still matter for other inputs: {f.fix}" if f.fix else ""
    return f"Look elsewhere for the cause of {nf.rule}: this line is not it on the sizes tested.{keep}"


def _link_windows(findings: list[Finding]) -> list[Finding]:
    """The cost model's redundant-DMA estimate on a load NKI111 reads as a sliding window is that window's
    price: one item, and the fix is the halo tile rather than a generic hoist."""
    windows = {(PurePath(f.file or "").name, f.line): f for f in findings if f.rule == "NKI111"}
    out = []
    for f in findings:
        w = windows.get((PurePath(f.file or "").name, f.line))
        if w is not None and f.source == "cost-model" and f.category == "redundant-dma":
            root = f"sliding-window:{w.line}"
            f = f.model_copy(update={"fix": w.fix, "evidence": {**f.evidence, "root_cause": root}})
            windows[(PurePath(w.file or "").name, w.line)] = w.model_copy(
                update={"evidence": {**w.evidence, "root_cause": root}})
        out.append(f)
    return [windows.get((PurePath(f.file or "").name, f.line), f) if f.rule == "NKI111" else f for f in out]


def reconcile(findings: list[Finding], *, spec=None, res=None, source: str = "", perf_size: str | None = None,
              notes: list[str] | None = None) -> list[Finding]:
    """Findings with every runtime claim checked against the run (see the module docstring)."""
    notes = notes if notes is not None else []
    if res is None:
        return findings
    ctx = RunContext(spec, res, source, notes)
    out: list[Finding] = []
    for f in findings:
        g = _check_claim(ctx, f, findings, perf_size)
        if g is not None:
            out.append(g)
    return _align_dma_advice(_link_windows(_link_overflow(_link_causes(follow_relocated(out)))))


def _link_overflow(findings: list[Finding]) -> list[Finding]:
    """NKI402 the run's value ranges confirmed and the NUM104 its overflow produced: one root cause."""
    roots = {(PurePath(f.file or "").name, f.line): f.evidence["root_cause"] for f in findings
             if f.rule == "NKI402" and _status(f) == "confirmed" and f.evidence.get("run_range")
             and f.evidence.get("root_cause")}
    if not roots:
        return findings
    out = []
    for f in findings:
        if f.rule == "NUM104" and "root_cause" not in f.evidence:
            root = roots.get((PurePath(f.file or "").name, f.line))
            if root is None and f.evidence.get("cause_rule") == "NKI402" and len(roots) == 1:
                root = next(iter(roots.values()))
            if root is not None:
                f = f.model_copy(update={"evidence": {**f.evidence, "root_cause": root}})
        out.append(f)
    return out


def _align_dma_advice(findings: list[Finding]) -> list[Finding]:
    """One verdict per DMA line: when the run shows a line's transfers are capped by its tensor's HBM row length
    (PERF102 contradicted), NKI108 on that line asks for whole rows at most, never for the 2 KiB the rows cannot
    give; a partition-count problem it also names still stands."""
    capped = [f for f in findings if f.rule == "PERF102" and f.evidence.get("layout_limited_lines")]
    if not capped:
        return findings
    out = []
    for f in findings:
        p = next((p for p in capped if f.rule == "NKI108" and _same_file(f.file, p.file)
                  and str(f.line) in p.evidence["layout_limited_lines"]), None)
        if p is None or "bytes_per_partition" not in f.evidence:
            out.append(f)
            continue
        row = p.evidence["layout_limited_lines"][str(f.line)]
        t, rb, mv = row["tensor"], row["row_bytes"], row["moved_bytes"]
        head = re.sub(r"[\d,]+ B per partition \(at most, fp32\)", f"{mv:,} B per partition", f.message.split("; DMA needs")[0])
        cap = f"the run shows `{t}` rows are {rb:,} B in HBM, and a descriptor cannot span two rows"
        grow = mv < rb
        api = head.split("`")[1] if head.count("`") >= 2 else ""
        verb = "Store" if "store" in api or row.get("direction") == "store" else "Load"
        parts = "partitions" in f.evidence
        verdict = (f"{head}. {cap[0].upper() + cap[1:]}: this transfer can grow to whole rows ({rb:,} B per partition, "
                   f"{rb / max(mv, 1):.0f}x what it moves) but no further"
                   if grow else f"{head}. {cap[0].upper() + cap[1:]}: it already moves whole rows")
        verdict += ("; the partition count is the kernel's to fix." if parts else
                    "." if grow else "; only a producer-side HBM layout with longer rows would help.")
        fixes = ([f"Load all 128 partitions per DMA."] if parts else []) + (
            [f"{verb} whole `{t}` rows ({rb:,} B) per partition."] if grow else [])
        ev = {**f.evidence, "static_message": f.message,
              "reconciled": {"status": "narrowed", "evidence": cap, "by": p.rule, "row_bytes": rb}}
        upd = {"message": verdict, "evidence": ev,
               "fix": " ".join(fixes) or "Nothing to change in the kernel: only an HBM layout with longer rows "
                                        "(a producer-side change) makes these descriptors longer."}
        if not (parts or grow):
            upd["severity"] = Severity.INFO
        out.append(f.model_copy(update=upd))
    return out
