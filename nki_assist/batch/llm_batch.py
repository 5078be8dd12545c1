"""`--llm openai --llm-batch`: a batch's LLM drafts through the OpenAI Batch API, joined to the reviews through
the LLM reply cache (feedback/cache.py).

1. capture: the reviews run with their LLM pointed at a local server that records each request and refuses it
   (so each draft falls back at once); each review's JSON and plots are kept for step 3;
2. submit: the requests not already in the cache go up as one JSONL file (`custom_id` = the cache key under
   the real server's URL), one batch; its results are matched back by `custom_id` into the cache;
3. draft: each review captured in step 1 is drafted again with the real settings (its kernels do not run
   again): every draft the Batch API answered is a cache hit, the rest (failed lines, follow-up turns, a server
   without the Batch API) are asked per request.

The capture server listens on 127.0.0.1 of this machine, so the capture step runs on the local pool.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..feedback.cache import ReplyCache, cache_key
from ..feedback.llm import resolve_settings
from ..feedback.prompts import prompt_version
from ..feedback.reply import REPLY_SCHEMA_VERSION
from ..infra.redact import redact
from .engine import BatchSummary, run_batch
from .keys import task_key
from .pool import LocalPool
from .store import BatchStore
from .task import BatchConfig

MAX_WAIT_S = 24 * 3600.0  # the Batch API's completion window
POLL_S = (1.0, 30.0)  # first and longest wait between status checks
DONE = {"completed", "failed", "expired", "cancelled"}


class _Capture:
    """A local endpoint that records chat-completion requests and answers 400 (no retries, immediate fallback)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        lock = threading.Lock()
        bodies = self.bodies

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                if isinstance(body, dict) and self.path.rstrip("/").endswith("/chat/completions"):
                    with lock:
                        bodies.append(body)
                data = b'{"error": {"message": "captured for the Batch API", "type": "invalid_request_error"}}'
                self.send_response(400)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> "_Capture":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _key(body: dict, model: str, url: str) -> str:
    return cache_key(model=model, base_url=url, messages=body.get("messages") or [],
                     schema_version=REPLY_SCHEMA_VERSION, prompt_version=prompt_version())


def submit(bodies: list[dict], *, model: str, url: str, api_key: str | None, cache: ReplyCache,
           timeout_s: float = 60.0, say=print) -> dict[str, Any]:
    """Send the requests missing from the cache as one batch and fill the cache with its answers."""
    # deferred: openai is the [llm] extra, checked by the command before a batch starts
    import openai

    lines: dict[str, dict] = {}
    for body in bodies:
        key = _key(body, model, url)
        if cache.get(key) is None:
            lines[key] = {"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": body}
    stats: dict[str, Any] = {"captured": len(bodies), "submitted": len(lines), "filled": 0, "fallback": None}
    if not lines:
        return stats
    client = openai.OpenAI(api_key=api_key or "unused", base_url=url, timeout=timeout_s, max_retries=2)
    try:
        data = "".join(json.dumps(v) + "\n" for v in lines.values()).encode()
        upload = client.files.create(file=("nki-assist-batch.jsonl", data), purpose="batch")
        batch = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions",
                                      completion_window="24h", metadata={"tool": "nki-assist"})
        say(f"LLM batch {batch.id}: {len(lines)} requests submitted")
        t0, wait = time.monotonic(), POLL_S[0]
        while batch.status not in DONE:
            if time.monotonic() - t0 > MAX_WAIT_S:
                stats["fallback"] = f"batch {batch.id} still {batch.status} after {MAX_WAIT_S:g} s"
                return stats
            time.sleep(wait)
            wait = min(wait * 2, POLL_S[1])
            batch = client.batches.retrieve(batch.id)
        if not batch.output_file_id:
            stats["fallback"] = f"batch {batch.id} ended {batch.status} with no output"
            return stats
        output = client.files.content(batch.output_file_id).text
    except openai.OpenAIError as exc:  # no Batch API here (404), no permission, ...: per-request drafts
        stats["fallback"] = redact(f"the Batch API is unavailable ({type(exc).__name__}: {exc})"[:300])
        return stats
    finally:
        client.close()
    for line in output.splitlines():
        try:
            item = json.loads(line)
            resp = item.get("response") or {}
            body = resp.get("body") or {}
            content = body["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            continue  # a failed line: that draft is asked per request
        key = item.get("custom_id")
        if key in lines and resp.get("status_code") == 200 and isinstance(content, str):
            usage = body.get("usage") or {}
            cache.put(key, {"content": redact(content), "model": model, "prompt_tokens": usage.get("prompt_tokens"),
                            "completion_tokens": usage.get("completion_tokens"), "batch": batch.id})
            stats["filled"] += 1
    return stats


def run_with_llm_batch(tasks, cfg: BatchConfig, runner, store: BatchStore, *, force: bool = False,
                       quiet: bool = False) -> BatchSummary:
    review = cfg.review
    if not review.get("cache_dir"):
        raise ValueError("--llm-batch needs the LLM reply cache (drop --no-cache)")
    model, url, api_key = resolve_settings(review.get("model"), review.get("base_url"))
    say = (lambda m: None) if quiet else (lambda m: print(m, file=sys.stderr))
    opts = cfg.key_options()
    todo = [t for t in tasks if force or not store.done(t.id, task_key(t, opts))]
    if not todo:
        return run_batch(tasks, cfg, runner, store, force=force, quiet=quiet)
    say(f"LLM batch: reviewing {len(todo)} submissions and capturing their drafting requests")
    with tempfile.TemporaryDirectory(prefix=".llm-capture-", dir=store.dir) as tmp:
        with _Capture() as cap:
            capture_cfg = BatchConfig(review={**review, "base_url": cap.url, "cache_dir": None}, formats=("json",),
                                      task_timeout_s=cfg.task_timeout_s, task_memory_mb=cfg.task_memory_mb,
                                      sandbox=cfg.sandbox, keep_plots="html" in cfg.formats)
            local = runner if isinstance(runner, LocalPool) else LocalPool(2)
            run_batch(todo, capture_cfg, local, BatchStore(tmp), force=True, quiet=True)
            bodies = list(cap.bodies)
        stats = submit(bodies, model=model, url=url, api_key=api_key, cache=ReplyCache(review["cache_dir"]),
                       timeout_s=review.get("llm_timeout_s", 60.0), say=say)
        say(f"LLM batch: {stats['captured']} requests, {stats['submitted']} submitted, {stats['filled']} answered"
            + (f"; per request instead: {stats['fallback']}" if stats["fallback"] else ""))
        # the drafting pass re-drafts each captured review (the kernels do not run again); a submission whose
        # capture failed, or a worker that cannot read this folder, is reviewed in full
        return run_batch(tasks, replace(cfg, redraft_dir=tmp), runner, store, force=force, quiet=quiet)
