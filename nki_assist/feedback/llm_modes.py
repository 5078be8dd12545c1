"""Structured-output dialects of OpenAI-compatible servers, and which one a server takes.

Every server constrains the reply to a JSON schema, but each spells the request its own way:
  json_schema      OpenAI strict `response_format={"type": "json_schema", ...}` (OpenAI, vLLM >= 0.6,
                   Ollama >= 0.5, llama.cpp's llama-server)
  json_object      `response_format={"type": "json_object", "schema": ...}` (llama-cpp-python's server;
                   llama-server too): decoding constrained by a grammar made from the schema
  guided_json      vLLM's `guided_json` request field (vLLM before 0.12)
  ollama_format    Ollama's `format` request field (native API shape)
  json_prompt      plain JSON mode (`{"type": "json_object"}`), the schema written into the prompt
A server that does not know a dialect answers 4xx/5xx naming `response_format` or the schema; the next
dialect is tried (`negotiation_order`). What worked is remembered per base URL for the process and in
the LLM cache folder. Whatever the dialect, the reply is validated by the same pydantic model and the
same grounding check: the dialect only decides how the server is asked.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Any

MODES = ("json_schema", "json_object", "guided_json", "ollama_format", "json_prompt")
AUTO = "auto"
CHOICES = (AUTO, *MODES)

# The words a server's rejection of an unknown structured-output dialect contains (llama-cpp-python:
# "'response_format', 'type': Input should be 'text' or 'json_object'"; vLLM: "guided_json ... not
# supported"; servers that validate strictly: "Extra inputs are not permitted ... 'format'").
_REJECTS = re.compile(r"response_format|json_schema|json_object|guided_json|\bschema\b|\bgrammar\b|'format'|"
                      r"\"format\"|\bformat\b.*\b(not|unsupported|unknown|permitted)", re.IGNORECASE)
# Statuses that never mean "this dialect is unknown" (auth, missing route or model, rate limit, timeout).
_NOT_DIALECT = {401, 403, 404, 408, 409, 429}

_known: dict[str, str] = {}
_lock = threading.Lock()


def is_dialect_rejection(status: int | None, message: str | None) -> bool:
    """Does an HTTP error say the server does not take the structured-output request as sent?"""
    if status is None or not 400 <= status < 600 or status in _NOT_DIALECT:
        return False
    return bool(message and _REJECTS.search(message))


def negotiation_order(first: str | None = None) -> list[str]:
    """The dialects to try, `first` (a remembered one) ahead of the rest."""
    return [first, *(m for m in MODES if m != first)] if first in MODES else list(MODES)


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with every local `$ref` replaced by its definition (servers' grammar builders differ
    in how they resolve `$defs`; the reply model has no recursion)."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                target = copy.deepcopy(defs[ref.split("/")[-1]])
                rest = {k: v for k, v in node.items() if k != "$ref"}
                return walk({**target, **rest})
            return {k: walk(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema)


def plain_schema(model: type) -> dict[str, Any]:
    """The reply model's JSON schema with refs inlined (every non-OpenAI dialect sends this)."""
    return inline_refs(model.model_json_schema())  # type: ignore[attr-defined]


# How a reply's characters are shared out when the reply budget is known (a small model's compact prompt): the
# fields' maximum lengths sum to about CHARS_PER_REPLY_TOKEN characters per reply token, so a grammar-constrained
# reply always closes its JSON before the budget (SmolLM2 ran 56 of 80 replies into the token limit without).
CHARS_PER_REPLY_TOKEN = 2.5
_ITEM_SHARES = {"title": 0.1, "what": 0.3, "why": 0.2, "fix": 0.25, "profiling": 0.15}


