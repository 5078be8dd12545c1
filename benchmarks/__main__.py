"""Benchmark runner: `python -m benchmarks [NAME ...]` from the repository root.

Discovers `benchmarks/<name>_bench.py` modules, each exposing `run() -> dict[str, number]`, runs the
selected ones (all by default), prints a table and writes `benchmarks/results/<name>.json`.
Benchmarks measure; they never assert (quality bars live in design.md and docs, not in tests).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def discover() -> dict[str, Path]:
    return {p.name.removesuffix("_bench.py"): p for p in sorted(HERE.glob("*_bench.py"))}


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(f"benchmarks.{name}_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def main(argv: list[str] | None = None) -> int:
    found = discover()
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default: all of {', '.join(found)})")
    parser.add_argument("--no-write", action="store_true", help="print only; do not write results/")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in found]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; available: {', '.join(found)}")
    status = 0
    for name in args.names or list(found):
        t0 = time.perf_counter()
        try:
            numbers = load(name, found[name]).run()
        except Exception as exc:  # one broken benchmark must not hide the others
            print(f"{name}: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            status = 1
            continue
        elapsed = time.perf_counter() - t0
        width = max(len(k) for k in numbers) if numbers else 0
        print(f"\n{name}  ({elapsed:.1f} s)")
        for key, value in numbers.items():
            print(f"  {key:<{width}}  {fmt(value):>14}")
        if not args.no_write:
            RESULTS.mkdir(exist_ok=True)
            record = {"benchmark": name, "results": numbers, "seconds": round(elapsed, 3),
                      "python": platform.python_version(), "machine": platform.machine(),
                      "when": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            (RESULTS / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
