"""Run the review on every eval case and score it against the gold review.

`llm` modes: "none" (deterministic drafter), "openai" (live, any OpenAI-compatible server),
"replay" (a reply recorded beside the case, of the kind `replies` names, is freshness- and
grounding-checked against the current findings, so LLM-mode quality is tracked offline; a missing,
stale or rejected reply falls back to the deterministic draft, as the live path would; replies.py).
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..schema import Review
from .gold import Gold, GoldError, load_gold
from .llm_step import render_llm_step, summarize_llm_step
from .metrics import CaseScore, score_case, summarize
from .replies import KINDS as REPLY_KINDS
from .replies import record_live, record_mechanical, replay_assessment

from ..review import ReviewOptions, review_port
from ..toolchain.sandbox import warm_sandbox
from ..feedback import load_rubric

LLM_MODES = ("none", "openai", "replay")


@dataclass
class Case:
    id: str
    dir: Path
    gold: Gold

    @property
    def spec(self) -> Path:
        return self.dir / self.gold.case.port


def discover(cases_dir: str | Path, only: list[str] | None = None) -> tuple[list[Case], list[str]]:
    """Cases (folders with a gold.toml) in name order, and the problems of those that cannot load."""
    root = Path(cases_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such directory")
    cases, problems = [], []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        if only and d.name not in only:
            continue
        if not (d / "gold.toml").is_file():
            continue
        try:
            cases.append(Case(d.name, d, load_gold(d / "gold.toml")))
        except GoldError as exc:
            problems.append(str(exc))
    return cases, problems


def run_case(case: Case, *, llm: str = "none", model: str | None = None, base_url: str | None = None,
             record: bool = False, replies: str = "recorded", rubric_criteria: list[str] | None = None,
             timeout_s: float = 60.0, llm_mode: str = "auto",
             llm_timeout_s: float = 60.0) -> tuple[CaseScore, dict[str, Any]]:
    """Review one case and score it; a failing review is a scored case with `error`, never an exception.

    `record`: with llm="openai" save the grounded live reply; with llm="replay" and replies="mechanical"
    rebuild the mechanical reply from today's findings first (paraphrases are written by hand)."""

    t0 = time.perf_counter()
    opts = ReviewOptions(llm="openai" if llm == "openai" else "none", model=model, base_url=base_url,
                         plots=False, timeout_s=timeout_s, llm_mode=llm_mode, llm_timeout_s=llm_timeout_s)
    try:
        review = review_port(str(case.spec), opts).review
        if llm == "replay":
            if record and replies == "mechanical":
                record_mechanical(review, case.dir)
            review.assessment = replay_assessment(review, case.dir, replies)
        elif llm == "openai" and record:
            record_live(review, case.dir)
    except Exception as exc:  # the suite goes on; the case scores zero recall
        review = Review.model_validate({"port": {"name": case.id}})
        score = score_case(case.id, case.gold, review, rubric_criteria=rubric_criteria, seconds=time.perf_counter() - t0)
        score.error = f"{type(exc).__name__}: {exc}"
        return score, {"case": case.id, "error": score.error}
    seconds = time.perf_counter() - t0
    score = score_case(case.id, case.gold, review, rubric_criteria=rubric_criteria, seconds=seconds)
    record_row = {"case": case.id, "score": score.to_json(),
                  "findings": [f"{f.id} {f.severity.value} {f.rule} {f.category} {f.file}:{f.line}" for f in review.findings],
                  "verdict": review.assessment.verdict if review.assessment else None}
    if review.assessment is not None and review.assessment.llm is not None:
        record_row["llm"] = review.assessment.llm.model_dump(mode="json")
    return score, record_row


