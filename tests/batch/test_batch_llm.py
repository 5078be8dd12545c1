"""`--llm openai --llm-batch` (issue 43): drafts through the Batch API (one upload, results matched back by id
into the reply cache), per request for a failed line or a server without the Batch API."""

from __future__ import annotations

import json

import pytest
from batch_helpers import cli, counts, rows, small_batch  # also puts tests/fakes on sys.path
from fake_openai import FakeOpenAI

pytest.importorskip("openai", reason="the LLM drafter needs the [llm] extra")


def _run(tmp_path, fake, name):
    done, drafters, paths = _run_manifest(tmp_path, fake, small_batch(tmp_path / "b", 3), name)
    assert counts(done.stderr) == (3, 0)
    return done, drafters, paths


def _run_manifest(tmp_path, fake, manifest, name, *extra):
    out = tmp_path / name
    done = cli(["review", str(manifest), "-o", str(out), "--jobs", "2", "--llm", "openai", "--llm-batch",
                "--model", "fake-model", "--fail-on", "never", *extra],
               OPENAI_API_KEY="sk-test-batch", OPENAI_BASE_URL=fake.base_url,
               NKI_ASSIST_CACHE_DIR=str(tmp_path / f"cache-{name}"))
    assert done.returncode == 0, done.stderr[-3000:]
    drafters = [json.loads((out / r["review"]).read_text())["assessment"]["drafter"] for r in rows(out)]
    paths = [r["path"] for r in fake.requests]
    return done, drafters, paths


def test_drafts_come_from_one_batch_and_a_failed_line_is_asked_again(tmp_path):
    with FakeOpenAI(batch_api=True, batch_failures=1) as fake:
        done, drafters, paths = _run(tmp_path, fake, "batch")
    assert drafters == ["llm"] * 3
    assert paths.count("/v1/files") == 1 and paths.count("/v1/batches") == 1
    assert paths.count("/v1/chat/completions") == 1  # only the failed line went per request
    (upload,) = fake.files.values().__iter__().__next__().decode().splitlines()[:1]
    line = json.loads(upload)
    assert line["url"] == "/v1/chat/completions" and len(line["custom_id"]) == 64
    assert line["body"]["model"] == "fake-model" and line["body"]["messages"]
    assert "3 requests, 3 submitted, 2 answered" in done.stderr


def test_server_without_batch_api_falls_back_per_request(tmp_path):
    with FakeOpenAI(batch_api=False) as fake:
        done, drafters, paths = _run(tmp_path, fake, "nobatch")
    assert drafters == ["llm"] * 3
    assert paths.count("/v1/chat/completions") == 3
    assert "per request instead: the Batch API is unavailable" in done.stderr


def test_each_submission_is_reviewed_once(tmp_path):
    """The capture pass's reviews are re-drafted, not reviewed again: the kernels run as often as in a batch
    without the LLM (each kernel file counts its executions in a log)."""
    manifest = small_batch(tmp_path / "b", 2)
    log = tmp_path / "runs.log"
    for k in (tmp_path / "b").rglob("*_nki.py"):
        k.write_text(k.read_text() + f"\nwith open({str(log)!r}, 'a') as _log:\n    _log.write('x')\n")
    plain = cli(["review", str(manifest), "-o", str(tmp_path / "plain"), "--jobs", "2", "--fail-on", "never"])
    assert plain.returncode == 0, plain.stderr[-2000:]
    once = log.read_text().count("x")
    assert once >= 2  # every submission's kernel ran
    log.unlink()
    with FakeOpenAI(batch_api=True) as fake:
        done, drafters, _ = _run_manifest(tmp_path, fake, manifest, "batch", "--format", "html")
    assert drafters == ["llm"] * 2 and log.read_text().count("x") == once
    # the HTML pages keep the plots the capture pass drew
    assert all("data:image/png;base64," in (tmp_path / "batch" / r["review"].replace(".json", ".html")).read_text()
               for r in rows(tmp_path / "batch"))
    # the same findings as the plain batch: only the assessment was drafted again
    for r in rows(tmp_path / "batch"):
        mine = json.loads((tmp_path / "batch" / r["review"]).read_text())
        theirs = json.loads((tmp_path / "plain" / r["review"]).read_text())
        assert [f["id"] + f["rule"] for f in mine["findings"]] == [f["id"] + f["rule"] for f in theirs["findings"]]
