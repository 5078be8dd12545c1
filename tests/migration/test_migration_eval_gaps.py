"""Migration gaps the eval suite exposed: fp32 matmul operands kept from the CUDA float inputs (MIG111)
and a score scale (1/sqrt(d), temperature) the port never applies (MIG102)."""

from __future__ import annotations

import pytest

from nki_assist.hardware import get_target
from nki_assist.parse.cuda import parse_cuda
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.migration import run_migration_rules

TRN2 = get_target("trn2")


def run(cuda: str, nki: str):
    return run_migration_rules(parse_cuda(cuda, "k.cu"), parse_nki(nki, "k_nki.py"), TRN2)


def line(text: str, needle: str) -> int:
    return next(i for i, t in enumerate(text.splitlines(), 1) if needle in t)


SGEMM_CU = """\
#define BK 16
__global__ void mm(const float* X, const float* W, float* Y, int M, int N, int K) {
    int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    float s = 0.0f;
    for (int k = 0; k < K; ++k) s += X[r * K + k] * W[k * N + c];
    if (r < M && c < N) Y[r * N + c] = s;
}
"""
SGEMM_CU_BF16 = SGEMM_CU.replace("const float* X, const float* W", "const __nv_bfloat16* X, const __nv_bfloat16* W")

MM_LEGACY = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def mm(xT, w):
    K, M = xT.shape
    _, N = w.shape
    assert K % 128 == 0 and M % 128 == 0 and N % 512 == 0
    y = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            ps = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                xt = nl.load(xT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                wt = nl.load(w[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                ps += nl.matmul(xt, wt, transpose_x=True)
            nl.store(y[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=nl.copy(ps))
    return y
"""

MM_NEW = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def mm(xT, w):
    K, M = xT.shape
    _, N = w.shape
    assert K % 128 == 0 and M % 128 == 0 and N % 512 == 0
    y = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in range(M // 128):
        for n in range(N // 512):
            ps = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in range(K // 128):
                xt = nl.ndarray((128, 128), dtype=xT.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=xt, src=xT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                wt = nl.ndarray((128, 512), dtype=w.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=wt, src=w[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                nisa.nc_matmul(dst=ps, stationary=xt, moving=wt)
            o = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=o, src=ps)
            nisa.dma_copy(dst=y[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], src=o)
    return y
"""


@pytest.mark.parametrize("nki,call", [(MM_LEGACY, "nl.matmul"), (MM_NEW, "nisa.nc_matmul")], ids=["legacy", "new"])
def test_MIG111_fp32_operands_from_float_cuda_inputs(nki, call):
    fs = [f for f in run(SGEMM_CU, nki) if f.rule == "MIG111"]
    assert [(f.line, f.related[0].line, f.category, f.severity.value) for f in fs] == [
        (line(nki, call), 2, "fp32-matmul", "info")]
    ev = fs[0].evidence
    assert ev["operands"] == ["xt", "wt"] and ev["nki_params"] == ["xT", "w"] and ev["cuda_params"] == ["X", "W"]
    assert ev["fp32_tflops"] < ev["bf16_tflops"] and "4x slower" in fs[0].message


@pytest.mark.parametrize("nki", [
    MM_LEGACY.replace("m * 128:(m + 1) * 128])", "m * 128:(m + 1) * 128], dtype=nl.bfloat16)").replace(
        "n * 512:(n + 1) * 512])\n", "n * 512:(n + 1) * 512], dtype=nl.bfloat16)\n"),
    MM_NEW.replace("dtype=xT.dtype", "dtype=nl.bfloat16").replace("dtype=w.dtype", "dtype=nl.bfloat16"),
], ids=["legacy-cast-on-load", "new-bf16-tiles"])
def test_MIG111_silent_when_operands_are_cast(nki):
    assert not [f for f in run(SGEMM_CU, nki) if f.rule == "MIG111"]


@pytest.mark.parametrize("nki", [MM_LEGACY, MM_NEW], ids=["legacy", "new"])
def test_MIG111_silent_for_bf16_cuda_inputs(nki):
    assert not [f for f in run(SGEMM_CU_BF16, nki) if f.rule == "MIG111"]