def run_suite(cases_dir: str | Path, *, llm: str = "none", model: str | None = None, base_url: str | None = None,
              record: bool = False, replies: str = "recorded", only: list[str] | None = None, jobs: int = 2,
              progress: Callable[[str], None] | None = None, llm_mode: str = "auto",
              llm_timeout_s: float = 60.0) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """(summary, per-case records, problems). Cases run `jobs` at a time (their kernels run in child processes)."""

    if llm not in LLM_MODES:
        raise ValueError(f"unknown llm mode {llm!r}; choose one of {', '.join(LLM_MODES)}")
    if replies not in REPLY_KINDS:
        raise ValueError(f"unknown reply kind {replies!r}; choose one of {', '.join(REPLY_KINDS)}")
    t0 = time.perf_counter()
    cases, problems = discover(cases_dir, only)
    criteria = [c.id for c in load_rubric(None).scored()]
    results: dict[str, tuple[CaseScore, dict]] = {}

    def one(case: Case):
        res = run_case(case, llm=llm, model=model, base_url=base_url, record=record, replies=replies,
                       rubric_criteria=criteria, llm_mode=llm_mode, llm_timeout_s=llm_timeout_s)
        if progress:
            progress(case.id)
        return case.id, res

    # warm sandbox workers shared by every case (one per concurrent review)
    with warm_sandbox(), ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for cid, res in pool.map(one, cases):
            results[cid] = res
    scores = [results[c.id][0] for c in cases]
    summary = summarize(scores, seconds=time.perf_counter() - t0)
    summary["llm"] = llm
    if llm == "openai":
        summary["llm_step"] = summarize_llm_step([results[c.id][1] for c in cases])
    if llm == "replay":
        summary["replies"] = replies
    summary["problems"] = problems
    return summary, [results[c.id][1] for c in cases], problems


def write_outputs(out_dir: str | Path, summary: dict[str, Any], records: list[dict[str, Any]], markdown: str) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "results.jsonl", out / "summary.json", out / "summary.md"]
    paths[0].write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    paths[1].write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    paths[2].write_text(markdown, encoding="utf-8")
    return paths


# Thresholds gate: a metric below its minimum (or a count above its maximum) fails CI.
def check_thresholds(summary: dict[str, Any], path: str | Path) -> list[str]:
    import tomllib

    data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    failures = []
    for key, minimum in data.get("min", {}).items():
        value = summary.get(key)
        if value is None or value < minimum:
            failures.append(f"{key} = {value} is below the threshold {minimum}")
    for key, maximum in data.get("max", {}).items():
        value = summary.get(key)
        if value is None or value > maximum:
            failures.append(f"{key} = {value} is above the threshold {maximum}")
    return failures


def render_markdown(summary: dict[str, Any]) -> str:
    keys = ["cases", "precision", "recall", "f1", "critical_recall", "severity_weighted_recall", "localisation",
            "line_exact_recall", "clean_false_positives", "hallucinations", "grounding_rate", "kendall_tau", "ndcg_at_5",
            "rubric_coverage", "seconds"]
    keys.insert(keys.index("ndcg_at_5") + 1, "root_cause_first")
    title = f"# nki-assist eval ({summary.get('llm', 'none')})"
    if summary.get("replies"):
        title += f" with {summary['replies']} replies"
    if summary.get("llm", "none") != "none":
        keys += ["llm_drafted", "llm_fallbacks"]
    lines = [title, "", "| metric | value |", "|---|---|"]
    lines += [f"| {k} | {summary.get(k)} |" for k in keys]
    lines += ["", "| case | gold | emitted | matched | precision | recall | critical | FP (clean) | verdict | drafter | s |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in summary["per_case"]:
        def f(x):
            return "-" if x is None else f"{x:.2f}" if isinstance(x, float) else str(x)
        lines.append(f"| {c['case']} | {c['gold']} | {c['emitted']} | {c['matched_gold']} | {f(c['precision'])} | "
                     f"{f(c['recall'])} | {c['critical_matched']}/{c['critical']} | {c['clean_false_positives']} | "
                     f"{c['verdict']} | {c.get('drafter')} | {c['seconds']} |")
    missed = [(c["case"], m) for c in summary["per_case"] for m in c["missed"]]
    fps = [(c["case"], m) for c in summary["per_case"] for m in c["false_positives"]]
    if missed:
        lines += ["", "## Missed gold issues", ""] + [f"- {c}: {m}" for c, m in missed]
    inexact = [(c["case"], m) for c in summary["per_case"] for m in c.get("line_missed", [])]
    if inexact:
        lines += ["", "## Gold issues without a finding inside their line range (line-exact misses)", ""]
        lines += [f"- {c}: {m}" for c, m in inexact]
    if fps:
        lines += ["", "## Unmatched findings (false positives)", ""] + [f"- {c}: {m}" for c, m in fps]
    fallbacks = [(c["case"], c.get("fallback_reason")) for c in summary["per_case"] if c.get("drafter") == "fallback"]
    if fallbacks:
        lines += ["", "## LLM fallbacks (deterministic draft scored instead)", ""]
        lines += [f"- {c}: {r}" for c, r in fallbacks]
    if summary.get("llm_step"):
        lines += render_llm_step(summary["llm_step"])
    return "\n".join(lines) + "\n"
