"""Recorded LLM replies for `nki-assist eval --llm replay`: load, check freshness, grounding-check, save.

Three kinds live beside a case's gold.toml:
  recorded    llm_reply.json             saved from a live model by `eval --llm openai --record`
  mechanical  llm_reply.mechanical.json  one item per finding, what = message, fix = fix (generated:
                                         `eval --llm replay --replies mechanical --record`)
  paraphrase  llm_reply.paraphrase.json  written by us, the way a good model would word the review
A file is `{"schema": SCHEMA, "kind", "written_for": [finding keys], "reply": AssessmentReply}` (a bare
AssessmentReply is accepted too, without the freshness check). `written_for` lists the findings the reply
was written against (id, rule, severity, category, file, line). Before grounding, the reply's ids are
mapped onto today's findings by those keys; when a finding it was written for is gone or changed, or a
new error finding appeared, the reply is stale and the replay falls back with a reason that says how to
re-record it, instead of scoring a reply that no longer describes the review.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..findings import Finding, Severity
from ..schema import Assessment, LlmMeta, Review

from ..feedback.reply import AssessmentReply
from ..infra.redact import redact
from .. import taxonomy
from ..feedback import load_rubric
from ..feedback.drafter import draft
from ..feedback.grounding import Context, validate
from ..feedback.reply import to_assessment
from ..api.hardware import get_target
from ..feedback.reply import from_assessment
from ..feedback.mechanical import mechanical_reply

SCHEMA = "nki-assist/llm-replay@1"
KINDS = ("recorded", "mechanical", "paraphrase")
FILES = {"recorded": "llm_reply.json", "mechanical": "llm_reply.mechanical.json",
         "paraphrase": "llm_reply.paraphrase.json"}
_ID = re.compile(r"\bF\d+\b")


def reply_path(case_dir: Path, kind: str) -> Path:
    if kind not in FILES:
        raise ValueError(f"unknown reply kind {kind!r}; choose one of {', '.join(KINDS)}")
    return Path(case_dir) / FILES[kind]


def how_to_rerecord(kind: str, case_id: str) -> str:
    if kind == "mechanical":
        return f"rebuild it with `nki-assist eval evals/cases --llm replay --replies mechanical --record --case {case_id}`"
    if kind == "paraphrase":
        return (f"edit {FILES[kind]} by hand: `nki-assist review evals/cases/{case_id}/port.toml --format json` shows "
                "today's findings, and `written_for` must list them")
    return f"re-record it with `nki-assist eval evals/cases --llm openai --record --case {case_id}`"


def finding_key(f: Finding) -> dict[str, Any]:
    return {"id": f.id, "rule": f.rule, "severity": f.severity.value, "category": f.category,
            "file": Path(f.file).name if f.file else None, "line": f.line}


def _match_key(k: dict[str, Any]) -> tuple:
    return (k.get("rule"), k.get("severity"), k.get("category"), k.get("file"), k.get("line"))


@dataclass
class Freshness:
    id_map: dict[str, str] = field(default_factory=dict)  # recorded id -> today's id
    gone: list[str] = field(default_factory=list)  # recorded findings with no match today
    new_errors: list[str] = field(default_factory=list)  # today's error findings the reply never saw

    @property
    def stale(self) -> bool:
        return bool(self.gone or self.new_errors)

    def describe(self) -> str:
        parts = []
        if self.gone:
            parts.append("written for finding(s) no longer reported: " + "; ".join(self.gone))
        if self.new_errors:
            parts.append("new error finding(s) it does not cover: " + "; ".join(self.new_errors))
        return ", ".join(parts)


def _show(k: dict[str, Any]) -> str:
    return f"{k.get('id')} {k.get('severity')} {k.get('rule')} {k.get('file')}:{k.get('line')}"


def freshness(written_for: list[dict[str, Any]], findings: list[Finding]) -> Freshness:
    """Map recorded findings onto today's by (rule, severity, category, file, line), in order among equals."""
    today: dict[tuple, list[Finding]] = {}
    for f in findings:
        today.setdefault(_match_key(finding_key(f)), []).append(f)
    out = Freshness()
    used: set[str] = set()
    for k in written_for:
        pool = today.get(_match_key(k), [])
        hit = next((f for f in pool if f.id not in used), None)
        if hit is None:
            out.gone.append(_show(k))
        else:
            used.add(hit.id)
            out.id_map[str(k.get("id"))] = hit.id
    out.new_errors = [_show(finding_key(f)) for f in findings
                      if f.id not in used and f.severity is Severity.ERROR]
    return out


