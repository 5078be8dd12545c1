"""Structured output that adapts to the server (issue 42): each server family's rejection of the OpenAI
`json_schema` form leads to the dialect it takes, through the real OpenAI SDK and the fake server."""

import json

import pytest
from fake_openai import FakeOpenAI
from feedback_builders import review, sources

from nki_assist.commands.common import LLM_MODES
from nki_assist.feedback import draft_assessment, llm_modes
from nki_assist.feedback import prompts_compact
from nki_assist.feedback.prompts_compact import context_window_of, estimate_tokens


@pytest.fixture(autouse=True)
def _forget_modes():
    llm_modes._known.clear()
    prompts_compact._windows.clear()
    yield
    llm_modes._known.clear()
    prompts_compact._windows.clear()


def run(fake, **kw):
    kw.setdefault("timeout_s", 5.0)
    kw.setdefault("max_retries", 0)
    return draft_assessment(review(), llm="openai", model="local", base_url=fake.base_url, sources=sources(), **kw)


# dialect -> (the mode it ends in, the modes it turns down first)
EXPECTED = {
    "openai": ("json_schema", []),
    "llama_cpp_python": ("json_object", ["json_schema"]),
    "vllm_guided": ("guided_json", ["json_schema", "json_object"]),
    "ollama": ("ollama_format", ["json_schema", "json_object", "guided_json"]),
    "json_only": ("json_prompt", ["json_schema", "json_object", "guided_json", "ollama_format"]),
}


@pytest.mark.parametrize("dialect", sorted(EXPECTED))
def test_each_server_family_ends_in_its_dialect(dialect):
    mode, turned_down = EXPECTED[dialect]
    with FakeOpenAI(["valid"], dialect=dialect) as fake:
        a = run(fake)
    assert a.drafter == "llm", a.llm.fallback_reason
    assert a.llm.mode == mode and a.llm.fallback_reason is None
    assert [r.split(":", 1)[0] for r in a.llm.mode_rejections] == turned_down
    assert fake.rejected == len(turned_down) and fake.calls == len(turned_down) + 1
    assert a.llm.attempts == 1 and a.llm.seconds is not None and a.llm.prompt_tokens > 1000
    body = fake.requests[-1]["body"]
    schema_required = {"verdict", "summary", "items", "rubric"}
    if mode == "json_object":
        rf = body["response_format"]
        assert rf["type"] == "json_object" and set(rf["schema"]["required"]) == schema_required
        assert "$defs" not in json.dumps(rf["schema"])  # refs inlined for grammar builders
        assert all(v["additionalProperties"] is False for v in rf["schema"]["properties"]["items"]["items"]["anyOf"])
    elif mode == "guided_json":
        assert "response_format" not in body and set(body["guided_json"]["required"]) == schema_required
    elif mode == "ollama_format":
        assert "response_format" not in body and set(body["format"]["required"]) == schema_required
    elif mode == "json_prompt":
        assert body["response_format"] == {"type": "json_object"}
        assert '"finding_ids"' in body["messages"][0]["content"]  # the schema went into the system prompt
    else:
        assert body["response_format"]["type"] == "json_schema"


def test_rejection_reason_is_recorded_in_the_servers_words():
    with FakeOpenAI(["valid"], dialect="llama_cpp_python") as fake:
        a = run(fake)
    (why,) = a.llm.mode_rejections
    assert why.startswith("json_schema: the LLM server answered HTTP 500")
    assert "Input should be 'text' or 'json_object'" in why


def test_what_worked_is_remembered_for_the_process():
    with FakeOpenAI(["valid", "valid"], dialect="llama_cpp_python") as fake:
        first = run(fake)
        second = run(fake)
    assert first.llm.mode == second.llm.mode == "json_object"
    assert fake.rejected == 1 and fake.calls == 3  # the second review asked once, in the remembered mode
    assert second.llm.mode_rejections == []


