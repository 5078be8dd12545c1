"""Rubric loading/validation and prompt rendering (versioned templates, untrusted fencing)."""

import pytest
from feedback_builders import f, review, sources
from jinja2 import UndefinedError

from nki_assist import taxonomy
from nki_assist.feedback import RubricError, draft_assessment, load_rubric, prompt_version
from nki_assist.feedback.prompts import build_messages, excerpts, render_text
from nki_assist.feedback.reply import AssessmentReply
from nki_assist.api.hardware import get_target


def test_default_rubric():
    r = load_rubric()
    ids = [c.id for c in r.criteria]
    assert ids == ["migration-correctness", "memory-hierarchy", "numerical-accuracy", "hardware-utilization",
                   "optimization-recommendations", "communication"]
    assert [c.id for c in r.scored()] == list(taxonomy.rubric_criteria())
    assert [c.id for c in r.judged()] == ["optimization-recommendations", "communication"]
    assert all(sorted(c.levels) == [0, 1, 2, 3, 4] for c in r.criteria)


CUSTOM = '''
name = "team"
version = "7"
[[criteria]]
id = "memory-hierarchy"
title = "Memory"
subject = "kernel"
question = "Fits?"
[criteria.levels]
0 = "no"
1 = "barely"
2 = "mostly"
3 = "yes"
4 = "perfect"
'''


def test_custom_rubric_is_used(tmp_path):
    p = tmp_path / "team.toml"
    p.write_text(CUSTOM)
    a = draft_assessment(review(), rubric_path=str(p))
    assert a.rubric_name == "team@7"
    assert [s.criterion for s in a.rubric] == ["memory-hierarchy"]


@pytest.mark.parametrize("mutate,needle", [
    (lambda s: s.replace('4 = "perfect"\n', ""), "levels must be exactly 0-4"),
    (lambda s: s.replace('id = "memory-hierarchy"', 'id = "speed"'), "not a taxonomy criterion"),
    (lambda s: s.replace('subject = "kernel"', 'subject = "robot"'), "subject"),
    (lambda s: s + "\n[[criteria]]\n", "criteria.1"),
    (lambda s: s.replace("[[criteria]]", "[[criteria"), "invalid TOML"),
])
def test_bad_rubric_is_a_clear_error(tmp_path, mutate, needle):
    p = tmp_path / "bad.toml"
    p.write_text(mutate(CUSTOM))
    with pytest.raises(RubricError) as exc:
        load_rubric(str(p))
    assert needle in str(exc.value) and "bad.toml" in str(exc.value)


def test_missing_rubric_file(tmp_path):
    with pytest.raises(RubricError, match="does not exist"):
        draft_assessment(review(), rubric_path=str(tmp_path / "nope.toml"))


def test_unknown_llm_choice():
    with pytest.raises(ValueError, match="unknown llm"):
        draft_assessment(review(), llm="claude")


def test_prompt_version_and_messages():
    assert prompt_version() == "nki-assist-prompts@1"
    system, user = build_messages(review(), load_rubric(), get_target("trn2"), sources())
    assert system["role"] == "system" and user["role"] == "user"
    assert "```findings-json" in user["content"] and '"id": "F1"' in user["content"]
    assert "```rubric-json" in user["content"] and "communication:" in user["content"]
    assert "PSUM bank: 2048 bytes = 2 KiB = 512 fp32 values" in user["content"]
    assert "UNTRUSTED SOURCE 1: kernels/gemm_bias_relu_nki.py lines 10-21" in user["content"]
    assert "UNTRUSTED SOURCE 2: kernels/sgemm_bias_relu.cu lines 5-11 (for findings F3)" in user["content"]


def test_excerpt_fence_outgrows_backticks_in_source():
    src = {"k.py": "a = 1\n# ```\n# ````` tricky\nb = 2\n"}
    r = review([f(rule="P1", name="x", category="small-dma", severity="warning", file="k.py", line=2, message="m")])
    (ex,) = excerpts(r, src)
    assert ex.fence == "``````" and ex.start == 1 and ex.end == 4


def test_excerpt_by_basename_and_missing_source():
    r = review()
    only = {"other/dir/gemm_bias_relu_nki.py": sources()["kernels/gemm_bias_relu_nki.py"]}
    assert [e.file for e in excerpts(r, only)] == ["kernels/gemm_bias_relu_nki.py"]
    assert excerpts(r, None) == []
    _, user = build_messages(r, load_rubric(), get_target("trn2"), None)
    assert "(no source excerpts were provided)" in user["content"]


def test_templates_are_strict_and_sandboxed():
    with pytest.raises(UndefinedError):
        render_text("{{ t.no_such_field }}", t=get_target("trn2"))
    from jinja2.exceptions import SecurityError

    with pytest.raises(SecurityError):
        render_text("{{ f.__class__.__mro__[1].__subclasses__() }}", f=object())


def test_reply_schema_is_strict_compatible():
    from openai.lib._pydantic import to_strict_json_schema

    schema = to_strict_json_schema(AssessmentReply)
    assert schema["additionalProperties"] is False
    item = schema["$defs"]["ReplyItem"]
    assert set(item["required"]) == set(item["properties"]) and item["additionalProperties"] is False


def test_data_dirs_found_from_checkout():
    from nki_assist.feedback.paths import data_dir

    assert (data_dir("prompts") / "llm" / "system.md.j2").is_file()
    assert (data_dir("rubrics") / "default.toml").is_file()
