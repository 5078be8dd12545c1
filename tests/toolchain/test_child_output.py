"""What a child prints or raises is read in bounded size, and a kernel that stops the warm zygote cannot hang the
run (issue 44, case 3). The parent runs in its own process where its memory or a hang is what is measured."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

PARENT = """
import json, resource, sys, time
sys.path.insert(0, {here!r})
from nki_assist.toolchain.sandbox import run_in_child, warm_sandbox
t0 = time.monotonic()
with warm_sandbox({warm}):
    out = run_in_child({call!r}, {kwargs!r}, timeout_s={timeout}, memory_mb=1024)
# VmHWM: this process's own peak (ru_maxrss keeps the peak of the process it was forked from, across exec)
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")) / 1024
print(json.dumps({{"status": out.status, "value": out.value, "error": out.error, "traceback": out.traceback,
                  "stderr": len(out.stderr), "seconds": time.monotonic() - t0, "rss_mb": hwm}}))
"""


def _parent(call: str, kwargs: dict, *, timeout: float = 30, warm: bool = False, limit: float = 240) -> dict:
    code = PARENT.format(here=str(HERE), call=call, kwargs=kwargs, timeout=timeout, warm=warm)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=limit)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_child_printing_hundreds_of_megabytes_costs_the_parent_a_tail():
    out = _parent("output_tasks:flood", {"mb": 300})
    assert out["status"] == "ok" and out["value"] == 300
    assert out["stderr"] <= 4000
    assert out["rss_mb"] < 200, out  # before: the whole 300 MiB file was read, then trimmed (> 600 MiB)


def test_a_huge_exception_message_comes_back_once_and_capped():
    out = _parent("output_tasks:raise_big", {"chars": 50_000_000})
    assert out["status"] == "error" and out["error"].startswith("RuntimeError: yyy")
    assert len(out["error"]) < 2100 and out["error"].endswith("[...]")
    assert "yyyyyyyyyy" not in out["traceback"]  # before: the message again, in full
    assert out["rss_mb"] < 400, out


def test_a_kernel_that_stops_the_warm_zygote_cannot_hang_the_run():
    out = _parent("output_tasks:stop_zygote", {}, timeout=3, warm=True, limit=120)  # before: never returned
    assert out["seconds"] < 60, out
    assert out["status"] in ("ok", "timeout", "crashed"), out


def test_the_simulator_reports_a_huge_kernel_message_once_and_capped(tmp_path):
    from nki_assist.toolchain.builtin import BuiltinBackend

    import ml_dtypes
    import numpy as np

    rowsum = HERE.parent / "fixtures" / "ports" / "rev_rowsum_fp32" / "row_sum_nki.py"
    kernel = tmp_path / "row_sum_nki.py"
    kernel.write_text(rowsum.read_text().replace("    P, L = x.shape\n",
                                                 "    P, L = x.shape\n    raise RuntimeError('z' * 20_000_000)\n", 1))
    x = np.zeros((128, 512), ml_dtypes.bfloat16)
    res = BuiltinBackend().run(str(kernel), "row_sum", [x], timeout_s=60, memory_mb=2048)
    assert res.status == "kernel-error" and "zzzz" in res.error
    assert len(res.error) < 2200  # before: 20 MB, and as much again in the SIM114 finding
    assert res.findings and all(len(f.message) < 2500 for f in res.findings)
