"""The compact prompt: the same task for a model whose context window the full prompt overflows.

The full prompt (prompts.py) carries every finding's evidence, the performance and numerics data, the
judged rubric and source excerpts: about 10k tokens for the example port, more than a small local
model's window (SmolLM2: 8192). The compact one keeps what an item must cite (ids, rules, severities,
criteria, lines, messages, fixes), trimmed until it fits `PROMPT_SHARE` of the window, and leaves
`REPLY_SHARE` for the reply. Error findings are never dropped (every one must be covered); info and
then warning findings are, the prompt saying how many. A worked example goes along when it fits: the
deterministic drafter's own reply for these findings (its first items and its rubric scores), which a
small model otherwise gets wrong in form (unknown ids, missing rubric, a verdict against the rule).
The grounding check is the same as for the full prompt: it checks the reply against the whole review,
not against what the prompt showed.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

from .. import taxonomy
from ..api.hardware import Target
from ..schema import Review
from .drafter import draft, score_cap
from .prompts import environment
from .reply import from_assessment
from .rubric import Rubric

PROMPT_SHARE = 0.45  # of the window, for the system and user messages
REPLY_SHARE = 0.25  # of the window, for the reply (the repair round needs the rest)
# the drafter's reply as a worked example; NKI_ASSIST_LLM_FEW_SHOT=0 leaves it out (benchmarks/llm_local_eval.py
# measures the model with and without it: docs/evals.md "A real model")
FEW_SHOT_ENV = "NKI_ASSIST_LLM_FEW_SHOT"
CHARS_PER_TOKEN = 3.0  # conservative for JSON and code-like text (SmolLM2, Llama, Qwen tokenizers: 3-4)

# (message chars, fix chars, severities kept) from the fullest to the shortest form
LEVELS = [(320, 200, ("error", "warning", "info")), (180, 120, ("error", "warning", "info")),
          (180, 120, ("error", "warning")), (120, 80, ("error", "warning")), (120, 0, ("error",)),
          (80, 0, ("error",))]

_WINDOW = [
    re.compile(r"maximum context length is (\d+)", re.IGNORECASE),  # OpenAI, vLLM, llama-cpp-python
    re.compile(r"context (?:window|size|length) (?:of|is) (\d+)", re.IGNORECASE),
    re.compile(r"n_ctx(?:_slot)?\D{0,4}(\d+)", re.IGNORECASE),  # llama.cpp llama-server
]
_OVERFLOW = re.compile(r"context|too many tokens|too long|n_ctx", re.IGNORECASE)


_windows: dict[str, int] = {}  # base URL -> the context window its model reported (for the process)
_lock = threading.Lock()


def few_shot() -> bool:
    return os.environ.get(FEW_SHOT_ENV, "1").strip() != "0"


def remember_window(base_url: str, window: int) -> None:
    with _lock:
        _windows[base_url] = window


def known_window(base_url: str) -> int | None:
    with _lock:
        return _windows.get(base_url)


def overflows(messages: list[dict[str, str]], window: int) -> bool:
    """Would the full prompt (and a reply) overflow a known window? Then the compact one is sent at once."""
    return estimate_tokens(messages) + window * REPLY_SHARE > window


def context_window_of(status: int | None, message: str | None) -> int | None:
    """The window size an HTTP error reports when the prompt did not fit (None: not that error)."""
    if status not in (400, 413, 422, 500) or not message or not _OVERFLOW.search(message):
        return None
    for pat in _WINDOW:
        m = pat.search(message)
        if m and int(m.group(1)) >= 256:
            return int(m.group(1))
    return None


def estimate_tokens(messages: list[dict[str, str]]) -> int:
    return int(sum(len(m["content"]) for m in messages) / CHARS_PER_TOKEN) + 8 * len(messages)


def _cut(text: str | None, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _findings(review: Review, msg_chars: int, fix_chars: int, keep: tuple[str, ...]) -> list[dict[str, Any]]:
    out = []
    for f in review.findings:
        if f.severity.value not in keep:
            continue
        d: dict[str, Any] = {"id": f.id, "rule": f.rule, "category": f.category, "criterion": f.criterion,
                             "severity": f.severity.value, "file": Path(f.file).name if f.file else None,
                             "line": f.line, "message": _cut(f.message, msg_chars)}
        if fix_chars and f.fix:
            d["fix"] = _cut(f.fix, fix_chars)
        if f.est_speedup:
            d["est_speedup"] = f.est_speedup
        out.append(d)
    return out


def example_reply(review: Review, rubric: Rubric, target: Target, items: int) -> str | None:
    """The deterministic drafter's reply for these findings, its first `items` items, as compact JSON."""
    if items <= 0:
        return None
    reply = from_assessment(draft(review, rubric, target), {f.id: f.severity.value for f in review.findings})
    reply.items = reply.items[:items]
    return reply.model_dump_json()


def build_compact_messages(review: Review, rubric: Rubric, target: Target, sources: dict[str, str] | None,
                           window: int) -> tuple[list[dict[str, str]], int]:
    """(messages, max_tokens for the reply) for a model with a `window`-token context."""
    del sources  # excerpts are the first thing a small window cannot hold
    env = environment()
    system = env.get_template("llm/system.md.j2").render(criteria_order=list(taxonomy.CRITERIA_ORDER))
    template = env.get_template("llm/user_compact.md.j2")
    budget = int(window * PROMPT_SHARE)
    messages: list[dict[str, str]] = []
    scored = [{"criterion": c.id, "max_score": score_cap(review, c.id)} for c in rubric.scored()]
    # the example shrinks first (3 items, 1, none), then the findings do
    tries = [(level, n) for level in LEVELS[:1] for n in (3, 1)] + [(level, 0) for level in LEVELS]
    for (msg_chars, fix_chars, keep), n in tries:
        findings = _findings(review, msg_chars, fix_chars, keep)
        user = template.render(port=review.port, target=target, findings=findings,
                               left_out=len(review.findings) - len(findings), rubric_scored=scored,
                               example=example_reply(review, rubric, target, n) if few_shot() else None)
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        if estimate_tokens(messages) <= budget:
            break
    return messages, max(256, int(window * REPLY_SHARE))
