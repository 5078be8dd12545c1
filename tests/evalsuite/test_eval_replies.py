"""Recorded LLM replies for `nki-assist eval --llm replay` (evalsuite/replies.py, issue 16).

Every eval case carries a mechanical reply (generated) and a paraphrased one (written by us); both must
describe today's findings and pass the grounding check, or this test says how to re-record them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from reviewed_ports import EVAL_CASES, ROOT

from nki_assist.evalsuite import replies
from nki_assist.evalsuite.replies import freshness, remap_ids, replay_assessment
from nki_assist.feedback import load_rubric
from nki_assist.feedback.mechanical import mechanical_reply
from nki_assist.findings import Finding, prioritize
from nki_assist.api.hardware import get_target

CASE_SPECS = [p.relative_to(ROOT).as_posix() for p in EVAL_CASES]


@pytest.mark.parametrize("kind", ["mechanical", "paraphrase"])
def test_every_case_has_a_fresh_grounded_reply(reviewed_ports, kind):
    problems = {}
    for spec in CASE_SPECS:
        port = reviewed_ports[spec]
        a = replay_assessment(port.review, port.dir, kind)
        if a.drafter != "llm":
            problems[port.dir.name] = [a.llm.fallback_reason, *a.llm.violations[:5]]
    assert problems == {}, (
        f"{kind} replies no longer match the findings. Mechanical ones: `nki-assist eval evals/cases --llm "
        "replay --replies mechanical --record`; paraphrased ones are edited by hand (see docs/evals.md).\n"
        + json.dumps(problems, indent=2))


def test_mechanical_replies_on_disk_are_what_the_builder_makes(reviewed_ports):
    """A rebuilt mechanical reply equals the committed one (so the files are not edited by hand)."""
    differ = []
    for spec in CASE_SPECS:
        port = reviewed_ports[spec]
        reply, _ = replies.load(replies.reply_path(port.dir, "mechanical"))
        built = mechanical_reply(port.review, load_rubric(None), get_target(port.review.port.target))
        if reply != built:
            differ.append(port.dir.name)
    assert differ == [], f"rebuild with `nki-assist eval evals/cases --llm replay --replies mechanical --record`: {differ}"


def test_paraphrases_are_not_the_mechanical_text(reviewed_ports):
    """The paraphrased set is a different kind of reply: merged items, own wording."""
    merged = same = 0
    for spec in CASE_SPECS:
        port = reviewed_ports[spec]
        para, _ = replies.load(replies.reply_path(port.dir, "paraphrase"))
        messages = {f.message for f in port.review.findings}
        same += sum(it.what in messages for it in para.items)
        merged += sum(len(it.finding_ids) > 1 for it in para.items)
    assert same == 0 and merged >= 15


# -- freshness ------------------------------------------------------------------------------------
CASE = "rowmax_affine_carry_legacy"


@pytest.fixture
def case_copy(tmp_path, reviewed_ports):
    """A copy of one case (sources, gold) with a mechanical reply written for today's findings."""
    src = ROOT / "evals" / "cases" / CASE
    dst = tmp_path / CASE
    shutil.copytree(src, dst)
    review = reviewed_ports[f"evals/cases/{CASE}/port.toml"].review
    replies.record_mechanical(review, dst)
    return dst, review


def _with(review, findings):
    return review.model_copy(update={"findings": prioritize(findings)})


def test_fresh_reply_is_used(case_copy):
    d, review = case_copy
    a = replay_assessment(review, d, "mechanical")
    assert a.drafter == "llm" and a.llm.model == "replay:mechanical"


def test_new_error_finding_makes_the_reply_stale(case_copy):
    d, review = case_copy
    extra = Finding(rule="SIM111", name="sim-uninitialized-read", category="uninitialized-read", severity="error",
                    file=review.findings[0].file, line=2, message="Reads a tile nothing wrote.")
    # an extra error sorts before the others: today's ids shift, and an unseen error makes the reply stale
    shifted = _with(review, [extra, *review.findings])
    fresh = freshness(json.loads((d / replies.FILES["mechanical"]).read_text())["written_for"], list(shifted.findings))
    assert fresh.stale and fresh.new_errors and not fresh.gone
    assert fresh.id_map["F1"] != "F1"  # the recorded F1 is now another id
    a = replay_assessment(shifted, d, "mechanical")
    assert a.drafter == "fallback"
    assert "stale" in a.llm.fallback_reason and "new error finding" in a.llm.fallback_reason
    assert f"--replies mechanical --record --case {CASE}" in a.llm.fallback_reason