def constrained(schema: dict[str, Any], *, verdict: str, caps: list[tuple[str, int]],
                groups: list[tuple[str, str, list[str]]], reply_tokens: int | None) -> dict[str, Any]:
    """The reply schema narrowed to this review, for the dialects that decode by grammar: the one verdict the
    findings require; one item shape per (criterion, severity, finding ids) group of the findings, so an item
    cites real findings of its own criterion whose most severe is its severity (grounding's "criterion" and
    "severity" rules, which SmolLM2 broke in 14 of 19 replies once the lengths were bounded); the scored
    criteria in order with each score at most its cap; and, with a known reply budget, string and list lengths
    that fit it. The reply is still validated and grounded exactly as in every other mode; this only keeps a
    small model from writing what the check would reject."""
    s = copy.deepcopy(schema)
    props = s["properties"]
    props["verdict"]["enum"] = [verdict]
    base = props["items"]["items"]
    variants = [{**copy.deepcopy(base), "properties": {
        **copy.deepcopy(base["properties"]), "criterion": {"enum": [c]}, "severity": {"enum": [sev]},
        "finding_ids": {"type": "array", "items": {"enum": list(ids)}, "minItems": 1, "maxItems": len(ids)}}}
        for c, sev, ids in groups]
    if variants:
        props["items"]["items"] = {"anyOf": variants}
        props["items"]["minItems"] = 1
    else:
        props["items"]["maxItems"] = 0
    if caps:
        score = props["rubric"]["items"]
        props["rubric"] = {"type": "array", "prefixItems": [
            {**copy.deepcopy(score), "properties": {**score["properties"], "criterion": {"enum": [c]},
                                                    "score": {"enum": list(range(cap + 1))}}}
            for c, cap in caps], "minItems": len(caps), "maxItems": len(caps), "items": False}
    if reply_tokens:
        chars = int(reply_tokens * CHARS_PER_REPLY_TOKEN)
        n = 1 if chars < 4000 else 2 if chars < 8000 else 3
        if variants:
            props["items"]["maxItems"] = min(n, sum(len(ids) for *_, ids in groups))
        props["summary"]["maxLength"] = max(120, chars // 10)
        rationale = max(60, chars // (12 * max(1, len(caps))))
        for entry in props["rubric"].get("prefixItems", []):
            entry["properties"]["rationale"] = {"type": "string", "maxLength": rationale}
        per_item = max(300, (chars - chars // 10 - rationale * len(caps)) // n - 150)
        for name, share in _ITEM_SHARES.items():
            for v in variants or [base]:
                v["properties"][name]["maxLength"] = max(40, int(per_item * share))
    return s


def request_options(mode: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments of `chat.completions.create` for a non-strict dialect (json_schema uses `.parse()`)."""
    if mode == "json_object":
        return {"response_format": {"type": "json_object", "schema": schema}}
    if mode == "guided_json":
        return {"extra_body": {"guided_json": schema}}
    if mode == "ollama_format":
        return {"extra_body": {"format": schema}}
    if mode == "json_prompt":
        return {"response_format": {"type": "json_object"}}
    raise ValueError(f"no request options for mode {mode!r}")


def with_schema_in_prompt(messages: list[dict[str, str]], schema: dict[str, Any]) -> list[dict[str, str]]:
    """json_prompt: the schema appended to the system message (the server only promises JSON)."""
    note = ("\n\nThe reply must be one JSON object (no prose, no code fence) valid against this JSON schema:\n"
            + json.dumps(schema, separators=(",", ":")))
    out = [dict(m) for m in messages]
    out[0]["content"] = out[0]["content"] + note
    return out


_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


def unfenced(text: str) -> str:
    """A JSON reply without the code fence some models wrap it in (the content is validated after)."""
    m = _FENCE.match(text or "")
    return m.group(1) if m else (text or "")


# ---------------------------------------------------------------------------------------------
# What worked, per base URL: in the process and in the LLM cache folder.


def remembered(base_url: str, cache_dir: str | os.PathLike[str] | None) -> str | None:
    with _lock:
        if base_url in _known:
            return _known[base_url]
    if cache_dir is None:
        return None
    try:
        mode = _mode_file(cache_dir, base_url).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return mode if mode in MODES else None


def remember(base_url: str, mode: str, cache_dir: str | os.PathLike[str] | None) -> None:
    with _lock:
        _known[base_url] = mode
    if cache_dir is None:
        return
    path = _mode_file(cache_dir, base_url)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(mode + "\n")
        os.replace(tmp, path)
    except OSError:
        pass  # not remembered on disk: the next process negotiates again


def forget(base_url: str, cache_dir: str | os.PathLike[str] | None) -> None:
    with _lock:
        _known.pop(base_url, None)
    if cache_dir is not None:
        try:
            _mode_file(cache_dir, base_url).unlink()
        except OSError:
            pass


def _mode_file(cache_dir: str | os.PathLike[str], base_url: str) -> Path:
    digest = hashlib.sha256(base_url.encode("utf-8")).hexdigest()[:24]
    return Path(cache_dir) / "server-modes" / f"{digest}.mode"
