"""An LLM server that echoes the Authorization header (issue 17, case 3): the key reaches neither the
reply cache on disk nor anything printed or written."""

from __future__ import annotations

import json
import sys

from reliability_helpers import FAKE_KEY, REPO, make_port

sys.path.insert(0, str(REPO / "tests" / "fakes"))
from fake_openai import FakeOpenAI, valid_reply  # noqa: E402

from nki_assist.cli import main  # noqa: E402
from nki_assist.infra.redact import RedactingStream, redact, secret_values  # noqa: E402


def _echoing(body: dict) -> dict:
    """A grounded reply whose free text carries the caller's key, as a header-echoing server would."""
    reply = valid_reply(body)
    reply["summary"] = f"Request from Authorization: Bearer {FAKE_KEY} reviewed."
    for item in reply["items"]:
        item["profiling"] = f"Profile with key {FAKE_KEY} once the fix is in."
    return reply


def test_an_echoed_key_is_not_cached_printed_or_written(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    for var in ("OPENAI_BASE_URL", "NKI_ASSIST_MODEL", "NKI_ASSIST_CACHE_DIR"):
        monkeypatch.delenv(var, raising=False)
    kernel = make_port(tmp_path / "port").parent / "row_sum_nki.py"
    cache, report = tmp_path / "cache", tmp_path / "review.md"
    with FakeOpenAI([_echoing, _echoing], default="valid") as fake:
        args = ["review", "--nki", str(kernel), "--llm", "openai", "--base-url", fake.base_url, "--cache-dir",
                str(cache), "-q"]
        main([*args, "--format", "json"])
        printed = capsys.readouterr()
        main([*args, "--format", "md", "-o", str(report)])
        capsys.readouterr()
    assert fake.calls >= 1 and fake.requests[0]["headers"]["authorization"] == f"Bearer {FAKE_KEY}"
    stored = list(cache.rglob("*.json"))
    assert stored, "the reply was not cached"
    for entry in stored:  # before: the raw reply, key included, was cached as is
        text = entry.read_text()
        assert FAKE_KEY not in text and "***" in text
        json.loads(json.loads(text)["content"])  # still valid JSON for the next run
    assert FAKE_KEY not in printed.out + printed.err
    assert FAKE_KEY not in report.read_text()


def test_redaction_covers_secret_env_values_and_credential_shapes(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-0123456789abcdef")
    monkeypatch.setenv("SHORT_KEY", "abc")  # too short to redact safely: ordinary text keeps "abc"
    assert "tok-0123456789abcdef" in secret_values()
    text = ("t=tok-0123456789abcdef sk-abcdef123456 Bearer xyz.abc AKIAABCDEFGHIJKLMNOP "
            "ghp_abcdefghijklmnopqrstuvwxyz0123 abc")
    assert redact(text) == "t=*** sk-*** Bearer *** AKIA*** gh_*** abc"


def test_redacting_stream_catches_a_secret_split_across_writes(monkeypatch):
    import io

    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    sink = io.StringIO()
    stream = RedactingStream(sink)
    half = len(FAKE_KEY) // 2
    stream.write("key: " + FAKE_KEY[:half])
    stream.write(FAKE_KEY[half:] + " end\nnext")
    stream.flush()
    assert sink.getvalue() == "key: *** end\nnext"