def test_what_worked_is_remembered_in_the_cache_folder(tmp_path):
    with FakeOpenAI(["valid"], dialect="vllm_guided") as fake:
        run(fake, cache_dir=str(tmp_path))
        llm_modes._known.clear()  # a new process
        assert llm_modes.remembered(fake.base_url, tmp_path) == "guided_json"
        llm_modes._known.clear()
        fake.script = ["valid"]
        # a different review (no cache hit): asked straight in the remembered dialect
        a = draft_assessment(review(), llm="openai", model="other", base_url=fake.base_url, sources=sources(),
                             cache_dir=str(tmp_path), timeout_s=5.0, max_retries=0)
    assert a.drafter == "llm" and a.llm.mode == "guided_json" and a.llm.mode_rejections == []
    assert fake.rejected == 2 and fake.calls == 4
    hit = draft_assessment(review(), llm="openai", model="other", base_url=fake.base_url, sources=sources(),
                           cache_dir=str(tmp_path), timeout_s=5.0, max_retries=0)
    assert hit.llm.cached and hit.llm.mode == "guided_json" and fake.calls == 4
    assert len(list(tmp_path.rglob("*.json"))) == 2  # the two replies; the mode lives in its own file


def test_a_remembered_mode_the_server_no_longer_takes_is_renegotiated(tmp_path):
    with FakeOpenAI(["valid"], dialect="llama_cpp_python") as fake:
        llm_modes.remember(fake.base_url, "guided_json", tmp_path)  # e.g. the server was swapped
        a = run(fake, cache_dir=str(tmp_path))
    # guided_json is an extra field llama-cpp-python ignores: it answers 200, so it stays the mode
    assert a.drafter == "llm" and a.llm.mode == "guided_json"
    with FakeOpenAI(["valid"], dialect="ollama") as fake:
        llm_modes.remember(fake.base_url, "json_object", tmp_path)
        a = run(fake, cache_dir=str(tmp_path))
        assert llm_modes.remembered(fake.base_url, tmp_path) == "ollama_format"
    assert a.drafter == "llm" and a.llm.mode == "ollama_format"
    assert [r.split(":")[0] for r in a.llm.mode_rejections] == ["json_object", "json_schema", "guided_json"]


def test_a_server_without_structured_output_falls_back_saying_why():
    with FakeOpenAI(["valid"], dialect="text_only") as fake:
        a = run(fake)
    assert a.drafter == "fallback" and fake.rejected == len(llm_modes.MODES)
    assert a.llm.fallback_reason.startswith("the server rejected every structured-output mode")
    for mode in llm_modes.MODES:
        assert f"{mode}: the LLM server answered HTTP 400" in a.llm.fallback_reason
    assert a.llm.mode is None and len(a.llm.mode_rejections) == 5
    assert a.verdict == "block" and a.items  # the deterministic draft


def test_forced_mode_is_the_only_one_tried():
    with FakeOpenAI(["valid"], dialect="llama_cpp_python") as fake:
        a = run(fake, llm_mode="json_schema")
    assert a.drafter == "fallback" and fake.calls == 1
    assert "HTTP 500" in a.llm.fallback_reason and "forced with --llm-mode" in a.llm.fallback_reason
    with FakeOpenAI(["valid"]) as fake:  # an OpenAI-style server asked in llama.cpp's dialect
        a = run(fake, llm_mode="json_object")
    assert a.drafter == "llm" and a.llm.mode == "json_object" and fake.calls == 1
    assert fake.requests[0]["body"]["response_format"]["type"] == "json_object"


def test_unknown_mode_is_an_error():
    with pytest.raises(ValueError, match="unknown llm mode"):
        draft_assessment(review(), llm="openai", base_url="http://127.0.0.1:9/v1", llm_mode="grammar")


def test_cli_choices_match_the_modes():
    assert LLM_MODES == llm_modes.CHOICES


@pytest.mark.parametrize("dialect", ["llama_cpp_python", "json_only"])
def test_grounding_is_as_strict_in_every_mode(dialect):
    with FakeOpenAI(["invented_ids", "invented_ids"], dialect=dialect) as fake:
        a = run(fake)
    assert a.drafter == "fallback" and "grounding check" in a.llm.fallback_reason
    assert any("F99" in v for v in a.llm.violations)
    assert a.llm.reply_kinds == [["unknown-id"], ["unknown-id"]]  # both replies, by kind
    with FakeOpenAI(["invalid_json", "truncated"], dialect=dialect) as fake:
        a = run(fake)
    assert a.drafter == "fallback" and "truncated" in a.llm.violations[0]
    assert a.llm.reply_kinds == [["schema"], ["truncated"]]


