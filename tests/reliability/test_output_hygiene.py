"""Issue 31 item 6: what nki-assist prints and writes stays inert and whole, whatever the kernel does.

- a kernel's exception text with terminal escapes and markdown/HTML reaches neither the terminal
  raw nor the markdown report as markup;
- `-o` into a missing folder is a usage error before anything runs, and the report is written
  whole or not at all;
- SIGTERM cleans up like Ctrl-C: the kernel dies and the temporary folder with the inputs goes;
- two identical reviews ask the LLM once (the cache key has no wall-clock time in it);
- a fork bomb that fills RLIMIT_NPROC is the kernel's error (TC110), not a backend crash (TC103).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from reliability_helpers import REPO, alive, child_env, make_port, run_cli, run_json

HOSTILE = ("raise RuntimeError('\\x1b]0;owned\\x07\\x1b[2J\\x1b[31mRED\\x9b1m\\r\\u202e '"
           "'<script>alert(1)</script> [click](javascript:alert(1)) <javascript:alert(2)> "
           "![img](javascript:alert(3))')")
TERMINAL = [chr(c) for c in (*range(0x00, 0x09), *range(0x0b, 0x20), 0x7f, *range(0x80, 0xa0), 0x202e)]


def _controls(text: str) -> list[str]:
    return sorted({repr(c) for c in text if c in TERMINAL})


def test_kernel_text_never_drives_the_terminal(tmp_path):
    port = make_port(tmp_path, HOSTILE)
    outs = {}
    for name, args in {"simulate": ["simulate", str(port), "--timeout", "20"],
                       "review": ["review", str(port), "--timeout", "20", "--format", "text"],
                       "review-md": ["review", str(port), "--timeout", "20", "--format", "md"]}.items():
        done = run_cli(args)
        assert done.returncode == 1, (name, done.stderr[-400:])
        outs[name] = done.stdout + done.stderr
        assert _controls(outs[name]) == [], name  # before: ESC, BEL, CSI 0x9b, CR, U+202E came through raw
    assert "\\x1b]0;owned\\x07" in outs["simulate"]  # shown as text, so the reader still sees what was there
    assert "\\x1b[31mRED\\x9b1m" in outs["review"]


def test_kernel_text_is_not_markup_in_the_markdown_report(tmp_path):
    port = make_port(tmp_path / "port", HOSTILE)
    report = tmp_path / "review.md"
    done = run_cli(["review", str(port), "--timeout", "20", "--format", "md", "-o", str(report)])
    assert done.returncode == 1, done.stderr[-400:]
    md = report.read_text()
    assert "alert(1)" in md  # the message is there ...
    assert "<script>" not in md and "javascript:" not in md  # ... but not as markup (before: both raw)
    tokens = MarkdownIt("commonmark").parse(md)
    inline = [c for t in tokens for c in (t.children or [])]
    ours = {"<sub>", "</sub>"}  # the footer's own tag
    assert not [t.content for t in tokens + inline if t.type.startswith("html") and t.content.strip() not in ours]
    targets = [t.attrs.get("href") or t.attrs.get("src") for t in inline if t.type in ("link_open", "image")]
    assert all(t.startswith("review-") and t.endswith(".png") for t in targets), targets  # only our plots


def test_output_into_a_missing_folder_is_a_usage_error_before_any_work(tmp_path):
    port = make_port(tmp_path / "port", "import time\ntime.sleep(30)")  # minutes of work, in the issue
    t0 = time.perf_counter()
    done = run_cli(["review", str(port), "--timeout", "60", "-o", str(tmp_path / "nope" / "r.md")])
    assert done.returncode == 2 and time.perf_counter() - t0 < 15, done.stderr[-400:]
    assert "folder" in done.stderr and "does not exist" in done.stderr and "internal error" not in done.stderr
    done = run_cli(["review", str(port), "--timeout", "60", "-o", str(tmp_path)])
    assert done.returncode == 2 and "is a folder" in done.stderr


def test_the_report_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    from nki_assist.commands import common

    target = tmp_path / "report.md"
    target.write_text("the previous report\n")

    class Full(OSError):
        pass

    real = os.fsync

    def full_disk(fd):  # the write went out, the flush to disk fails: ENOSPC
        raise Full(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError):
        common.write_atomic(target, "x" * 100_000)
    monkeypatch.setattr(os, "fsync", real)
    assert target.read_text() == "the previous report\n"  # before: truncated in place
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]  # no temporary file left
    common.write_atomic(target, "new\n")
    assert target.read_text() == "new\n"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_sigterm_cleans_up_like_sigint(tmp_path, sig):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    pidfile = tmp_path / "spinner.pid"
    port = make_port(tmp_path / "port", f"import os\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
                                        "while True:\n    pass")
    cli = subprocess.Popen([sys.executable, "-m", "nki_assist", "simulate", str(port), "--timeout", "120"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env=child_env(TMPDIR=str(tmp)))
    try:
        deadline = time.monotonic() + 150  # start-up on a loaded machine
        while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        kernel = int(pidfile.read_text())
        assert [p.name for p in tmp.iterdir() if p.name.startswith("nki-assist-")]  # the run's folder
        cli.send_signal(sig)
        _, err = cli.communicate(timeout=60)
    finally:
        cli.kill()
    assert cli.returncode == 2, err[-400:]  # before (SIGTERM): -15, folder and input arrays left behind
    assert not alive(kernel)
    assert list(tmp.iterdir()) == []


def test_two_identical_reviews_ask_the_llm_once(tmp_path):
    sys.path.insert(0, str(REPO / "tests" / "fakes"))
    from fake_openai import FakeOpenAI

    spec = REPO / "examples" / "gemm_bias_relu" / "port.toml"
    with FakeOpenAI([], default="valid") as fake:
        docs = []
        for _ in range(2):
            code, doc, err = run_json(["review", str(spec), "--llm", "openai", "--base-url", fake.base_url,
                                       "--model", "local-test-model", "--cache-dir", str(tmp_path / "cache"),
                                       "--fail-on", "never", "--timeout", "120"], timeout=400,
                                      OPENAI_API_KEY="sk-test-reliability-cache-0123456789")
            assert code == 0 and doc is not None, err[-500:]
            docs.append(doc)
    assert fake.calls == 1  # before: 2, the key held the review's wall-clock seconds
    assert docs[0]["assessment"]["drafter"] == docs[1]["assessment"]["drafter"] == "llm"
    assert docs[1]["assessment"]["llm"]["cached"] is True


def test_cache_key_ignores_wall_clock_only():
    from nki_assist.feedback.cache import cache_key

    def key(text):
        return cache_key(model="m", base_url="u", messages=[{"role": "user", "content": text}],
                         schema_version="1", prompt_version="p")

    assert key('{"seconds": 5.378, "elapsed_s": 0.2}') == key('{"seconds": 4.561, "elapsed_s": 1.5}')
    assert key('{"max_abs": 5.378}') != key('{"max_abs": 4.561}')


def _unprivileged() -> list[str] | None:
    """A command prefix that runs Python as an unprivileged user (RLIMIT_NPROC does not bind root)."""
    if os.getuid() != 0:
        return [sys.executable]
    site = next((p for p in sys.path if p.endswith("site-packages")), None)
    for python in (f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}", "/usr/local/bin/python3"):
        if shutil.which("setpriv") and site and os.access(python, os.X_OK):
            probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c",
                                    "import numpy, ml_dtypes, pydantic, nki_assist"], capture_output=True,
                                   env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{REPO}:{site}"}, timeout=60)
            if probe.returncode == 0:
                return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python]
    return None


def test_a_fork_bomb_under_the_process_limit_is_the_kernels_error():
    prefix = _unprivileged()
    if prefix is None:
        pytest.skip("running as root with no way to run Python as an unprivileged user (setpriv + a "
                    "system Python of this version); root is exempt from RLIMIT_NPROC")
    work = Path(tempfile.mkdtemp(prefix="nki-assist-nproc-"))  # pytest's tmp_path is private to root
    try:
        port = make_port(work / "port", "import os\nwhile True:\n    os.fork()")
        for p in [work, work / "port", *(work / "port").iterdir()]:
            p.chmod(0o777)
        site = next((p for p in sys.path if p.endswith("site-packages")), "")
        env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "TMPDIR": str(work),
               "PYTHONPATH": os.pathsep.join([str(REPO), site])}
        done = subprocess.run([*prefix, "-m", "nki_assist", "simulate", str(port), "--timeout", "30",
                               "--format", "json"], capture_output=True, text=True, timeout=180, env=env, cwd=work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert done.returncode == 1 and done.stdout, done.stderr[-600:]
    doc = json.loads(done.stdout)
    rules = [(f["rule"], f["severity"]) for f in doc["findings"]]
    assert ("TC103", "warning") not in rules  # before: "The builtin backend failed: KeyboardInterrupt"
    assert rules == [("TC110", "error")], rules
    assert "RLIMIT_NPROC" in doc["sizes"][0]["error"]
