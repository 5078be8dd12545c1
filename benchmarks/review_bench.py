"""Offline review of the bundled example port (two sizes): wall time, in process and through the CLI.

Target (design.md): under 5 s on 2 cores; issue 30: the CLI review under 0.8 s. Every kernel and reference run happens in child processes,
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


def _cli(env: dict[str, str]) -> tuple[subprocess.CompletedProcess, float, float]:
    """(process, median wall, median CPU) of three CLI reviews of the example."""
    import resource

    walls, cpus = [], []
    for _ in range(3):
        r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "nki_assist", "review", str(SPEC), "--format", "json", "-q"],
                              capture_output=True, cwd=ROOT, env={**os.environ, **env})
        walls.append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    return done, statistics.median(walls), statistics.median(cpus)


def run() -> dict:
    from nki_assist.review import ReviewOptions, review_port

    times, stages = [], {}
    for _ in range(3):
        t0 = time.perf_counter()
        res = review_port(str(SPEC), ReviewOptions(plots=False))
        times.append(time.perf_counter() - t0)
        if res.review.numerics is not None:
            stages = {"numerics_s": res.review.numerics.model_extra.get("seconds")}
    cli, cli_s, cli_cpu = _cli({})
    # A/B in the same run: one fresh interpreter per kernel run (the pre-zygote sandbox start)
    _, fresh_s, fresh_cpu = _cli({"NKI_ASSIST_NO_ZYGOTE": "1"})
    return {
        "sizes": len(res.review.numerics.sizes) if res.review.numerics else 0,
        "findings": len(res.review.findings),
        "median_review_s": round(statistics.median(times), 3),
        "min_review_s": round(min(times), 3),
        **stages,
        "cli_review_s": round(cli_s, 3),
        "cli_review_cpu_s": round(cli_cpu, 3),  # the CLI process and every child, all cores together
        "cli_fresh_child_s": round(fresh_s, 3),
        "cli_fresh_child_cpu_s": round(fresh_cpu, 3),
        "cli_exit": cli.returncode,
        "load_avg_1min": round(os.getloadavg()[0], 2),
    }


if __name__ == "__main__":
    for k, v in run().items():
        print(f"{k:20} {v}")
