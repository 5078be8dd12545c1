"""LLM text is bounded and inert (issue 44, case 2): in the HTML report no raw HTML, no remote link or image and
a Content-Security-Policy; in the client a cap on the reply's size and on the whole reply's time."""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
from test_report_reader import parse, review  # noqa: E402  (a review with findings and numerics)

from nki_assist.feedback.llm import Session  # noqa: E402
from nki_assist.feedback.llm_limits import MAX_REPLY_BYTES  # noqa: E402
from nki_assist.report.html import render_html  # noqa: E402

HOSTILE = ("See F1. ![t](http://evil.example/track.png) <a href=\"http://evil.example/x\">click</a> "
           "[docs](http://evil.example/docs) <http://evil.example/auto> <img src=x onerror=alert(1)>")


def test_llm_text_in_the_html_report_loads_and_links_nothing_outside_it():
    r = review()
    r.assessment.summary = HOSTILE
    html = render_html(r)
    root = parse(html)
    assert [i.get("src") for i in root.iter("img") if not (i.get("src") or "").startswith("data:")] == []
    hrefs = [a.get("href") or "" for a in root.iter("a")]
    assert not [h for h in hrefs if "evil" in h]  # before: <img src="http://evil..."> and <a href="http://evil...">
    assert "#F1" in hrefs  # the report's own anchors still link
    meta = [m for m in root.iter("meta") if m.get("http-equiv") == "Content-Security-Policy"]
    assert meta and "default-src 'none'" in meta[0].get("content") and "img-src data:" in meta[0].get("content")
    assert "onerror" not in "".join(f"{k}={v}" for el in root.iter() for k, v in el.attrib.items())


class _Server:
    """A Chat Completions endpoint on 127.0.0.1 that answers with `body`, sending `chunk` bytes every `every_s`."""

    def __init__(self, body: bytes, chunk: int, every_s: float):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", "0")))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                try:
                    for i in range(0, len(body), chunk):
                        self.wfile.write(body[i:i + chunk])
                        self.wfile.flush()
                        time.sleep(every_s)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                outer.done = True

            def log_message(self, *a):
                pass

        self.done = False
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def _ask(url: str, timeout_s: float):
    s = Session(model="gpt-test", base_url=url, api_key="test", timeout_s=timeout_s, max_retries=0, cache=None)
    s.client()  # the SDK's import is not the reply's time
    t0 = time.monotonic()
    try:
        return s.ask([{"role": "user", "content": "hi"}]), time.monotonic() - t0
    finally:
        s.close()


def _reply(content: str) -> bytes:
    return json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "gpt-test",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content}}]}).encode()


def test_a_trickled_reply_is_cut_at_the_timeout_for_the_whole_reply():
    with _Server(_reply("{}"), chunk=1, every_s=0.25) as url:  # ~40 s for the whole body, one byte per read
        res, took = _ask(url, timeout_s=2.0)
    assert res.reply is None and "took more than 2 s" in res.problem, res.problem
    assert took < 8, took  # before: the per-read timeout never fired; the call took the whole ~40 s


def test_a_huge_reply_is_not_read_past_the_cap():
    big = _reply("x" * (5 * MAX_REPLY_BYTES))
    with _Server(big, chunk=1 << 16, every_s=0) as url:
        res, _ = _ask(url, timeout_s=30)
    assert res.reply is None and f"{MAX_REPLY_BYTES:,} bytes" in res.problem, res.problem
    assert res.raw == ""  # nothing of it kept (before: the whole 5 MiB, cached and shown)
