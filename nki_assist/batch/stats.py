"""Across submissions: verdict and rubric-score distributions, the most frequent findings, the fastest correct
submissions. Plain data (the HTML page and `report-batch --format json|text` show it)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .rows import VERDICT_ORDER, grade_key


def summarize(rows: list[dict], top: int = 15) -> dict[str, Any]:
    ok = [r for r in rows if r.get("status") == "ok"]
    verdicts = Counter(r.get("verdict") for r in ok)
    criteria = sorted({k for r in ok for k in r if k.startswith("rubric.")})
    rubric = {}
    for c in criteria:
        scores = [r[c] for r in ok if isinstance(r.get(c), (int, float))]
        rubric[c.removeprefix("rubric.")] = {
            "counts": {str(s): scores.count(s) for s in sorted(set(scores))},
            "mean": round(sum(scores) / len(scores), 3) if scores else None}
    rules: Counter[str] = Counter()
    for r in ok:
        rules.update(set(r.get("rules") or []))
    frequent = [{"rule": key.split(":", 1)[0], "name": key.split(":", 1)[1] if ":" in key else "",
                 "submissions": n} for key, n in sorted(rules.items(), key=lambda kv: (-kv[1], kv[0]))[:top]]
    correct = sorted((r for r in ok if r.get("correct") and isinstance(r.get("est_time_us"), (int, float))),
                     key=lambda r: (r["est_time_us"], r["id"]))
    return {
        "submissions": len(rows),
        "status": dict(Counter(r.get("status") for r in rows)),
        "verdicts": {v: verdicts[v] for v in sorted(verdicts, key=lambda v: VERDICT_ORDER.get(v, 9))},
        "correct": sum(1 for r in ok if r.get("correct")),
        "rubric": rubric,
        "frequent_findings": frequent,
        "fastest_correct": [{"id": r["id"], "est_time_us": r["est_time_us"], "est_size": r.get("est_size"),
                             "verdict": r.get("verdict")} for r in correct[:top]],
        "ranking": [r["id"] for r in sorted(rows, key=grade_key)],
    }


def summary_text(s: dict[str, Any]) -> str:
    lines = [f"{s['submissions']} submissions; status: "
             + ", ".join(f"{k} {v}" for k, v in s["status"].items()) + f"; correct {s['correct']}",
             "verdicts: " + (", ".join(f"{k} {v}" for k, v in s["verdicts"].items()) or "none")]
    for c, d in s["rubric"].items():
        lines.append(f"rubric {c}: mean {d['mean']} (" + ", ".join(f"{k}: {v}" for k, v in d["counts"].items()) + ")")
    if s["frequent_findings"]:
        lines.append("most frequent findings: " + ", ".join(
            f"{f['rule']} {f['name']} ({f['submissions']})" for f in s["frequent_findings"][:8]))
    if s["fastest_correct"]:
        lines.append("fastest correct: " + ", ".join(
            f"{f['id']} {f['est_time_us']:.3g} us" for f in s["fastest_correct"][:5]))
    lines.append("ranking: " + ", ".join(s["ranking"][:10]) + (" ..." if len(s["ranking"]) > 10 else ""))
    return "\n".join(lines) + "\n"
