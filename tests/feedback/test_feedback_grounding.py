"""Grounding validator: each rule of issue 6 item 6 rejects the reply that breaks it."""

import pytest
from feedback_builders import review, sources

from nki_assist.feedback import draft_assessment, load_rubric
from nki_assist.feedback.grounding import Context, validate
from nki_assist.feedback.reply import from_assessment
from nki_assist.api.hardware import get_target


@pytest.fixture
def base():
    r = review()
    reply = from_assessment(draft_assessment(r), {x.id: x.severity.value for x in r.findings})
    ctx = Context(r, get_target("trn2"), sources(), load_rubric())
    assert validate(reply, ctx) == []
    return reply, ctx


def one(violations, needle):
    assert any(needle in v for v in violations), violations


def test_invented_id(base):
    reply, ctx = base
    reply.items[1].finding_ids = ["F3", "F42"]
    one(validate(reply, ctx), "F42 that do not exist")


def test_error_must_be_covered(base):
    reply, ctx = base
    reply.items[0].finding_ids = ["F1"]  # F2 (error) dropped
    one(validate(reply, ctx), "F2 are not covered")


def test_info_above_error(base):
    reply, ctx = base
    reply.items[0].priority, reply.items[-1].priority = reply.items[-1].priority, reply.items[0].priority
    one(validate(reply, ctx), "placed above an error item")


def test_severity_and_criterion_unchanged(base):
    reply, ctx = base
    reply.items[0].severity = "warning"
    reply.items[1].criterion = "hardware-utilization"
    v = validate(reply, ctx)
    one(v, "severities may not change")
    one(v, "categories may not change")


def test_verdict_follows_rule(base):
    reply, ctx = base
    reply.verdict = "revise"
    one(validate(reply, ctx), "require 'block'")


def test_invented_number(base):
    reply, ctx = base
    reply.items[2].profiling += " Expect a 3.7x speedup and 912 fewer transfers."
    v = validate(reply, ctx)
    one(v, "3.7")
    one(v, "912")


def test_numbers_from_evidence_hardware_and_rounding_pass(base):
    reply, ctx = base
    reply.items[2].why += " 256 B per partition is far below 2 KiB; 64 transfers cost about 83 us; 80% faster."
    reply.items[3].what += " Relative error 3.1% at K=4096."
    assert validate(reply, ctx) == []


def test_number_from_another_finding_is_not_allowed(base):
    reply, ctx = base
    reply.items[1].what += " The error grows to 0.031."  # F5's number, cited by item F3
    one(validate(reply, ctx), "0.031")


def test_line_references(base):
    reply, ctx = base
    reply.items[2].what += " See line 16."  # F4's own line: fine
    assert validate(reply, ctx) == []
    reply.items[2].what += " Also line 42 and gemm_bias_relu_nki.py:3."
    v = validate(reply, ctx)
    one(v, "line(s) 3, 42")


def test_rubric_caps_and_coverage(base):
    reply, ctx = base
    reply.rubric[1].score = 3  # memory-hierarchy has errors: at most 1
    reply.rubric = reply.rubric[:3] + [reply.rubric[1].model_copy(update={"criterion": "style"})]
    v = validate(reply, ctx)
    one(v, "exceeds 1")
    one(v, "'hardware-utilization' has no score")
    one(v, "'style' is not in the rubric")


def test_duplicate_priorities(base):
    reply, ctx = base
    reply.items[3].priority = reply.items[2].priority
    one(validate(reply, ctx), "not unique")
