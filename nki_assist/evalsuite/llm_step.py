"""What a live model did in `nki-assist eval --llm openai`: the LLM step's own table (issue 42).

Per case, from the assessment's `llm` metadata: how the server was asked (mode), whether the first reply
passed the grounding check (accepted), needed the repair round (repaired) or was replaced by the
deterministic draft (fallback, with why), the violation kinds of every reply, tokens and latency. Over
the suite: those counts, the top violation kinds, and how many replies the grounding check rejected for
citing a finding that does not exist or a number or line no finding holds.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

# violation kinds that mean "the reply made something up" (grounding.KINDS)
INVENTED = ("unknown-id", "number", "line")


def outcome(meta: dict[str, Any], drafter: str | None) -> str:
    if drafter == "llm":
        return "repaired" if meta.get("violations") else "accepted"
    reason = meta.get("fallback_reason") or ""
    return "fallback (grounding)" if "grounding check" in reason or meta.get("violations") else "fallback (protocol)"


def summarize_llm_step(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The suite's LLM-step summary from results.jsonl records (those with `llm` metadata)."""
    rows, kinds, invented = [], Counter(), 0
    for r in records:
        meta = r.get("llm")
        if not meta:
            continue
        replies = meta.get("reply_kinds") or []
        vk = Counter(k for reply in replies for k in reply)
        kinds.update(vk)
        invented += sum(1 for reply in replies if any(k in INVENTED for k in reply))
        drafter = (r.get("score") or {}).get("drafter")
        rows.append({"case": r["case"], "outcome": outcome(meta, drafter), "mode": meta.get("mode"),
                     "attempts": meta.get("attempts"), "compact": meta.get("compact_prompt", False),
                     "prompt_tokens": meta.get("prompt_tokens"), "completion_tokens": meta.get("completion_tokens"),
                     "seconds": meta.get("seconds"), "replies": len(replies), "kinds": dict(vk),
                     "fallback_reason": meta.get("fallback_reason")})
    counts = Counter(row["outcome"] for row in rows)
    done = [row for row in rows if row["seconds"] is not None]
    return {
        "cases": len(rows),
        "replies": sum(row["replies"] for row in rows),
        "accepted": counts["accepted"],
        "repaired": counts["repaired"],
        "fallback_grounding": counts["fallback (grounding)"],
        "fallback_protocol": counts["fallback (protocol)"],
        "replies_citing_invented": invented,
        "top_violation_kinds": kinds.most_common(5),
        "prompt_tokens": sum(row["prompt_tokens"] or 0 for row in rows),
        "completion_tokens": sum(row["completion_tokens"] or 0 for row in rows),
        "seconds": round(sum(row["seconds"] for row in done), 1),
        "rows": rows,
    }


def render_llm_step(step: dict[str, Any]) -> list[str]:
    """Markdown lines of the LLM-step section."""
    kinds = ", ".join(f"{k} {n}" for k, n in step["top_violation_kinds"]) or "none"
    lines = ["", "## The LLM step", "",
             f"{step['cases']} cases: {step['accepted']} accepted by grounding as first written, {step['repaired']} "
             f"after the repair round, {step['fallback_grounding']} rejected by grounding (deterministic draft "
             f"scored), {step['fallback_protocol']} protocol fallbacks. Top violation kinds: {kinds}. Replies "
             f"grounding rejected for citing a non-existent finding, number or line: "
             f"{step['replies_citing_invented']} of {step['replies']}. Tokens: {step['prompt_tokens']} prompt, "
             f"{step['completion_tokens']} completion; LLM time {step['seconds']} s.", "",
             "| case | outcome | mode | attempts | compact | prompt tok | completion tok | s | violation kinds |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in step["rows"]:
        vk = ", ".join(f"{k} {n}" for k, n in sorted(row["kinds"].items(), key=lambda kv: -kv[1])) or "-"
        lines.append(f"| {row['case']} | {row['outcome']} | {row['mode']} | {row['attempts']} | "
                     f"{'yes' if row['compact'] else 'no'} | {row['prompt_tokens']} | {row['completion_tokens']} | "
                     f"{row['seconds']} | {vk} |")
    return lines
