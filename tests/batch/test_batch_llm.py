"""`--llm openai --llm-batch` (issue 43): drafts through the Batch API (one upload, results matched back by id
into the reply cache), per request for a failed line or a server without the Batch API."""

from __future__ import annotations

import json

import pytest
from batch_helpers import cli, counts, rows, small_batch  # also puts tests/fakes on sys.path
from fake_openai import FakeOpenAI

pytest.importorskip("openai", reason="the LLM drafter needs the [llm] extra")


def _run(tmp_path, fake, name):
    manifest = small_batch(tmp_path / "b", 3)
    out = tmp_path / name
    done = cli(["review", str(manifest), "-o", str(out), "--jobs", "2", "--llm", "openai", "--llm-batch",
                "--model", "fake-model", "--fail-on", "never"],
               OPENAI_API_KEY="sk-test-batch", OPENAI_BASE_URL=fake.base_url,
               NKI_ASSIST_CACHE_DIR=str(tmp_path / f"cache-{name}"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert counts(done.stderr) == (3, 0)
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
