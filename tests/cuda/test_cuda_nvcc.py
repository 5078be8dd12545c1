"""nvcc backend: ptxas report parsing, demangling, skip-with-note, and one real compilation."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nki_assist.parse.cuda import parse_cuda
from nki_assist.toolchain.nvcc import _fallback_demangle, parse_ptxas_report, resource_usage

FIX = Path(__file__).resolve().parents[1] / "fixtures"

# Shape of nvcc 13.0 `--resource-usage` output (stderr), with a spilling kernel and two
# instantiations of one template.
REPORT = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z5scaleIfEvPT_S0_i' for 'sm_80'
ptxas info    : Function properties for _Z5scaleIfEvPT_S0_i
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 368 bytes cmem[0]
ptxas info    : Compile time = 2.833 ms
ptxas info    : Compiling entry function '_Z5scaleIdEvPT_S0_i' for 'sm_80'
ptxas info    : Function properties for _Z5scaleIdEvPT_S0_i
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers, 372 bytes cmem[0]
ptxas info    : Function properties for _Z6helperf
    24 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function '_Z5sgemmPKfS0_Pfiii' for 'sm_80'
ptxas info    : Function properties for _Z5sgemmPKfS0_Pfiii
    1032 bytes stack frame, 128 bytes spill stores, 96 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 8320 bytes smem, 388 bytes cmem[0], 16 bytes cmem[2]
"""


def test_parse_report_values_and_demangled_keys():
    usage = parse_ptxas_report(REPORT)
    assert set(usage) == {"void scale<float>(float*, float, int)", "void scale<double>(double*, double, int)", "sgemm"}
    s = usage["sgemm"]
    assert (s["registers"], s["shared_bytes"], s["spill_stores_bytes"], s["spill_loads_bytes"],
            s["stack_bytes"], s["const_bytes"], s["barriers"]) == (255, 8320, 128, 96, 1032, 404, 1)
    assert s["mangled"] == "_Z5sgemmPKfS0_Pfiii"
    assert usage["void scale<double>(double*, double, int)"]["registers"] == 10
    assert "_Z6helperf" not in str(usage)  # device functions are not entries


def test_fallback_demangler():
    assert _fallback_demangle("_Z5sgemmPKfS0_Pfiii") == "sgemm"
    assert _fallback_demangle("_ZN2ns5scaleIfEEvPT_S1_i") == "ns::scale"
    assert _fallback_demangle("plain_c_name") == "plain_c_name"


def test_missing_nvcc_is_a_note(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    result = resource_usage(str(FIX / "cuda" / "gemm_bias_relu.cu"))
    assert (result.available, result.ok, result.kernels) == (False, False, {})
    assert "nvcc not found" in result.note


def test_bad_arguments_are_notes(tmp_path):
    assert "invalid arch" in (resource_usage(str(FIX / "cuda" / "gemm_bias_relu.cu"), arch="x; rm").note or "")
    if shutil.which("nvcc"):
        assert "no such file" in resource_usage(str(tmp_path / "missing.cu")).note


needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@needs_nvcc
@pytest.mark.slow
def test_real_nvcc_agrees_with_parsed_shared_bytes():
    path = FIX / "cuda" / "gemm_bias_relu.cu"
    result = resource_usage(str(path), arch="sm_80", timeout_s=120)
    assert result.available and result.ok, result.note
    usage = result.kernels["gemm_bias_relu"]
    facts = parse_cuda(path.read_text(), str(path)).kernel("gemm_bias_relu")
    assert usage["shared_bytes"] == facts.shared_bytes == 2080
    assert 8 <= usage["registers"] <= 255 and usage["barriers"] == 1
    assert usage["spill_stores_bytes"] == 0 and usage["demangled"].startswith("gemm_bias_relu(")


@needs_nvcc
@pytest.mark.slow
def test_real_nvcc_compile_error_is_a_note(tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k(float* x) { x[0] = undefined_name; }\n")
    result = resource_usage(str(bad), timeout_s=120)
    assert result.available and not result.ok and result.kernels == {}
    assert "nvcc failed" in result.note and "undefined_name" in result.note


def test_annotate_copies_usage_onto_parsed_kernels():
    from nki_assist.toolchain.nvcc import NvccResult, annotate

    text = ("template <typename T> __global__ void scale(T* x, T a, int n) { x[0] = a; }\n"
            "__global__ void sgemm(const float* A, const float* B, float* C, int M, int N, int K) {}\n")
    cf = parse_cuda(text, "k.cu")
    result = NvccResult(available=True, ok=True, arch="sm_80", kernels=parse_ptxas_report(REPORT))
    assert annotate(cf, result) == 1  # `scale` has two instantiations: ambiguous, left alone
    assert cf.kernel("scale").resources is None
    res = cf.kernel("sgemm").resources
    assert (res["registers"], res["spill_stores_bytes"], res["arch"]) == (255, 128, "sm_80")
    assert cf.to_json()["kernels"][1]["resources"]["shared_bytes"] == 8320


def test_timeout_kills_the_compiler_and_is_a_note(monkeypatch, tmp_path):
    # a stand-in `nvcc` that never finishes: the backend must give up at the timeout, not hang
    fake = tmp_path / "nvcc"
    fake.write_text(f"#!/bin/sh\n{shutil.which('sleep')} 30\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k() {}\n")
    import time

    start = time.monotonic()
    result = resource_usage(str(src), timeout_s=0.5)
    assert time.monotonic() - start < 10
    assert result.available and not result.ok and "timed out after 0.5 s" in result.note
