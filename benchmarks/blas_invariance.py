"""Prove that reviews do not depend on the host's BLAS: the same review JSON under several BLAS settings.

    python -m benchmarks.blas_invariance [--spec-dir DIR ...] [--jobs N] [--keep DIR]

Runs `python -m benchmarks.behaviour_dump --only runs --only reviews` once per setting: every
simulator run in this process (trace, output hashes, findings) and every finding, number and drafted
sentence of each port spec's review (whose reference runs pinned to one BLAS kernel family:
numerics/reference.py), under the host's default OpenBLAS kernel,
OPENBLAS_CORETYPE=Haswell (AVX2 kernels), OPENBLAS_CORETYPE=Prescott (SSE3 kernels) and
OPENBLAS_NUM_THREADS=1, and compares each dump with the default one. Exit 1 on any difference
(listed), 0 when all are identical. CI runs it on the eval cases and the example (.ci/run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.behaviour_dump import ROOT, compare

SETTINGS: dict[str, dict[str, str]] = {
    "default": {},
    "haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "prescott": {"OPENBLAS_CORETYPE": "Prescott"},
    "one-thread": {"OPENBLAS_NUM_THREADS": "1"},
}
BLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "MKL_CBWR")


def _dump(name: str, extra: dict[str, str], out: Path, spec_dirs: list[str]) -> tuple[str, int, str]:
    env = {k: v for k, v in os.environ.items() if k not in BLAS_VARS}
    env.update(extra)
    cmd = [sys.executable, "-m", "benchmarks.behaviour_dump", str(out), "--only", "runs", "--only", "reviews"]
    for d in spec_dirs:
        cmd += ["--spec-dir", d]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    return name, proc.returncode, proc.stderr[-2000:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.blas_invariance", description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec-dir", action="append", metavar="DIR", help="port specs under DIR (default: all)")
    ap.add_argument("--jobs", type=int, default=2, help="settings dumped at once (default 2)")
    ap.add_argument("--keep", metavar="DIR", help="keep the dumps in DIR")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(args.keep or tmp)
        where.mkdir(parents=True, exist_ok=True)
        paths = {name: where / f"reviews-{name}.json" for name in SETTINGS}
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            runs = list(pool.map(lambda n: _dump(n, SETTINGS[n], paths[n], args.spec_dir or []), SETTINGS))
        failed = [(n, err) for n, rc, err in runs if rc != 0]
        for n, err in failed:
            print(f"{n}: behaviour_dump failed:\n{err}")
        if failed:
            return 2
        base = json.loads(paths["default"].read_text())
        n_specs, n_runs = len(base.get("reviews", {})), len(base.get("runs", {}))
        bad = 0
        for name in SETTINGS:
            if name == "default":
                continue
            diffs = compare(base, json.loads(paths[name].read_text()))
            env = " ".join(f"{k}={v}" for k, v in SETTINGS[name].items())
            if diffs:
                bad += 1
                print(f"{env}: {len(diffs)} difference(s) from the default BLAS")
                print("\n".join("  " + d for d in diffs[:40]))
                if len(diffs) > 40:
                    print(f"  ... {len(diffs) - 40} more")
            else:
                print(f"{env}: {n_runs} simulator run(s) and {n_specs} review(s) identical to the default BLAS")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
