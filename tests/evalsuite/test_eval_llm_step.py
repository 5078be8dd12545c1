"""`eval --llm openai`'s LLM-step table (issue 42): accepted, repaired, fallen back, violation kinds, the count of
replies that cited something that does not exist, tokens and latency, from a live server (here the fake)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fakes"))

from fake_openai import FakeOpenAI  # noqa: E402

from nki_assist.evalsuite.llm_step import summarize_llm_step  # noqa: E402
from nki_assist.evalsuite.runner import render_markdown, run_suite  # noqa: E402
from nki_assist.feedback import llm_modes  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CASES = ["clean_softmax_new", "gemm_bias_dropped_new", "softmax_overflow_legacy"]


def test_llm_step_table_from_a_live_server(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "NKI_ASSIST_MODEL"):
        monkeypatch.delenv(var, raising=False)
    llm_modes._known.clear()
    # case by case (jobs=1): accepted; invented id then repaired; invented id twice -> fallback
    script = ["valid", "invented_ids", "valid", "invented_ids", "invented_ids"]
    with FakeOpenAI(script, dialect="llama_cpp_python") as fake:
        summary, records, _ = run_suite(ROOT / "evals" / "cases", llm="openai", model="local", base_url=fake.base_url,
                                        only=CASES, jobs=1)
    step = summary["llm_step"]
    assert [row["outcome"] for row in step["rows"]] == ["accepted", "repaired", "fallback (grounding)"]
    assert [r["case"] for r in records] == sorted(CASES)
    assert (step["accepted"], step["repaired"], step["fallback_grounding"], step["fallback_protocol"]) == (1, 1, 1, 0)
    assert step["replies"] == 5 and step["replies_citing_invented"] == 3
    assert step["top_violation_kinds"] == [("unknown-id", 3)]
    assert all(row["mode"] == "json_object" and row["prompt_tokens"] > 0 and row["seconds"] > 0 for row in step["rows"])
    assert step["prompt_tokens"] == sum(row["prompt_tokens"] for row in step["rows"])
    assert summary["llm_drafted"] == 2 and summary["llm_fallbacks"] == 1
    md = render_markdown(summary)
    assert "## The LLM step" in md
    assert "non-existent finding, number or line: 3 of 5" in md
    assert "| gemm_bias_dropped_new | repaired | json_object | 2 |" in md


def test_protocol_fallback_is_counted_apart():
    records = [{"case": "a", "score": {"drafter": "fallback"},
                "llm": {"fallback_reason": "the LLM server answered HTTP 500", "violations": [], "reply_kinds": [],
                        "seconds": 0.1}}]
    step = summarize_llm_step(records)
    assert step["fallback_protocol"] == 1 and step["fallback_grounding"] == 0 and step["replies"] == 0
