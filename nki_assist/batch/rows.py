"""One results-table row per submission, read from its review's JSON (the same on every runner)."""

from __future__ import annotations

from typing import Any

# A status other than "ok" means the review did not finish; the row says why and the batch goes on.
STATUSES = ("ok", "spec-error", "error", "timeout", "out-of-memory", "crashed")
VERDICT_ORDER = {"approve": 0, "approve-with-nits": 1, "revise": 2, "block": 3, "incomplete": 4}
FIXED = ["id", "status", "verdict", "correct", "rank", "score_total", "errors", "warnings", "infos", "top_rule",
         "top_file", "top_line", "top_message", "est_time_us", "est_size", "wall_s", "review", "message",
         "spec", "key"]
TIMING = ("wall_s",)  # differs run to run; everything else is a function of the inputs


def _numerics(review: dict) -> dict[str, str]:
    """Per size: pass / fail (trainium scenario against the reference), error (the kernel gave no output: it
    raised, crashed or timed out), or not-run."""
    num = review.get("numerics") or {}
    out = {}
    for size in num.get("sizes") or []:
        name = size.get("name")
        rows = [m for m in num.get("matrix") or [] if m.get("size") == name
                and m.get("scenario") == "trainium" and m.get("against") == "reference"]
        if not rows:
            out[f"numerics.{name}"] = "not-run"
        elif all(m.get("passed") for m in rows):
            out[f"numerics.{name}"] = "pass"
        else:
            out[f"numerics.{name}"] = "error" if all(m.get("max_abs") is None for m in rows) else "fail"
    return out


def row_from_review(ident: str, review: dict, *, wall_s: float, review_path: str, spec: str, key: str) -> dict:
    findings = review.get("findings") or []
    sev = [f.get("severity") for f in findings]
    top = findings[0] if findings else {}
    a = review.get("assessment") or {}
    rubric = {f"rubric.{r['criterion']}": r.get("score") for r in a.get("rubric") or []}
    perf = review.get("performance") or {}
    numerics = _numerics(review)
    row: dict[str, Any] = {
        "id": ident, "status": "ok", "verdict": a.get("verdict"),
        "score_total": sum(v for v in rubric.values() if isinstance(v, (int, float))) if rubric else None,
        "errors": sev.count("error"), "warnings": sev.count("warning"), "infos": sev.count("info"),
        "top_rule": top.get("rule"), "top_name": top.get("name"), "top_file": top.get("file"),
        "top_line": top.get("line"), "top_message": top.get("message"),
        "est_time_us": perf.get("estimated_time_us"), "est_size": perf.get("size"),
        "wall_s": round(wall_s, 3), "review": review_path, "message": None, "spec": spec, "key": key,
        "rules": sorted({f"{f.get('rule')}:{f.get('name')}" for f in findings if f.get("rule")}),
        **rubric, **numerics,
        **{f"est_us.{k}": v for k, v in (perf.get("per_size_us") or {}).items()},
    }
    row["correct"] = bool(numerics) and all(v == "pass" for v in numerics.values()) and row["errors"] == 0
    return row


def failed_row(ident: str, status: str, message: str, *, wall_s: float, spec: str, key: str) -> dict:
    return {"id": ident, "status": status, "verdict": None, "correct": False, "score_total": None, "errors": None,
            "warnings": None, "infos": None, "top_rule": None, "top_name": None, "top_file": None,
            "top_line": None, "top_message": None, "est_time_us": None, "est_size": None,
            "wall_s": round(wall_s, 3), "review": None, "message": message[:500], "spec": spec, "key": key,
            "rules": []}


def grade_key(row: dict):
    """How a grader orders submissions: finished and correct first (the fastest estimate first among them), then
    sizes whose numerics pass, sizes whose kernel gave no output, error findings, verdict, rubric total."""
    est = row.get("est_time_us")
    sizes = [v for k, v in row.items() if k.startswith("numerics.")]
    return (row.get("status") != "ok", not row.get("correct"), -sizes.count("pass"), sizes.count("error"),
            row.get("errors") or 0, VERDICT_ORDER.get(row.get("verdict"), 9), -(row.get("score_total") or 0),
            est if isinstance(est, (int, float)) else float("inf"), row["id"])


def ranked(rows: list[dict]) -> list[dict]:
    """The rows with `rank` set (1 = best), in their original order."""
    for i, row in enumerate(sorted(rows, key=grade_key), 1):
        row["rank"] = i
    return rows


def columns(rows: list[dict]) -> list[str]:
    dynamic: list[str] = []
    for row in rows:
        for k in row:
            if k.startswith(("rubric.", "numerics.", "est_us.")) and k not in dynamic:
                dynamic.append(k)
    rubric = [k for k in dynamic if k.startswith("rubric.")]
    numerics = [k for k in dynamic if k.startswith("numerics.")]
    per_size = [k for k in dynamic if k.startswith("est_us.")]
    head = FIXED[: FIXED.index("score_total") + 1]
    at = FIXED.index("est_size") + 1
    return head + rubric + FIXED[len(head): FIXED.index("est_time_us")] + numerics + FIXED[FIXED.index("est_time_us"):at] + per_size + FIXED[at:]