def remap_ids(reply: Any, id_map: dict[str, str]) -> Any:
    """The reply with finding ids (in `finding_ids` and in the text) renamed to today's ids."""
    if all(k == v for k, v in id_map.items()):
        return reply
    data = json.loads(reply.model_dump_json())
    sub = (lambda s: _ID.sub(lambda m: id_map.get(m.group(0), m.group(0)), s))

    def walk(x: Any) -> Any:
        if isinstance(x, str):
            return sub(x)
        if isinstance(x, list):
            return [walk(v) for v in x]
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        return x

    return type(reply).model_validate(walk(data))


def load(path: Path) -> tuple[Any, list[dict[str, Any]] | None]:
    """(AssessmentReply, written_for or None for a bare reply). Raises ValueError on a malformed file."""

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path.name} is not valid JSON: {exc}") from exc
    try:
        if isinstance(data, dict) and "schema" in data:
            if data["schema"] != SCHEMA:
                raise ValueError(f"{path.name}: schema {data['schema']!r} is not {SCHEMA!r}")
            written_for = data.get("written_for")
            if not isinstance(written_for, list):
                raise ValueError(f"{path.name}: `written_for` must be a list of findings")
            return AssessmentReply.model_validate(data.get("reply")), written_for
        return AssessmentReply.model_validate(data), None
    except ValidationError as exc:
        raise ValueError(f"{path.name} is not a valid assessment reply: {str(exc).splitlines()[0]}") from exc


def save(path: Path, kind: str, reply: Any, findings: list[Finding]) -> None:
    doc = {"schema": SCHEMA, "kind": kind, "written_for": [finding_key(f) for f in findings],
           "reply": json.loads(reply.model_dump_json())}

    # A live server may echo the API key into its reply: never store it.
    path.write_text(redact(json.dumps(doc, indent=2, ensure_ascii=False)) + "\n", encoding="utf-8")


def sources_of(review: Review, base: Path) -> dict[str, str]:
    out = {}
    for rel in (review.port.nki, review.port.cuda):
        if rel and (base / rel).is_file():
            out[rel] = (base / rel).read_text(encoding="utf-8", errors="replace")
    return out


def replay_assessment(review: Review, case_dir: Path, kind: str = "recorded") -> Assessment:
    """The recorded reply of `kind` if it is fresh and passes the grounding check on today's findings,
    else the deterministic draft with drafter="fallback" and the reason (as the live path would)."""

    case_dir = Path(case_dir)
    rubric = load_rubric(None)
    target = get_target(review.port.target)
    meta = LlmMeta(model=f"replay:{kind}")
    path = reply_path(case_dir, kind)
    reason, violations = None, []
    if not path.is_file():
        reason = f"no recorded reply ({path.name})"
    else:
        try:
            reply, written_for = load(path)
            if written_for is not None:
                fresh = freshness(written_for, list(review.findings))
                if fresh.stale:
                    reason = (f"{path.name} is stale: {fresh.describe()}; "
                              f"{how_to_rerecord(kind, case_dir.name)}")
                else:
                    reply = remap_ids(reply, fresh.id_map)
            if reason is None:
                violations = validate(reply, Context(review, target, sources_of(review, case_dir), rubric))
                if not violations:
                    a = to_assessment(reply, list(taxonomy.CRITERIA_ORDER))
                    a.llm = meta
                    return a
                reason = (f"{path.name} failed the grounding check ({len(violations)} problem(s)); "
                          f"if the findings changed, {how_to_rerecord(kind, case_dir.name)}")
        except ValueError as exc:
            reason = str(exc)
    a = draft(review, rubric, target).model_copy(update={"drafter": "fallback"})
    meta.fallback_reason, meta.violations = reason, violations
    a.llm = meta
    return a


def record_live(review: Review, case_dir: Path) -> bool:
    """Save a live LLM assessment as the case's recorded reply (only when it passed grounding)."""

    a = review.assessment
    if a is None or a.drafter != "llm":
        return False
    sev = {f.id: f.severity.value for f in review.findings}
    save(reply_path(case_dir, "recorded"), "recorded", from_assessment(a, sev), list(review.findings))
    return True


def record_mechanical(review: Review, case_dir: Path) -> Path:
    """Write the mechanical reply for today's findings."""

    path = reply_path(case_dir, "mechanical")
    reply = mechanical_reply(review, load_rubric(None), get_target(review.port.target))
    save(path, "mechanical", reply, list(review.findings))
    return path
