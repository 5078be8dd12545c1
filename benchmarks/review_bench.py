"""Offline review of the bundled example port (two sizes): wall time, in process and through the CLI.

Target (design.md): under 5 s on 2 cores. Every kernel and reference run happens in child processes,
so the number includes their start-up; the deterministic drafter is used (no network).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "examples" / "gemm_bias_relu" / "port.toml"


def run() -> dict:
    from nki_assist.review import ReviewOptions, review_port

    times, stages = [], {}
    for _ in range(3):
        t0 = time.perf_counter()
        res = review_port(str(SPEC), ReviewOptions(plots=False))
        times.append(time.perf_counter() - t0)
        if res.review.numerics is not None:
            stages = {"numerics_s": res.review.numerics.model_extra.get("seconds")}
    t0 = time.perf_counter()
    cli = subprocess.run([sys.executable, "-m", "nki_assist", "review", str(SPEC), "--format", "json", "-q"],
                         capture_output=True, cwd=ROOT, env=dict(os.environ))
    cli_s = time.perf_counter() - t0
    return {
        "sizes": len(res.review.numerics.sizes) if res.review.numerics else 0,
        "findings": len(res.review.findings),
        "median_review_s": round(statistics.median(times), 3),
        "min_review_s": round(min(times), 3),
        **stages,
        "cli_review_s": round(cli_s, 3),
        "cli_exit": cli.returncode,
        "load_avg_1min": round(os.getloadavg()[0], 2),
    }


if __name__ == "__main__":
    for k, v in run().items():
        print(f"{k:20} {v}")
