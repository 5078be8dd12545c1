"""Run the review on every eval case and score it against the gold review.

`llm` modes: "none" (deterministic drafter), "openai" (live, any OpenAI-compatible server),
"replay" (the LLM reply recorded beside the case in `llm_reply.json` is grounding-checked against
the current findings, so LLM-mode quality is tracked offline; a missing or rejected reply falls
back to the deterministic draft, as the live path would).
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..schema import Assessment, Review
from .gold import Gold, GoldError, load_gold
from .metrics import CaseScore, score_case, summarize

REPLY_FILE = "llm_reply.json"
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


def _sources(review: Review, base: Path) -> dict[str, str]:
    out = {}
    for rel in (review.port.nki, review.port.cuda):
        if rel and (base / rel).is_file():
            out[rel] = (base / rel).read_text(encoding="utf-8", errors="replace")
    return out


def replay_assessment(review: Review, case_dir: Path) -> Assessment:
    """The recorded LLM reply if it passes the grounding check on today's findings, else the fallback."""
    from ..feedback import load_rubric
    from ..feedback.drafter import draft
    from ..feedback.grounding import Context, validate
    from ..feedback.reply import AssessmentReply, to_assessment
    from ..hardware import get_target
    from ..schema import LlmMeta
    from .. import taxonomy

    rubric = load_rubric(None)
    target = get_target(review.port.target)
    meta = LlmMeta(model="replay")
    path = case_dir / REPLY_FILE
    reason, violations = None, []
    if not path.is_file():
        reason = f"no recorded reply ({REPLY_FILE})"
    else:
        try:
            reply = AssessmentReply.model_validate_json(path.read_text(encoding="utf-8"))
            violations = validate(reply, Context(review, target, _sources(review, case_dir), rubric))
            if not violations:
                a = to_assessment(reply, list(taxonomy.CRITERIA_ORDER))
                a.llm = meta
                return a
            reason = f"recorded reply failed the grounding check ({len(violations)} problem(s))"
        except ValueError as exc:
            reason = f"recorded reply is not a valid assessment: {str(exc).splitlines()[0]}"
    a = draft(review, rubric, target).model_copy(update={"drafter": "fallback"})
    meta.fallback_reason, meta.violations = reason, violations
    a.llm = meta
    return a


def record_reply(review: Review, case_dir: Path) -> bool:
    """Save a live LLM assessment as the case's replay reply (only when it passed grounding)."""
    from ..feedback.reply import from_assessment

    a = review.assessment
    if a is None or a.drafter != "llm":
        return False
    sev = {f.id: f.severity.value for f in review.findings}
    from ..redact import redact

    text = redact(from_assessment(a, sev).model_dump_json(indent=2))  # a server may echo the API key
    (case_dir / REPLY_FILE).write_text(text + "\n", encoding="utf-8")
    return True


def run_case(case: Case, *, llm: str = "none", model: str | None = None, base_url: str | None = None,
             record: bool = False, rubric_criteria: list[str] | None = None, timeout_s: float = 60.0) -> tuple[CaseScore, dict[str, Any]]:
    """Review one case and score it; a failing review is a scored case with `error`, never an exception."""
    from ..review import ReviewOptions, review_port

    t0 = time.perf_counter()
    opts = ReviewOptions(llm="openai" if llm == "openai" else "none", model=model, base_url=base_url,
                         plots=False, timeout_s=timeout_s)
    try:
        review = review_port(str(case.spec), opts).review
        if llm == "replay":
            review.assessment = replay_assessment(review, case.dir)
        elif llm == "openai" and record:
            record_reply(review, case.dir)
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
    return score, record_row


def run_suite(cases_dir: str | Path, *, llm: str = "none", model: str | None = None, base_url: str | None = None,
              record: bool = False, only: list[str] | None = None, jobs: int = 2,
              progress: Callable[[str], None] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]], list[str]]:
    """(summary, per-case records, problems). Cases run `jobs` at a time (their kernels run in child processes)."""
    from ..feedback import load_rubric

    if llm not in LLM_MODES:
        raise ValueError(f"unknown llm mode {llm!r}; choose one of {', '.join(LLM_MODES)}")
    t0 = time.perf_counter()
    cases, problems = discover(cases_dir, only)
    criteria = [c.id for c in load_rubric(None).scored()]
    results: dict[str, tuple[CaseScore, dict]] = {}

    def one(case: Case):
        res = run_case(case, llm=llm, model=model, base_url=base_url, record=record, rubric_criteria=criteria)
        if progress:
            progress(case.id)
        return case.id, res

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for cid, res in pool.map(one, cases):
            results[cid] = res
    scores = [results[c.id][0] for c in cases]
    summary = summarize(scores, seconds=time.perf_counter() - t0)
    summary["llm"] = llm
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
            "clean_false_positives", "hallucinations", "grounding_rate", "kendall_tau", "ndcg_at_5",
            "rubric_coverage", "seconds"]
    lines = [f"# nki-assist eval ({summary.get('llm', 'none')})", "", "| metric | value |", "|---|---|"]
    lines += [f"| {k} | {summary.get(k)} |" for k in keys]
    lines += ["", "| case | gold | emitted | matched | precision | recall | critical | FP (clean) | verdict | s |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for c in summary["per_case"]:
        def f(x):
            return "-" if x is None else f"{x:.2f}" if isinstance(x, float) else str(x)
        lines.append(f"| {c['case']} | {c['gold']} | {c['emitted']} | {c['matched_gold']} | {f(c['precision'])} | "
                     f"{f(c['recall'])} | {c['critical_matched']}/{c['critical']} | {c['clean_false_positives']} | "
                     f"{c['verdict']} | {c['seconds']} |")
    missed = [(c["case"], m) for c in summary["per_case"] for m in c["missed"]]
    fps = [(c["case"], m) for c in summary["per_case"] for m in c["false_positives"]]
    if missed:
        lines += ["", "## Missed gold issues", ""] + [f"- {c}: {m}" for c, m in missed]
    if fps:
        lines += ["", "## Unmatched findings (false positives)", ""] + [f"- {c}: {m}" for c, m in fps]
    return "\n".join(lines) + "\n"
