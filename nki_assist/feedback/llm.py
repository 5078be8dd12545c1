"""LLM drafter: OpenAI Chat Completions `.parse()` into the strict reply model, grounding-checked.

Any OpenAI-compatible server works through `base_url` (vLLM, Ollama, llama.cpp): the structured-output
dialect the server takes is negotiated (llm_modes.py), and a prompt that overflows the model's context
window is sent again in its compact form (prompts_compact.py). One repair round with the violations
listed; on any remaining failure the deterministic draft is returned with drafter="fallback" and the reason.
The API key never leaves the HTTP Authorization header: it is not part of the cache key, cache entries,
logs, metadata or messages (`redact` scrubs server echoes).
"""

from __future__ import annotations

import logging
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

from pydantic import ValidationError

from .. import taxonomy
from ..api.hardware import Target
from ..infra.redact import redact as redact_secrets
from ..schema import Assessment, LlmMeta, Review
from . import llm_modes
from .cache import ReplyCache, cache_key
from .drafter import draft, score_cap, verdict_for
from .grounding import Context, check
from .prompts import build_messages, build_repair, prompt_version
from .prompts_compact import (build_compact_messages, context_window_of, known_window, overflows,
                              remember_window)
from .reply import REPLY_SCHEMA_VERSION, AssessmentReply, to_assessment
from .rubric import Rubric

log = logging.getLogger("nki_assist.feedback")

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_BASE_URL = "https://api.openai.com/v1"

# USD per million tokens (input, output), OpenAI list prices as published in 2025. Unknown -> no cost.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o3": (2.00, 8.00),
    "o4-mini": (1.10, 4.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
}
_DATED = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def price_of(model: str) -> tuple[float, float] | None:
    name = _DATED.sub("", model.strip().lower())
    return PRICES_PER_MTOK.get(name)