def test_renumbering_alone_keeps_the_reply(case_copy):
    d, review = case_copy
    reply, written_for = replies.load(d / replies.FILES["mechanical"])
    # record the same findings under other ids (reversed): the reply must be mapped back, text included
    rev = {k["id"]: f"F{len(written_for) - i}" for i, k in enumerate(written_for)}
    doc = json.loads((d / replies.FILES["mechanical"]).read_text())
    for k in doc["written_for"]:
        k["id"] = rev[k["id"]]
    doc["reply"] = json.loads(remap_ids(reply, rev).model_dump_json())
    doc["reply"]["items"][0]["why"] += f" (see {rev['F1']})"
    (d / replies.FILES["mechanical"]).write_text(json.dumps(doc))
    a = replay_assessment(review, d, "mechanical")
    assert a.drafter == "llm", a.llm.fallback_reason
    assert a.items[0].finding_ids == ["F1"] and a.items[0].why.endswith("(see F1)")


def test_gone_finding_makes_the_reply_stale(case_copy):
    d, review = case_copy
    fewer = review.model_copy(update={"findings": [f for f in review.findings if f.rule != "NKI108"]})
    a = replay_assessment(fewer, d, "mechanical")
    assert a.drafter == "fallback"
    assert "no longer reported" in a.llm.fallback_reason and "NKI108" in a.llm.fallback_reason


def test_paraphrase_staleness_says_to_edit_by_hand(case_copy):
    d, review = case_copy
    shutil.copy(ROOT / "evals" / "cases" / CASE / replies.FILES["paraphrase"], d)
    fewer = review.model_copy(update={"findings": [f for f in review.findings if f.rule != "NKI108"]})
    a = replay_assessment(fewer, d, "paraphrase")
    assert a.drafter == "fallback" and "edit llm_reply.paraphrase.json by hand" in a.llm.fallback_reason


def test_changed_numbers_fail_grounding_with_a_hint(case_copy):
    d, review = case_copy
    doc = json.loads((d / replies.FILES["mechanical"]).read_text())
    doc["reply"]["items"][0]["what"] += " It reads 7,919 stale elements."
    (d / replies.FILES["mechanical"]).write_text(json.dumps(doc))
    a = replay_assessment(review, d, "mechanical")
    assert a.drafter == "fallback" and "failed the grounding check (1 problem(s))" in a.llm.fallback_reason
    assert any("7,919" in v for v in a.llm.violations)


@pytest.mark.parametrize("content, needle", [
    ("{not json", "is not valid JSON"),
    ('{"schema": "nki-assist/llm-replay@9", "written_for": [], "reply": {}}', "is not 'nki-assist/llm-replay@1'"),
    ('{"schema": "nki-assist/llm-replay@1", "written_for": 3, "reply": {}}', "`written_for` must be a list"),
    ('{"verdict": "block"}', "is not a valid assessment reply"),
])
def test_malformed_reply_files_fall_back_with_the_reason(case_copy, content, needle):
    d, review = case_copy
    (d / replies.FILES["mechanical"]).write_text(content)
    a = replay_assessment(review, d, "mechanical")
    assert a.drafter == "fallback" and needle in a.llm.fallback_reason


def test_missing_reply_and_unknown_kind(case_copy):
    d, review = case_copy
    (d / replies.FILES["mechanical"]).unlink()
    a = replay_assessment(review, d, "mechanical")
    assert a.drafter == "fallback" and a.llm.fallback_reason == "no recorded reply (llm_reply.mechanical.json)"
    with pytest.raises(ValueError, match="unknown reply kind"):
        replay_assessment(review, d, "verbatim")


# -- CLI ------------------------------------------------------------------------------------------
def _eval(cases: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "nki_assist", "eval", str(cases), "--output-dir", str(out), "--format", "json",
           "--case", CASE, *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=ROOT)


def test_cli_rebuilds_mechanical_replies_and_scores_them(tmp_path):
    cases = tmp_path / "cases"
    shutil.copytree(ROOT / "evals" / "cases" / CASE, cases / CASE)
    (cases / CASE / replies.FILES["mechanical"]).unlink()
    proc = _eval(cases, tmp_path / "out", "--llm", "replay", "--replies", "mechanical", "--record")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["replies"] == "mechanical" and summary["llm_drafted"] == 1 and summary["llm_fallbacks"] == 0
    assert (cases / CASE / replies.FILES["mechanical"]).is_file()
    assert (cases / CASE / replies.FILES["mechanical"]).read_text() == (
        ROOT / "evals" / "cases" / CASE / replies.FILES["mechanical"]).read_text()
    md = (tmp_path / "out" / "summary.md").read_text()
    assert md.startswith("# nki-assist eval (replay) with mechanical replies") and "| llm_drafted | 1 |" in md


@pytest.mark.parametrize("extra, message", [
    (["--llm", "replay", "--replies", "paraphrase", "--record"], "paraphrased replies are written by hand"),
    (["--replies", "mechanical"], "--replies needs --llm replay"),
])
def test_cli_usage_errors(tmp_path, extra, message):
    proc = _eval(ROOT / "evals" / "cases", tmp_path / "out", *extra)
    assert proc.returncode == 2 and message in proc.stderr
