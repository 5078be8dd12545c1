"""Benchmark (not a test): parse + CUDA rules on generated 1,000-line files.

Run: `python -m benchmarks cuda` (or `python benchmarks/cuda_bench.py [repeats]`).
"dense": fixture kernels repeated (a kernel every ~12 lines); "typical": 4 kernels + host code.
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from pathlib import Path

from tree_sitter import Parser

from nki_assist.api.hardware import get_target
from nki_assist.parse.cuda import _language, parse_cuda
from nki_assist.parse.cuda_state import refs
from nki_assist.rules.cuda.checks import run_cuda_rules

FIX = Path(__file__).resolve().parents[1] / "tests" / "fixtures"


def dense() -> str:
    parts = [p.read_text() for p in sorted(FIX.glob("cuda/*.cu"))]
    parts += [p.read_text() for p in sorted(FIX.glob("rules/CUDA10[1-6]/*.cu"))]
    text, i = "", 0
    while text.count("\n") < 1000:
        text += re.sub(r"void (?!__launch)(\w+)\(", lambda m: f"void {m.group(1)}_{i}(", parts[i % len(parts)]) + "\n"
        i += 1
    return text


def typical() -> str:
    text = "".join(p.read_text() for p in sorted(FIX.glob("cuda/*.cu")))
    i = 0
    while text.count("\n") < 1000:
        text += f"""
static void check_{i}(const float* ref, const float* got, int n, float tol) {{
    int bad = 0;
    for (int j = 0; j < n; ++j) {{
        float d = fabsf(ref[j] - got[j]);
        if (d > tol * (1.0f + fabsf(ref[j]))) {{
            if (bad < 10) printf("mismatch at %d: %f vs %f\\n", j, ref[j], got[j]);
            ++bad;
        }}
    }}
    CUDA_CHECK(cudaDeviceSynchronize());
    printf("%s: %d bad of %d\\n", "case_{i}", bad, n);
}}
"""
        i += 1
    return text + "int main() { float *x, *y; softmax_rows<<<64, 128>>>(x, y, 64, 1000); return 0; }\n"


def measure(text: str, repeats: int) -> tuple[float, float, float]:
    target = get_target("trn2")
    src = text.encode()
    ts, ours = [], []
    for _ in range(repeats):
        refs.cache_clear()
        a = time.perf_counter()
        Parser(_language()).parse(src)
        b = time.perf_counter()
        run_cuda_rules(parse_cuda(text, "bench.cu"), target)
        c = time.perf_counter()
        ts.append(b - a)
        ours.append(c - b)
    return min(ours) * 1e3, statistics.median(ours) * 1e3, statistics.median(ts) * 1e3


def run(repeats: int = 30) -> dict:
    out: dict = {}
    for name, text in (("dense", dense()), ("typical", typical())):
        best, med, ts = measure(text, repeats)
        out[f"{name}_lines"] = text.count("\n")
        out[f"{name}_kernels"] = len(parse_cuda(text, "x").kernels)
        out[f"{name}_min_ms"] = round(best, 2)
        out[f"{name}_median_ms"] = round(med, 2)
        out[f"{name}_tree_sitter_median_ms"] = round(ts, 2)
    return out


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    for name, text in (("dense", dense()), ("typical", typical())):
        best, med, ts = measure(text, n)
        kernels = len(parse_cuda(text, "x").kernels)
        print(f"{name}: {text.count(chr(10))} lines, {kernels} kernels: parse+check min {best:.1f} ms, "
              f"median {med:.1f} ms (tree-sitter parse alone, median {ts:.1f} ms)")
