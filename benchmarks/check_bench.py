"""`check` speed: a generated 1,000-line NKI kernel file, in process and through the CLI.

Targets (design.md): median in-process `check_source` < 50 ms; CLI cold start < 1 s.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LINES = 1000
REPEAT = 21
CLI_REPEAT = 5

HEADER = '''"""Generated benchmark kernels: tiled matmuls, fused elementwise, softmax and rmsnorm."""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

TILE_P = 128
TILE_F = 512

'''

MATMUL = '''@nki.jit
def matmul_{i}(lhsT, rhs):
    K, M = lhsT.shape
    K2, N = rhs.shape
    assert K == K2
    TILE_M = nl.tile_size.gemm_stationary_fmax
    TILE_K = nl.tile_size.pmax
    TILE_N = nl.tile_size.gemm_moving_fmax
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                a = nl.ndarray((TILE_K, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((TILE_K, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                a[...] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
                b[...] = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                acc += nisa.nc_matmul(a, b)
            res = nl.copy(acc, dtype=out.dtype)
            nl.store(out[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=res)
    return out


'''

ELEMENTWISE = '''@nki.jit
def add_relu_{i}(a_tensor, b_tensor, scale):
    rows, cols = a_tensor.shape
    out = nl.ndarray((rows, cols), dtype=a_tensor.dtype, buffer=nl.shared_hbm)
    F = {free}
    assert rows % TILE_P == 0
    for p in nl.affine_range(rows // TILE_P):
        for f in nl.affine_range(cols // F):
            a_tile = nl.load(a_tensor[p * TILE_P:(p + 1) * TILE_P, f * F:(f + 1) * F])
            b_tile = nl.load(b_tensor[p * TILE_P:(p + 1) * TILE_P, f * F:(f + 1) * F])
            s = nl.add(a_tile, b_tile)
            s = nl.multiply(s, scale)
            r = nl.maximum(s, 0.0)
            nl.store(out[p * TILE_P:(p + 1) * TILE_P, f * F:(f + 1) * F], value=r)
    return out


'''

SOFTMAX = '''@nki.jit
def softmax_{i}(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for p in nl.affine_range(rows // TILE_P):
        tile = nl.load(x[p * TILE_P:(p + 1) * TILE_P, 0:cols])
        row_max = nl.max(tile, axis=[1], keepdims=True)
        shifted = nl.subtract(tile, row_max)
        e = nl.exp(shifted)
        total = nl.sum(e, axis=[1], keepdims=True)
        inv = nl.reciprocal(total)
        y = nl.multiply(e, inv)
        nl.store(out[p * TILE_P:(p + 1) * TILE_P, 0:cols], value=y)
    return out


'''

RMSNORM = '''@nki.jit
def rmsnorm_{i}(x, gamma, eps):
    rows, hidden = x.shape
    out = nl.ndarray((rows, hidden), dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.load(gamma.reshape((1, hidden)))
    for p in nl.sequential_range(rows // TILE_P):
        xt = nl.load(x[p * TILE_P:(p + 1) * TILE_P, 0:hidden])
        sq = nl.multiply(xt, xt, dtype=nl.float32)
        ms = nl.mean(sq, axis=[1], keepdims=True)
        rs = nl.rsqrt(nl.add(ms, eps))
        y = nl.multiply(nl.multiply(xt, rs), g)
        nl.store(out[p * TILE_P:(p + 1) * TILE_P, 0:hidden], value=y)
    return out


'''

TEMPLATES = (MATMUL, ELEMENTWISE, SOFTMAX, RMSNORM)


def generate(lines: int = LINES) -> str:
    """A syntactically valid NKI module of at least `lines` lines (kernels cycle through 4 shapes)."""
    parts, n, i = [HEADER], HEADER.count("\n"), 0
    while n < lines:
        block = TEMPLATES[i % len(TEMPLATES)].format(i=i, free=(256, 512, 1024)[i % 3])
        parts.append(block)
        n += block.count("\n")
        i += 1
    return "".join(parts)


def _median_ms(fn, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), min(times)


def _cli(args: list[str], repeat: int) -> tuple[float, int]:
    exe = Path(sys.executable).with_name("nki-assist")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "nki_assist.cli"]
    rc = 0

    def once():
        nonlocal rc
        rc = subprocess.run(cmd + args, capture_output=True, timeout=60).returncode

    once()  # warm the OS file cache and .pyc files; "cold" = a fresh interpreter each time
    return _median_ms(once, repeat)[0], rc


def run() -> dict:
    from nki_assist.check import CheckOptions, check_source

    text = generate()
    options = CheckOptions()
    first_t0 = time.perf_counter()
    findings = check_source("bench_kernels.py", text, options)  # also pays one-time imports
    first_ms = (time.perf_counter() - first_t0) * 1000
    median_ms, min_ms = _median_ms(lambda: check_source("bench_kernels.py", text, options), REPEAT)
    parse_ms = None
    try:  # front-end share of the check time, for attributing a slow check
        from nki_assist.parse.nki import parse_nki

        parse_nki(text, "bench_kernels.py")
        parse_ms = round(_median_ms(lambda: parse_nki(text, "bench_kernels.py"), REPEAT)[0], 2)
    except ImportError:
        pass
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench_kernels.py"
        path.write_text(text, encoding="utf-8")
        cli_ms, rc = _cli(["check", str(path), "--fail-on", "never"], CLI_REPEAT)
        version_ms, _ = _cli(["--version"], CLI_REPEAT)
    return {
        "lines": text.count("\n"),
        "kernels": text.count("@nki.jit"),
        "findings": len(findings),
        "first_check_ms": round(first_ms, 2),
        "median_check_ms": round(median_ms, 2),
        "min_check_ms": round(min_ms, 2),
        "median_parse_nki_ms": parse_ms,
        "cli_check_ms": round(cli_ms, 1),
        "cli_check_exit": rc,
        "cli_version_ms": round(version_ms, 1),
    }