def test_fenced_json_in_json_prompt_mode_is_read():
    def fenced(body):
        from fake_openai import valid_reply

        return valid_reply(body)

    with FakeOpenAI([fenced], dialect="json_only") as fake:
        a = run(fake)
    assert a.drafter == "llm"
    assert llm_modes.unfenced('```json\n{"a": 1}\n```') == '{"a": 1}'
    assert llm_modes.unfenced('{"a": 1}') == '{"a": 1}'


@pytest.mark.parametrize("status,message,expected", [
    (500, "[{'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\"}]", True),
    (400, "guided_json is not supported", True),
    (400, "Invalid schema for response_format 'AssessmentReply'", True),
    (500, "The server had an error", False),
    (429, "response_format rate limit", False),
    (401, "Incorrect API key provided", False),
    (400, "This model's maximum context length is 8192 tokens", False),
])
def test_what_counts_as_a_dialect_rejection(status, message, expected):
    assert llm_modes.is_dialect_rejection(status, message) is expected


def test_small_context_window_gets_the_compact_prompt():
    with FakeOpenAI(["valid", "valid"], dialect="llama_cpp_python", context_window=3200) as fake:
        a = run(fake)
        calls = fake.calls
        # the window is remembered for the server: the next review sends the compact prompt at once
        again = run(fake)
    assert again.drafter == "llm" and again.llm.compact_prompt and fake.calls == calls + 1
    assert a.drafter == "llm", a.llm.fallback_reason
    assert a.llm.compact_prompt and a.llm.mode == "json_object"
    assert a.llm.prompt_tokens > 0 and a.llm.completion_tokens > 0  # the refused ask does not blank the counts
    compact = fake.requests[-2]["body"]
    assert compact["max_tokens"] == 800  # a quarter of the window for the reply
    assert estimate_tokens(compact["messages"]) <= 3200 * 0.45
    full = fake.requests[-3]["body"]  # the first ask, turned down for length
    assert sum(len(m["content"]) for m in full["messages"]) > 3 * sum(len(m["content"]) for m in compact["messages"])


def test_context_window_is_read_from_each_servers_error():
    assert context_window_of(400, "This model's maximum context length is 8192 tokens. However, you requested") == 8192
    assert context_window_of(400, "the request exceeds the available context size, n_ctx 4096") == 4096
    assert context_window_of(500, "The server had an error") is None
    assert context_window_of(401, "maximum context length is 8192") is None


def test_a_probe_turned_down_is_not_retried_but_a_transient_failure_is():
    with FakeOpenAI(["valid"], dialect="llama_cpp_python") as fake:
        a = run(fake, max_retries=2)
    assert a.drafter == "llm" and fake.rejected == 1 and fake.calls == 2  # the SDK would have sent the 500 thrice
    with FakeOpenAI(["rate_limit", "valid"], dialect="openai") as fake:
        a = run(fake, max_retries=2)
    assert a.drafter == "llm" and a.llm.mode == "json_schema" and fake.calls == 2 and a.llm.mode_rejections == []


def test_compact_prompt_keeps_every_error_and_shrinks_the_example_first():
    from nki_assist.feedback import load_rubric
    from nki_assist.feedback.prompts_compact import build_compact_messages
    from nki_assist.api.hardware import get_target

    r, rubric, t = review(), load_rubric(None), get_target("trn1")
    errors = {f.id for f in r.findings if f.severity.value == "error"}
    roomy, _ = build_compact_messages(r, rubric, t, sources(), 16384)
    tight, budget = build_compact_messages(r, rubric, t, sources(), 2400)
    assert "# Example of a valid reply" in roomy[1]["content"]
    example = json.loads(roomy[1]["content"].split("```json\n")[1].split("\n```")[0])
    assert example["verdict"] == "block" and 1 <= len(example["items"]) <= 3 and example["rubric"]
    assert "# Example of a valid reply" not in tight[1]["content"] and budget == 600
    for messages in (roomy, tight):
        shown = json.loads(messages[1]["content"].split("```findings-json\n")[1].split("\n```")[0])
        assert errors <= {f["id"] for f in shown}