def cost_usd(model: str, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
    price = price_of(model)
    if price is None or prompt_tokens is None or completion_tokens is None:
        return None
    return round((prompt_tokens * price[0] + completion_tokens * price[1]) / 1e6, 9)


def redact(text: str, key: str | None) -> str:
    """Remove the API key (and any other secret: see nki_assist.infra.redact) from text."""
    return redact_secrets(text, [key])


def safe_url(url: str) -> str:
    """The base URL without user:password@ (never recorded)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass
class CallResult:
    reply: AssessmentReply | None = None
    raw: str = ""  # the reply text, for the repair turn
    problem: str | None = None  # why `reply` is None
    fatal: bool = False  # transport/refusal: no repair round
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached: bool = False
    rejected: bool = False  # the server does not take this structured-output dialect
    retry_after: float | None = None  # a transient failure (the SDK would retry it): seconds to wait
    context_window: int | None = None  # the prompt overflowed a window of this many tokens


@dataclass
class Session:
    model: str
    base_url: str
    api_key: str | None
    timeout_s: float
    max_retries: int
    cache: ReplyCache | None
    progress: Callable[[str], None] | None = None
    mode_setting: str = llm_modes.AUTO  # or one of llm_modes.MODES: only that dialect
    cache_dir: str | None = None  # where the negotiated dialect is remembered
    max_tokens: int | None = None  # completion budget (set for the compact prompt of a small window)
    constraints: dict[str, Any] | None = None  # this review's facts for llm_modes.constrained (grammar dialects)
    mode: str | None = None
    mode_rejections: list[str] = field(default_factory=list)
    seconds: float = 0.0
    reply_kinds: list[list[str]] = field(default_factory=list)  # violation kinds of each reply
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_known: bool = True
    asked: int = 0
    _client: Any = field(default=None, repr=False)

    def say(self, msg: str) -> None:
        msg = redact(msg, self.api_key)
        log.info(msg)
        if self.progress:
            try:
                self.progress(msg)
            except Exception:  # a broken progress callback must not break the review
                pass

    def client(self) -> Any:
        if self._client is None:
            from openai import OpenAI

            from .llm_limits import bounded_http_client  # the timeout bounds the whole reply, and its size

            self._client = OpenAI(api_key=self.api_key or "unused", base_url=self.base_url,
                                  timeout=self.timeout_s, max_retries=self.max_retries,
                                  http_client=bounded_http_client(self.timeout_s))
        return self._client

    def close(self) -> None:
        if self._client is not None:
            try:
                self._client.close()
            except Exception:
                pass

    def _count(self, res: CallResult) -> None:
        if res.cached or res.context_window or res.rejected:
            return  # served from the cache, or refused before any generation (nothing was spent)
        if res.prompt_tokens is None or res.completion_tokens is None:
            self.tokens_known = False
        else:
            self.prompt_tokens += res.prompt_tokens
            self.completion_tokens += res.completion_tokens

    def ask(self, messages: list[dict[str, str]]) -> CallResult:
        key = cache_key(model=self.model, base_url=self.base_url, messages=messages,
                        schema_version=REPLY_SCHEMA_VERSION, prompt_version=prompt_version())
        self.asked += 1
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                try:
                    reply = AssessmentReply.model_validate_json(hit["content"])
                    self.say("LLM reply served from cache")
                    self.mode = self.mode or hit.get("mode")  # how it was asked, when it was
                    res = CallResult(reply=reply, raw=hit["content"], cached=True,
                                     prompt_tokens=hit.get("prompt_tokens"),
                                     completion_tokens=hit.get("completion_tokens"))
                    self._count(res)
                    return res
                except ValidationError:
                    pass  # stale entry from an older schema: ask again
        self.attempts += 1
        t0 = time.perf_counter()
        res = self._negotiate(messages)
        self.seconds += time.perf_counter() - t0
        self._count(res)
        if res.reply is not None and self.cache is not None:
            # A server may echo the Authorization header into its reply: never store it.
            self.cache.put(key, {"content": redact(res.raw, self.api_key), "model": self.model, "mode": self.mode,
                                 "prompt_tokens": res.prompt_tokens, "completion_tokens": res.completion_tokens})
        return res

    def _negotiate(self, messages: list[dict[str, str]]) -> CallResult:
        """Ask in the forced dialect, else in the remembered one, else in each dialect in turn until the
        server takes one; what it took is remembered for its base URL."""
        if self.mode_setting != llm_modes.AUTO:
            self.mode = self.mode_setting
            res = self._call(messages, self.mode_setting)
            if res.rejected:
                res.problem = f"{res.problem} (structured-output mode {self.mode_setting} was forced with --llm-mode)"
            return res
        known = self.mode or llm_modes.remembered(self.base_url, self.cache_dir)
        tried = {r.split(":", 1)[0] for r in self.mode_rejections}
        for mode in llm_modes.negotiation_order(known):
            if mode in tried:
                continue
            if mode == known:
                res = self._call(messages, mode)
            else:  # a probe: a rejection is not retried, a transient failure is, with the retries left
                res = self._call(messages, mode, retries=0)
                if res.retry_after is not None and self.max_retries > 0:
                    time.sleep(res.retry_after)
                    res = self._call(messages, mode, retries=self.max_retries - 1)
            if not res.rejected:
                if mode != known:
                    llm_modes.remember(self.base_url, mode, self.cache_dir)
                self.mode = mode
                return res
            self.mode_rejections.append(f"{mode}: {res.problem}")
            self.say(f"the server does not take structured-output mode {mode}; trying the next one")
            if mode == known:
                llm_modes.forget(self.base_url, self.cache_dir)
        self.mode = None
        return CallResult(problem="the server rejected every structured-output mode ("
                          + "; ".join(self.mode_rejections) + ")", fatal=True)

    def _call(self, messages: list[dict[str, str]], mode: str, retries: int | None = None) -> CallResult:
        import openai

        from .llm_limits import limit_problem  # deferred: with openai, only when a call is made

        self.say(f"asking {self.model} at {self.base_url} ({mode}, timeout {self.timeout_s:g}s, "
                 f"{self.max_retries} retries)")
        res = CallResult()
        extra = {} if self.max_tokens is None else {"max_tokens": self.max_tokens}
        client = self.client() if retries is None else self.client().with_options(max_retries=retries)
        try:
            if mode == "json_schema":
                raw = client.chat.completions.with_raw_response.parse(
                    model=self.model, messages=messages, response_format=AssessmentReply, temperature=0, **extra,
                )
            else:
                schema = llm_modes.plain_schema(AssessmentReply)
                if self.constraints:
                    schema = llm_modes.constrained(schema, **self.constraints, reply_tokens=self.max_tokens)
                asked = llm_modes.with_schema_in_prompt(messages, schema) if mode == "json_prompt" else messages
                raw = client.chat.completions.with_raw_response.create(
                    model=self.model, messages=asked, temperature=0, **extra,
                    **llm_modes.request_options(mode, schema),
                )
            body = _json_or_none(raw.http_response)
            res.raw, res.prompt_tokens, res.completion_tokens = _content_and_usage(body)
            completion = raw.parse()
            if mode != "json_schema":
                return _checked(completion, res)
        except openai.LengthFinishReasonError:
            res.problem = "the reply was truncated (finish_reason=length); the JSON is incomplete"
            return res
        except openai.ContentFilterFinishReasonError:
            res.problem, res.fatal = "the reply was stopped by the provider's content filter", True
            return res
        except openai.APITimeoutError as exc:
            res.problem = limit_problem(exc) or \
                f"the LLM request timed out after {self.timeout_s:g}s ({self.max_retries} retries)"
            res.fatal, res.retry_after = True, 0.5
            return res
        except openai.APIConnectionError as exc:
            res.problem = limit_problem(exc) or f"could not connect to {self.base_url} ({self.max_retries} retries)"
            res.fatal, res.retry_after = True, 0.5
            return res
        except openai.APIStatusError as exc:
            detail = _status_detail(exc)
            res.problem, res.fatal = f"the LLM server answered HTTP {exc.status_code}{detail}", True
            res.rejected = llm_modes.is_dialect_rejection(exc.status_code, detail)
            res.context_window = context_window_of(exc.status_code, detail)
            if not res.rejected and (exc.status_code in (408, 409, 429) or exc.status_code >= 500):
                res.retry_after = _retry_after(exc)
            return res
        except (ValidationError, ValueError) as exc:
            res.problem = f"the reply is not valid JSON for the assessment schema ({_short(exc)})"
            return res
        except openai.OpenAIError as exc:
            res.problem, res.fatal = f"LLM client error ({exc.__class__.__name__})", True
            return res
        except Exception as exc:  # never a traceback for the user; the review falls back
            res.problem, res.fatal = f"unexpected LLM client failure ({exc.__class__.__name__})", True
            return res
        if not completion.choices:
            res.problem = "the reply has no choices"
            return res
        message = completion.choices[0].message
        if getattr(message, "refusal", None):
            res.problem, res.fatal = f"the model refused: {_short(message.refusal)}", True
            return res
        if message.parsed is None:
            res.problem = "the reply has no content"
            return res
        try:  # validate again: a server may return 200 without enforcing the schema
            res.reply = AssessmentReply.model_validate(message.parsed.model_dump())
        except ValidationError as exc:
            res.problem = f"the reply does not match the assessment schema ({_short(exc)})"
        return res


def _retry_after(exc: Any) -> float:
    """Seconds the server asks to wait (retry-after-ms / retry-after, as the SDK reads them), else 0.5."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        try:
            return min(max(float(headers.get(name)) * scale, 0.0), 60.0)
        except (TypeError, ValueError):
            continue
    return 0.5


def _checked(completion: Any, res: CallResult) -> CallResult:
    """A non-strict dialect's reply, checked as `.parse()` checks a strict one (the same pydantic model)."""
    if not completion.choices:
        res.problem = "the reply has no choices"
        return res
    choice = completion.choices[0]
    if choice.finish_reason == "length":
        res.problem = "the reply was truncated (finish_reason=length); the JSON is incomplete"
    elif choice.finish_reason == "content_filter":
        res.problem, res.fatal = "the reply was stopped by the provider's content filter", True
    elif getattr(choice.message, "refusal", None):
        res.problem, res.fatal = f"the model refused: {_short(choice.message.refusal)}", True
    elif not (choice.message.content or "").strip():
        res.problem = "the reply has no content"
    else:
        try:
            res.reply = AssessmentReply.model_validate_json(llm_modes.unfenced(choice.message.content))
        except ValidationError as exc:
            res.problem = f"the reply is not valid JSON for the assessment schema ({_short(exc)})"
    return res


def _json_or_none(response: Any) -> Any:
    try:
        return response.json()
    except Exception:
        return None


def _content_and_usage(body: Any) -> tuple[str, int | None, int | None]:
    content, pt, ct = "", None, None
    if isinstance(body, dict):
        try:
            content = body["choices"][0]["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            content = ""
        usage = body.get("usage") or {}
        if isinstance(usage, dict):
            pt = usage.get("prompt_tokens") if isinstance(usage.get("prompt_tokens"), int) else None
            ct = usage.get("completion_tokens") if isinstance(usage.get("completion_tokens"), int) else None
    return content, pt, ct


def _short(x: Any, limit: int = 200) -> str:
    text = " ".join(str(x).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _status_detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    msg = None
    if isinstance(body, dict):
        err = body.get("error", body)
        msg = err.get("message") if isinstance(err, dict) else None
    return f": {_short(msg)}" if msg else ""


def resolve_settings(model: str | None, base_url: str | None) -> tuple[str, str, str | None]:
    """(model, base_url, api_key) from arguments and the OPENAI_* environment."""
    api_key = os.environ.get("OPENAI_API_KEY") or None
    url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    name = model or os.environ.get("NKI_ASSIST_MODEL") or DEFAULT_MODEL
    return name, url.rstrip("/"), api_key


def draft_with_llm(review: Review, rubric: Rubric, target: Target, *, sources: dict[str, str] | None,
                   model: str | None, base_url: str | None, cache_dir: str | None, timeout_s: float,
                   max_retries: int, progress: Callable[[str], None] | None,
                   llm_mode: str = llm_modes.AUTO) -> Assessment:
    if llm_mode not in llm_modes.CHOICES:
        raise ValueError(f"unknown llm mode {llm_mode!r}; choose one of {', '.join(llm_modes.CHOICES)}")
    fallback = draft(review, rubric, target)
    name, url, api_key = resolve_settings(model, base_url)
    s = Session(model=name, base_url=url, api_key=api_key, timeout_s=timeout_s, max_retries=max_retries,
                cache=ReplyCache(cache_dir) if cache_dir else None, progress=progress, mode_setting=llm_mode,
                cache_dir=cache_dir)
    meta = LlmMeta(model=name, base_url=safe_url(url), prompt_version=prompt_version())

    def finish(assessment: Assessment, reason: str | None, violations: list[str]) -> Assessment:
        meta.mode = s.mode
        meta.mode_rejections = [redact(r, api_key) for r in s.mode_rejections]
        meta.compact_prompt = s.max_tokens is not None
        meta.seconds = round(s.seconds, 3)
        meta.reply_kinds = s.reply_kinds
        meta.attempts = s.attempts
        meta.cached = s.asked > 0 and s.attempts == 0
        if meta.cached:
            meta.cost_usd = 0.0  # nothing was spent on this run
        elif s.attempts and s.tokens_known:
            meta.prompt_tokens, meta.completion_tokens = s.prompt_tokens, s.completion_tokens
            meta.cost_usd = cost_usd(name, s.prompt_tokens, s.completion_tokens)
        meta.fallback_reason = redact(reason, api_key) if reason else None
        meta.violations = [redact(v, api_key) for v in violations]
        assessment.llm = meta
        assessment.prompt_version = prompt_version()
        assessment.rubric_name = rubric.label
        if reason:
            s.say(f"LLM draft not used, deterministic fallback: {meta.fallback_reason}")
        return assessment

    def fall_back(reason: str, violations: list[str]) -> Assessment:
        return finish(fallback.model_copy(update={"drafter": "fallback"}, deep=True), reason, violations)

    if api_key is None and url == DEFAULT_BASE_URL:
        return fall_back("OPENAI_API_KEY is not set (needed for the OpenAI API; local servers take --base-url)", [])

    try:
        return _converse(s, review, rubric, target, sources, finish, fall_back)
    finally:
        s.close()


def _judge(s: Session, res: CallResult, ctx: Context) -> list[str]:
    """The grounding check's violations of a reply (its parse problem when it has none), kinds counted."""
    if res.reply is None:
        s.reply_kinds.append(["truncated" if res.problem and "truncated" in res.problem else "schema"])
        return [res.problem or "no reply"]
    found = check(res.reply, ctx)
    s.reply_kinds.append(sorted({v.kind for v in found}))
    return [v.message for v in found]


def _converse(s: Session, review: Review, rubric: Rubric, target: Target, sources: dict[str, str] | None,
              finish: Callable[..., Assessment], fall_back: Callable[..., Assessment]) -> Assessment:
    ctx = Context(review, target, sources, rubric)
    groups: dict[tuple[str, str], list[str]] = {}
    for f in review.findings:
        groups.setdefault((f.criterion, f.severity.value), []).append(f.id)
    s.constraints = {"verdict": verdict_for(review.findings),
                     "caps": [(c.id, score_cap(review, c.id)) for c in rubric.scored()],
                     "groups": [(c, sev, gids) for (c, sev), gids in groups.items()]}
    messages = build_messages(review, rubric, target, sources)
    window = known_window(s.base_url)
    if window and overflows(messages, window):  # this server's model said so before: no request to learn it again
        messages, s.max_tokens = build_compact_messages(review, rubric, target, sources, window)
        s.say(f"the compact prompt, for the model's {window}-token context window")
    first = s.ask(messages)
    if first.fatal and first.context_window:
        # A small model: the same findings in the compact prompt, with room left for the reply.
        remember_window(s.base_url, first.context_window)
        messages, s.max_tokens = build_compact_messages(review, rubric, target, sources, first.context_window)
        s.say(f"the prompt overflows the model's {first.context_window}-token context window; "
              f"asking again with the compact prompt (reply budget {s.max_tokens} tokens)")
        first = s.ask(messages)
    if first.fatal:
        return fall_back(first.problem or "LLM failure", [])
    violations = _judge(s, first, ctx)
    if not violations:
        return finish(to_assessment(first.reply, list(taxonomy.CRITERIA_ORDER)), None, [])

    s.say(f"LLM draft failed the grounding check ({len(violations)} problem(s)); one repair round")
    shown = violations if s.max_tokens is None else violations[:12]  # the compact prompt's repair must fit too
    second = s.ask(build_repair(messages, first.raw, shown))
    if second.fatal:
        return fall_back(f"repair round failed: {second.problem}", violations)
    again = _judge(s, second, ctx)
    if again:
        return fall_back(f"the reply failed the grounding check after one repair round ({len(again)} problem(s))", again)
    return finish(to_assessment(second.reply, list(taxonomy.CRITERIA_ORDER)), None, violations)
