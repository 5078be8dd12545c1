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
