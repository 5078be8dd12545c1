"""LLM drafter through the real OpenAI SDK against the scripted fake server: every fault path."""

import json
import time

import pytest
from fake_openai import FakeOpenAI, closed_port_url
from feedback_builders import review, sources

from nki_assist.feedback import draft_assessment
from nki_assist.feedback.llm import cost_usd, price_of, redact, safe_url


def run(fake_or_url, *, model="gpt-4o-mini", **kw):
    url = fake_or_url if isinstance(fake_or_url, str) else fake_or_url.base_url
    kw.setdefault("timeout_s", 5.0)
    kw.setdefault("max_retries", 2)
    return draft_assessment(review(), llm="openai", model=model, base_url=url, sources=sources(), **kw)


def test_valid_reply_is_used(fake_key):
    with FakeOpenAI(["valid"]) as fake:
        a = run(fake)
    assert a.drafter == "llm" and a.llm.fallback_reason is None
    assert a.verdict == "block"
    assert [it.finding_ids for it in a.items][:2] == [["F1"], ["F2"]]
    assert a.llm.attempts == 1 and fake.calls == 1
    assert a.llm.prompt_version == a.prompt_version == "nki-assist-prompts@1"
    # token counts come from the server's usage; cost from the price table (gpt-4o-mini 0.15/0.60 per M)
    assert a.llm.prompt_tokens > 1000 and a.llm.completion_tokens > 100
    assert a.llm.cost_usd == pytest.approx((a.llm.prompt_tokens * 0.15 + a.llm.completion_tokens * 0.60) / 1e6)
    body = fake.requests[0]["body"]
    assert body["model"] == "gpt-4o-mini" and body["temperature"] == 0
    rf = body["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["strict"] is True
    schema = rf["json_schema"]["schema"]
    assert set(schema["required"]) == {"verdict", "summary", "items", "rubric"}
    assert schema["additionalProperties"] is False
    assert fake.requests[0]["headers"]["authorization"] == f"Bearer {fake_key}"


def test_unknown_model_has_tokens_but_no_cost(fake_key):
    with FakeOpenAI(["valid"]) as fake:
        a = run(fake, model="llama-3.1-8b-instruct")
    assert a.drafter == "llm" and a.llm.prompt_tokens and a.llm.cost_usd is None


def test_invented_ids_repaired_then_used(fake_key):
    with FakeOpenAI(["invented_ids", "valid"]) as fake:
        a = run(fake)
    assert a.drafter == "llm" and a.llm.attempts == 2
    assert any("F99" in v for v in a.llm.violations)  # what the repair round fixed
    repair = fake.requests[1]["body"]["messages"]
    assert repair[-2]["role"] == "assistant" and "F99" in repair[-2]["content"]
    assert repair[-1]["role"] == "user" and "F99" in repair[-1]["content"] and "do not exist" in repair[-1]["content"]


def test_invented_ids_twice_falls_back(fake_key):
    with FakeOpenAI(["invented_ids", "invented_ids"]) as fake:
        a = run(fake)
    assert a.drafter == "fallback" and fake.calls == 2
    assert "grounding check" in a.llm.fallback_reason
    assert any("F99" in v for v in a.llm.violations)
    assert all(fid != "F99" for it in a.items for fid in it.finding_ids)
    assert a.verdict == "block" and a.items[0].finding_ids == ["F1", "F2"]  # the deterministic draft


@pytest.mark.parametrize("fault", ["invalid_json", "truncated"])
def test_malformed_reply_gets_one_repair(fault, fake_key):
    with FakeOpenAI([fault, "valid"]) as fake:
        a = run(fake)
    assert a.drafter == "llm" and fake.calls == 2
    assert a.llm.violations and ("not valid JSON" in a.llm.violations[0] or "truncated" in a.llm.violations[0])


@pytest.mark.parametrize("fault,reason", [("invalid_json", "not valid JSON"), ("truncated", "truncated")])
def test_malformed_twice_falls_back(fault, reason, fake_key):
    with FakeOpenAI([fault, fault]) as fake:
        a = run(fake)
    assert a.drafter == "fallback" and fake.calls == 2
    assert reason in a.llm.violations[0]
    assert a.verdict == "block"


@pytest.mark.parametrize("fault,reason", [("refusal", "refused"), ("content_filter", "content filter")])
def test_refusal_and_filter_fall_back_without_repair(fault, reason, fake_key):
    with FakeOpenAI([fault, "valid"]) as fake:
        a = run(fake)
    assert a.drafter == "fallback" and fake.calls == 1
    assert reason in a.llm.fallback_reason


def test_rate_limit_then_success_retries_in_sdk(fake_key):
    with FakeOpenAI(["rate_limit", "rate_limit", "valid"]) as fake:
        t0 = time.monotonic()
        a = run(fake, max_retries=2)
        elapsed = time.monotonic() - t0
    assert a.drafter == "llm" and fake.calls == 3 and a.llm.attempts == 1
    assert elapsed < 3.0  # honoured retry-after-ms (10 ms), not the default backoff


def test_rate_limit_exhausts_retries(fake_key):
    with FakeOpenAI(["rate_limit"] * 5) as fake:
        a = run(fake, max_retries=1)
    assert a.drafter == "fallback" and fake.calls == 2  # 1 try + 1 retry
    assert "HTTP 429" in a.llm.fallback_reason


def test_server_errors_fall_back(fake_key):
    with FakeOpenAI(["server_error"] * 3) as fake:
        a = run(fake, max_retries=2)
    assert a.drafter == "fallback" and fake.calls == 3
    assert "HTTP 500" in a.llm.fallback_reason
    assert a.verdict == "block" and a.items


def test_slow_reply_times_out(fake_key):
    with FakeOpenAI(["slow", "slow"], slow_seconds=3.0) as fake:
        t0 = time.monotonic()
        a = run(fake, timeout_s=0.3, max_retries=0)
        elapsed = time.monotonic() - t0
    assert a.drafter == "fallback" and "timed out after 0.3s" in a.llm.fallback_reason
    assert elapsed < 2.5


def test_connection_refused(fake_key):
    a = run(closed_port_url(), max_retries=0)
    assert a.drafter == "fallback" and "could not connect" in a.llm.fallback_reason


def test_dropped_connection(fake_key):
    with FakeOpenAI(["drop", "drop"]) as fake:
        a = run(fake, max_retries=1)
    assert a.drafter == "fallback" and fake.calls == 2


def test_missing_key_for_openai_api_falls_back_without_network():
    a = draft_assessment(review(), llm="openai")
    assert a.drafter == "fallback" and "OPENAI_API_KEY" in a.llm.fallback_reason
    assert a.llm.attempts == 0


def test_local_server_needs_no_key():
    with FakeOpenAI(["valid"]) as fake:
        a = run(fake)
    assert a.drafter == "llm"
    assert fake.requests[0]["headers"]["authorization"] == "Bearer unused"


def test_env_base_url_and_model(monkeypatch, fake_key):
    with FakeOpenAI(["valid"]) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("NKI_ASSIST_MODEL", "my-local-model")
        a = draft_assessment(review(), llm="openai", timeout_s=5)
    assert a.drafter == "llm" and a.llm.model == "my-local-model"
    assert a.llm.base_url == fake.base_url


def test_cache_hit_skips_server_and_never_stores_key(tmp_path, fake_key):
    with FakeOpenAI(["valid"], default="server_error") as fake:
        a1 = run(fake, cache_dir=str(tmp_path))
        a2 = run(fake, cache_dir=str(tmp_path))
    assert fake.calls == 1  # the second run never reached the server (it would have got a 500)
    assert a1.drafter == a2.drafter == "llm"
    assert a2.llm.cached and a2.llm.attempts == 0 and a2.llm.cost_usd == 0.0
    assert [i.model_dump() for i in a1.items] == [i.model_dump() for i in a2.items]
    files = list(tmp_path.rglob("*.json"))
    assert len(files) == 1 and len(files[0].stem) == 64
    assert fake_key not in files[0].read_text()
    # a different model is a different key
    with FakeOpenAI(["valid"]) as fake2:
        run(fake2, model="gpt-4.1-mini", cache_dir=str(tmp_path))
    assert fake2.calls == 1 and len(list(tmp_path.rglob("*.json"))) == 2


def test_corrupt_cache_entry_is_a_miss(tmp_path, fake_key):
    with FakeOpenAI(["valid", "valid"]) as fake:
        run(fake, cache_dir=str(tmp_path))
        (entry,) = tmp_path.rglob("*.json")
        entry.write_text("{not json")
        a = run(fake, cache_dir=str(tmp_path))
    assert fake.calls == 2 and a.drafter == "llm" and not a.llm.cached


def test_progress_messages(fake_key):
    seen = []
    with FakeOpenAI(["invented_ids", "valid"]) as fake:
        run(fake, progress=seen.append)
    assert any("asking gpt-4o-mini" in m for m in seen)
    assert any("repair" in m for m in seen)


def test_price_table():
    assert price_of("gpt-4o-mini-2024-07-18") == (0.15, 0.60)
    assert price_of("gpt-4o") == (2.50, 10.00)
    assert price_of("qwen2.5-coder:7b") is None
    assert cost_usd("gpt-4o", 1_000_000, 100_000) == pytest.approx(3.5)
    assert cost_usd("mystery", 10, 10) is None


def test_redact_and_safe_url():
    assert redact("bad key sk-abcdef123456 and Bearer xyz.abc", None) == "bad key sk-*** and Bearer ***"
    assert "hunter2" not in redact("key=hunter2", "hunter2")
    assert safe_url("http://user:pw@localhost:8000/v1") == "http://localhost:8000/v1"


def test_assessment_json_shape(fake_key):
    with FakeOpenAI(["valid"]) as fake:
        a = run(fake)
    d = json.loads(a.model_dump_json())
    assert set(d) >= {"drafter", "verdict", "summary", "items", "rubric", "llm", "prompt_version"}
    assert set(d["items"][0]) == {"finding_ids", "priority", "criterion", "title", "what", "why", "fix", "profiling"}
    assert [i["priority"] for i in d["items"]] == list(range(1, len(d["items"]) + 1))


def test_unauthorized_reason_is_redacted(fake_key):
    with FakeOpenAI(["unauthorized"]) as fake:
        a = run(fake, max_retries=0)
    assert a.drafter == "fallback" and "HTTP 401" in a.llm.fallback_reason
    assert "Incorrect API key provided: ***" in a.llm.fallback_reason and fake_key not in a.model_dump_json()
