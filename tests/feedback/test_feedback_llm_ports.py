"""Issue 16 acceptance: LLM drafts of real reviews through the real OpenAI SDK and the local fake server.

The fake's `valid` reply restates each finding (what = message, fix = fix); before issue 16 the grounding
check rejected it on most ports ("4,096" in a message, "line 19" of a loop). It must now be used as is, on
the first attempt: end to end through the CLI for the example port, and through draft_assessment for every
eval case, also when the reply rewrites every number in another faithful format.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fake_openai import FakeOpenAI, valid_reply
from number_rewrites import rewrite
from reviewed_ports import EVAL_CASES, EXAMPLES, ROOT

from nki_assist.feedback import draft_assessment

SPECS = [p.relative_to(ROOT).as_posix() for p in EXAMPLES + EVAL_CASES]


def test_cli_review_of_the_example_port_is_llm_drafted(tmp_path):
    spec = EXAMPLES[0]
    with FakeOpenAI(["valid"]) as fake:
        proc = subprocess.run(
            [sys.executable, "-m", "nki_assist", "review", str(spec), "--format", "json", "--llm", "openai",
             "--base-url", fake.base_url, "--model", "local-test-model", "--no-cache", "--fail-on", "never"],
            capture_output=True, text=True, timeout=240, cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    review = json.loads(proc.stdout)
    a = review["assessment"]
    assert a["drafter"] == "llm", a["llm"]
    assert a["llm"]["attempts"] == 1 and a["llm"]["violations"] == [] and a["llm"]["fallback_reason"] is None
    assert fake.calls == 1
    # one item per finding, the message verbatim: the reply that used to be rejected
    assert [it["finding_ids"] for it in a["items"]] == [[f["id"]] for f in review["findings"]]
    assert [it["what"] for it in a["items"]] == [f["message"] for f in review["findings"]]
    assert any("4,096" in it["what"] for it in a["items"])
    assert any("(line " in it["what"] for it in a["items"])


def _paraphrased(body: dict) -> dict:
    reply = valid_reply(body)
    for it in reply["items"]:
        it["what"], it["fix"] = rewrite(it["what"]), rewrite(it["fix"])
    return reply


@pytest.mark.parametrize("behaviour", ["valid", "paraphrased"])
def test_every_eval_case_is_llm_drafted_through_the_sdk(reviewed_ports, behaviour):
    script = "valid" if behaviour == "valid" else _paraphrased
    rejected = {}
    with FakeOpenAI([], default=script) as fake:
        for spec in SPECS:
            port = reviewed_ports[spec]
            a = draft_assessment(port.review, llm="openai", base_url=fake.base_url, model="local-test-model",
                                 sources=port.sources, timeout_s=10.0, max_retries=0)
            if a.drafter != "llm" or a.llm.attempts != 1:
                rejected[spec] = (a.llm.fallback_reason, a.llm.violations)
    assert rejected == {}
    assert fake.calls == len(SPECS)