def test_the_worked_example_can_be_left_out_for_a_before_after_measurement(monkeypatch):
    from nki_assist.feedback import load_rubric
    from nki_assist.feedback.prompts_compact import FEW_SHOT_ENV, build_compact_messages
    from nki_assist.api.hardware import get_target

    r, rubric, t = review(), load_rubric(None), get_target("trn1")
    monkeypatch.setenv(FEW_SHOT_ENV, "0")
    without, _ = build_compact_messages(r, rubric, t, sources(), 16384)
    monkeypatch.delenv(FEW_SHOT_ENV)
    with_example, _ = build_compact_messages(r, rubric, t, sources(), 16384)
    assert "# Example of a valid reply" not in without[1]["content"]
    assert "# Example of a valid reply" in with_example[1]["content"]
    assert without[1]["content"].split("# Example")[0].strip() in with_example[1]["content"]


def test_grammar_dialects_get_the_schema_narrowed_to_this_review():
    """A small model wrote what grounding rejects (SmolLM2 on the eval suite: 56 of 80 replies cut at the token
    limit, wrong verdicts and rubrics); a grammar-constrained server now decodes only what the review allows."""
    from nki_assist.feedback.drafter import score_cap, verdict_for
    from nki_assist.feedback.rubric import load_rubric

    r = review()
    with FakeOpenAI(["valid"], dialect="llama_cpp_python") as fake:
        a = run(fake)
    assert a.drafter == "llm"
    props = fake.requests[-1]["body"]["response_format"]["schema"]["properties"]
    assert props["verdict"]["enum"] == [verdict_for(r.findings)]
    # one item shape per (criterion, severity): ids of that group only, so the item's criterion and severity
    # follow from what it cites
    shapes = {(v["properties"]["criterion"]["enum"][0], v["properties"]["severity"]["enum"][0]):
              v["properties"]["finding_ids"]["items"]["enum"] for v in props["items"]["items"]["anyOf"]}
    assert shapes == {(c, sev): [f.id for f in r.findings if (f.criterion, f.severity.value) == (c, sev)]
                      for c, sev in {(f.criterion, f.severity.value) for f in r.findings}}
    rubric = load_rubric(None).scored()
    entries = props["rubric"]["prefixItems"]
    assert [e["properties"]["criterion"]["enum"] for e in entries] == [[c.id] for c in rubric]
    assert [max(e["properties"]["score"]["enum"]) for e in entries] == [score_cap(r, c.id) for c in rubric]
    assert "maxLength" not in json.dumps(props)  # the full prompt: no reply budget, no length bounds


def test_a_known_reply_budget_bounds_every_string_and_list():
    from nki_assist.feedback.reply import AssessmentReply

    schema = llm_modes.constrained(llm_modes.plain_schema(AssessmentReply), verdict="block",
                                   caps=[("migration-correctness", 1), ("memory-hierarchy", 4)], reply_tokens=1024,
                                   groups=[("migration-correctness", "error", ["F1", "F2"]),
                                           ("memory-hierarchy", "info", ["F3"])])
    props = schema["properties"]
    item = props["items"]["items"]["anyOf"][1]["properties"]
    n = props["items"]["maxItems"]
    total = props["summary"]["maxLength"] + n * sum(item[k]["maxLength"] for k in ("title", "what", "why", "fix",
                                                                                   "profiling"))
    total += sum(e["properties"]["rationale"]["maxLength"] for e in props["rubric"]["prefixItems"])
    assert n == 1 and total <= 1024 * llm_modes.CHARS_PER_REPLY_TOKEN  # the JSON closes within the budget
    assert props["rubric"]["minItems"] == props["rubric"]["maxItems"] == 2
    # the schema's constraints compile into llama.cpp's grammar where llama-cpp-python is installed
    llama_grammar = pytest.importorskip("llama_cpp.llama_grammar")
    gbnf = llama_grammar.json_schema_to_gbnf(json.dumps(schema))
    assert '"\\"F1\\""' in gbnf and "block" in gbnf
