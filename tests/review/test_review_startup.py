"""Review start-up (issue 30 item 4): a JSON review imports nothing it does not use, and its warm
sandbox worker (toolchain/zygote.py) starts before the engine imports, so the two overlap, and serves
every run of the review."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "gemm_bias_relu" / "port.toml"

UNUSED = ("matplotlib", "openai", "markdown_it", "rich", "pygls", "lsprotocol", "nki_assist.feedback.llm",
          "nki_assist.numerics.plots", "nki_assist.perf.plots", "nki_assist.report.html", "nki_assist.lsp_server")

PROBE = """
import json, sys
from nki_assist.toolchain import zygote
starts, spawns = [], []
_init, _spawn = zygote.Zygote.__init__, zygote.Zygote.spawn
def init(self, *a, **k):
    starts.append("nki_assist.findings" in sys.modules or "numpy" in sys.modules)
    _init(self, *a, **k)
def spawn(self, *a, **k):
    spawns.append(self.proc.pid)
    return _spawn(self, *a, **k)
zygote.Zygote.__init__, zygote.Zygote.spawn = init, spawn
from nki_assist.cli import main
rc = main(["review", sys.argv[1], "--format", "json", "-q"] + sys.argv[2:])
print(json.dumps({"rc": rc, "engine_loaded_at_start": starts, "spawns": spawns,
                  "loaded": sorted(m for m in %r if m in sys.modules)}), file=sys.stderr)
""" % (UNUSED,)


def _probe(*extra: str) -> tuple[dict, dict]:
    done = subprocess.run([sys.executable, "-c", PROBE, str(EXAMPLE), *extra], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    return json.loads(done.stderr.strip().splitlines()[-1]), json.loads(done.stdout)


def test_a_json_review_imports_no_unused_heavy_module_and_forks_every_run_from_one_warm_worker():
    probe, review = _probe()
    assert review["numerics"] is not None and review["findings"], "the example was not reviewed"
    assert probe["loaded"] == [], probe["loaded"]
    # one worker, started before NumPy or the findings model were imported in this process
    assert probe["engine_loaded_at_start"] == [False]
    assert len(probe["spawns"]) >= 1 and len(set(probe["spawns"])) == 1


def test_no_run_review_starts_no_worker():
    probe, review = _probe("--no-run")
    assert review["numerics"] is None
    assert probe["engine_loaded_at_start"] == [] and probe["spawns"] == []


ROWSUM = ROOT / "tests" / "fixtures" / "ports" / "rev_rowsum_fp32"


def _port(root: Path, inject: str) -> Path:
    """The row-sum fixture port in `root`, its kernel running `inject` (Python lines) first."""
    import shutil

    shutil.copytree(ROWSUM, root)
    kernel = root / "row_sum_nki.py"
    anchor = "    P, L = x.shape\n"
    kernel.write_text(kernel.read_text().replace(anchor, anchor + "".join(f"    {ln}\n" for ln in inject.splitlines())))
    return root / "port.toml"


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _json(review) -> dict:
    doc = review.to_json()
    doc["numerics"].pop("seconds", None)
    return doc


def test_the_kernel_runs_while_the_sources_are_checked_with_the_same_review(tmp_path, monkeypatch):
    import threading
    import time

    from nki_assist.review import pipeline as engine

    marker = tmp_path / "kernel-ran"
    spec = _port(tmp_path / "port", f"open({str(marker)!r}, 'a').close()")
    seen = []
    static = engine._static

    def slow_static(*args, **kwargs):
        deadline = time.monotonic() + (0 if seen else 120)  # the sandbox start on a loaded machine
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        seen.append(marker.exists())
        return static(*args, **kwargs)

    monkeypatch.setattr(engine, "_static", slow_static)
    ahead = engine.review_port(str(spec), engine.ReviewOptions(plots=False))
    assert seen and seen[0], "the kernel had not run when the static checks began"
    monkeypatch.setattr(engine, "_static", static)
    marker.unlink()
    # a cancellable review (the language server's) runs the kernel after the checks, as before: same review
    in_order = engine.review_port(str(spec), engine.ReviewOptions(plots=False), cancel=threading.Event())
    assert marker.exists()
    assert ahead.review.numerics is not None and ahead.review.findings
    assert _json(ahead.review) == _json(in_order.review)


def test_a_terminated_review_kills_the_kernel_it_started_ahead_and_removes_its_folder(tmp_path):
    import os
    import signal
    import time

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    pidfile = tmp_path / "spinner.pid"
    spec = _port(tmp_path / "port", f"open({str(pidfile)!r}, 'w').write(str(__import__('os').getpid()))\n"
                                    "while True:\n    pass")
    env = {k: v for k, v in os.environ.items() if k not in ("NKI_ASSIST_SANDBOX", "NKI_ASSIST_NO_ZYGOTE")}
    cli = subprocess.Popen([sys.executable, "-m", "nki_assist", "review", str(spec), "--format", "json", "-q",
                            "--timeout", "120"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           cwd=ROOT, env={**env, "TMPDIR": str(tmp)})
    try:
        deadline = time.monotonic() + 150
        while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        kernel = int(pidfile.read_text())
        cli.send_signal(signal.SIGTERM)
        _, err = cli.communicate(timeout=60)
    finally:
        cli.kill()
    assert cli.returncode == 2, err[-400:]
    assert not _alive(kernel)
    assert list(tmp.iterdir()) == [], [(p, list(p.rglob("*"))) for p in tmp.iterdir()]
