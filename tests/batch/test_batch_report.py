"""The batch page and `report-batch` (issue 43): distributions, frequent findings with docs links, fastest
correct submissions, one escaped row per submission; rendered in headless Chromium where one is installed."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from batch_helpers import cli

from nki_assist.batch.report import render
from nki_assist.batch.rows import ranked
from nki_assist.batch.stats import summarize
from nki_assist.report.screenshot import FLAGS, find_browser


def _row(ident, verdict, *, correct, est, rules, errors=0, msg="ok", **extra):
    return {"id": ident, "status": "ok", "verdict": verdict, "correct": correct, "score_total": 16 - 4 * errors,
            "rubric.memory-hierarchy": 4 - errors, "errors": errors, "warnings": 0, "infos": 0,
            "top_rule": rules[0].split(":")[0] if rules else None, "top_line": 3, "top_message": msg,
            "est_time_us": est, "est_size": "s", "wall_s": 1.0, "review": f"reviews/{ident}.json", "rules": rules,
            "numerics.s": "pass" if correct else "fail", **extra}


def _rows():
    return ranked([
        _row("fast", "approve", correct=True, est=10.0, rules=[]),
        _row("slow", "revise", correct=True, est=90.0, rules=["PERF109:dma-transpose-in-hot-path"]),
        _row("evil<script>alert(1)</script>", "block", correct=False, est=None, errors=1,
             rules=["SIM101:sim-partition-overflow", "PERF109:dma-transpose-in-hot-path"],
             msg='<img src=x onerror="alert(1)">'),
        {"id": "died", "status": "timeout", "verdict": None, "correct": False, "message": "took longer than 5 s",
         "review": None, "rules": []},
    ])


def test_summary_counts_and_orders():
    s = summarize(_rows())
    assert s["status"] == {"ok": 3, "timeout": 1}
    assert s["verdicts"] == {"approve": 1, "revise": 1, "block": 1}
    assert s["frequent_findings"][0] == {"rule": "PERF109", "name": "dma-transpose-in-hot-path", "submissions": 2}
    assert [f["id"] for f in s["fastest_correct"]] == ["fast", "slow"]
    assert s["ranking"] == ["fast", "slow", "evil<script>alert(1)</script>", "died"]
    assert s["rubric"]["memory-hierarchy"] == {"counts": {"3": 1, "4": 2}, "mean": 3.667}


def test_page_escapes_and_links(tmp_path):
    (tmp_path / "reviews").mkdir()
    (tmp_path / "reviews" / "fast.md").write_text("x")
    html = render(tmp_path, _rows())
    assert "<script>" not in html and "onerror=\"" not in html
    assert "evil&lt;script&gt;" in html
    assert 'href="https://github.com/nki-assist/nki-assist/blob/main/docs/rules/dma-transpose-in-hot-path.md"' in html
    assert 'href="reviews/fast.md"' in html  # the most readable form written
    assert html.count('<tr class="row">') == 4
    assert not re.search(r'(src|href)="(https?:)?//(?!github.com/nki-assist)', html)  # nothing fetched


def test_report_batch_command(tmp_path):
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows()) + '{"torn": ')
    done = cli(["report-batch", str(tmp_path), "--format", "json"])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ranking"][0] == "fast"
    assert (tmp_path / "report.html").is_file()
    missing = cli(["report-batch", str(tmp_path / "nope")])
    assert missing.returncode == 2 and "no results.jsonl" in missing.stderr


def test_page_renders_in_headless_chromium(tmp_path):
    browser = find_browser()
    if browser is None:
        pytest.skip("no Chromium/Chrome (apt-get install -y chromium; CI installs it in .ci/run before the tests)")
    page = tmp_path / "report.html"
    page.write_text(render(tmp_path, _rows()))
    done = subprocess.run([browser, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                           page.as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    assert dom.count('<tr class="row">') == 4  # the browser built every row
    assert "<script" not in dom  # the hostile id stayed text
    assert "Most frequent findings" in dom and "Fastest correct submissions" in dom
