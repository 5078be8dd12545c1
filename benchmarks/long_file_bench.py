"""How `check` scales with the length of ONE file (issue 44, case 8): generated files of ordinary kernel code
(5k, 20k and 50k lines: many small kernels and helpers, as a generated or concatenated module has), each checked
in a fresh process with `--no-cache`; wall time and peak RSS. `python -m benchmarks long_file`, or
`python -m benchmarks.long_file_bench --lines 5000 20000 50000` for the table alone.

The acceptance bar (docs/check.md "Long files"): 50k lines < 10x the time of 5k lines, memory linear.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADER = '''"""Generated: many small NKI kernels in one module (benchmarks/long_file_bench.py)."""
import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl

TILE = 128
'''

UNIT = '''

def helper_{i}(a, b):
    """Plain Python helper number {i}."""
    total = 0
    for k in range(4):
        total += a * k + b
    return total + {i}


@nki.jit
def kernel_{i}(x, y):
    P, F = x.shape
    scale = helper_{i}(TILE, {i})
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(F // TILE):
        a = nl.ndarray((P, TILE), dtype=x.dtype, buffer=nl.sbuf)
        b = nl.ndarray((P, TILE), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=x[0:P, t * TILE:(t + 1) * TILE])
        nisa.dma_copy(dst=b, src=y[0:P, t * TILE:(t + 1) * TILE])
        c = nl.ndarray((P, TILE), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=c, data1=a, data2=b, op=nl.add)
        nisa.tensor_scalar(dst=c, data=c, op0=nl.multiply, operand0=float(scale % 7))
        nisa.dma_copy(dst=out[0:P, t * TILE:(t + 1) * TILE], src=c)
    return out
'''


def source(lines: int) -> str:
    """A module of about `lines` lines."""
    per = UNIT.count("\n")
    parts = [HEADER] + [UNIT.format(i=i) for i in range(max(1, (lines - HEADER.count("\n")) // per))]
    return "".join(parts)


def measure(lines: int, folder: Path) -> dict[str, float]:
    path = folder / f"long_{lines}.py"
    path.write_text(source(lines), encoding="utf-8")
    code = ("import resource, sys, time; from nki_assist.cli import main; t = time.perf_counter(); "
            f"rc = main(['check', {str(path)!r}, '--no-cache', '--format', 'json', '-o', '/dev/null']); "
            "u = resource.getrusage(resource.RUSAGE_SELF); "
            "print(time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024)")
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    check_s, cpu_s, rss = (float(v) for v in done.stdout.split()[-3:])
    return {"lines": source(lines).count("\n"), "check_s": check_s, "cpu_s": cpu_s, "process_s": wall,
            "peak_rss_mb": rss}


def run(sizes: tuple[int, ...] = (5000, 20000, 50000)) -> dict[str, float]:
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            m = measure(n, Path(tmp))
            out[f"{n // 1000}k_check_s"] = m["check_s"]
            out[f"{n // 1000}k_cpu_s"] = m["cpu_s"]  # user + system: less sensitive to a loaded machine
            out[f"{n // 1000}k_peak_rss_mb"] = m["peak_rss_mb"]
    if "5k_check_s" in out and "50k_check_s" in out:
        out["ratio_50k_over_5k"] = out["50k_check_s"] / out["5k_check_s"]
        out["cpu_ratio_50k_over_5k"] = out["50k_cpu_s"] / out["5k_cpu_s"]
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, nargs="+", default=[5000, 20000, 50000])
    ns = ap.parse_args()
    for key, value in run(tuple(ns.lines)).items():
        print(f"{key:24} {value:10.2f}")
