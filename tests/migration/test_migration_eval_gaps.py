"""Migration gaps the eval suite exposed: fp32 matmul operands kept from the CUDA float inputs (MIG111)
and a score scale (1/sqrt(d), temperature) the port never applies (MIG102)."""

from __future__ import annotations

import pytest

from nki_assist.api.hardware import get_target
from nki_assist.parse.cuda import parse_cuda
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.migration.checks import run_migration_rules

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


# -- MIG102: a score scale the port never applies ---------------------------------------------------
SCORES_CU = """\
#include <math.h>
__global__ void row_softmax_qk(const float* q, const float* k, float* p, int S, int d) {
    __shared__ float s[1024];
    int i = blockIdx.x;
    const float inv_sqrt_d = rsqrtf((float)d);
    for (int j = threadIdx.x; j < S; j += blockDim.x) {
        float dot = 0.0f;
        for (int c = 0; c < d; ++c) dot += q[i * d + c] * k[j * d + c];
        s[j] = dot * inv_sqrt_d;
    }
    __syncthreads();
    float mx = -INFINITY;
    for (int j = 0; j < S; ++j) mx = fmaxf(mx, s[j]);
    float sum = 0.0f;
    for (int j = 0; j < S; ++j) sum += expf(s[j] - mx);
    for (int j = threadIdx.x; j < S; j += blockDim.x) p[i * S + j] = expf(s[j] - mx) / sum;
}
"""
# the same kernel with the factor inline, and with a temperature parameter instead
SCORES_CU_INLINE = SCORES_CU.replace("    const float inv_sqrt_d = rsqrtf((float)d);\n", "").replace(
    "dot * inv_sqrt_d", "dot / sqrtf((float)d)")
SCORES_CU_TEMP = SCORES_CU.replace("int S, int d)", "int S, int d, float temperature)").replace(
    "    const float inv_sqrt_d = rsqrtf((float)d);\n", "").replace("dot * inv_sqrt_d", "dot / temperature")

SCORES_NEW = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def row_softmax_qk(qT, kT):
    D, S = qT.shape
    assert S <= 128 and D <= 128
    p = nl.ndarray((S, S), dtype=nl.float32, buffer=nl.shared_hbm)
    q_sb = nl.ndarray((D, S), dtype=nl.bfloat16, buffer=nl.sbuf)
    k_sb = nl.ndarray((D, S), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=q_sb, src=qT[0:D, 0:S])
    nisa.dma_copy(dst=k_sb, src=kT[0:D, 0:S])
    sc = nl.ndarray((S, S), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=sc, stationary=q_sb, moving=k_sb)
    nmx = nl.ndarray((S, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=nmx, op=nl.maximum, data=sc, axis=1, negate=True)
    e = nl.ndarray((S, S), dtype=nl.float32, buffer=nl.sbuf)
    tot = nl.ndarray((S, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation_reduce(dst=e, op=nl.exp, data=sc, bias=nmx, reduce_op=nl.add, reduce_res=tot)
    nisa.reciprocal(dst=tot, data=tot)
    nisa.tensor_scalar(dst=e, data=e, op0=nl.multiply, operand0=tot)
    nisa.dma_copy(dst=p[0:S, 0:S], src=e)
    return p
"""

SCORES_LEGACY = """\
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def row_softmax_qk(qT, kT):
    D, S = qT.shape
    p = nl.ndarray((S, S), dtype=nl.float32, buffer=nl.shared_hbm)
    q_sb = nl.load(qT[0:D, 0:S], dtype=nl.bfloat16)
    k_sb = nl.load(kT[0:D, 0:S], dtype=nl.bfloat16)
    sc = nl.matmul(q_sb, k_sb, transpose_x=True)
    mx = nl.max(sc, axis=1, keepdims=True)
    e = nl.exp(nl.subtract(sc, mx))
    s = nl.sum(e, axis=1, keepdims=True)
    nl.store(p[0:S, 0:S], value=nl.multiply(e, nl.reciprocal(s)))
    return p
"""


def test_cuda_scale_uses_are_recorded():
    [k] = parse_cuda(SCORES_CU, "k.cu").kernels
    assert [(u.factor, u.origin, u.factor_line, u.line, u.target) for u in k.scale_uses] == [
        ("inv_sqrt_d", "rsqrtf((float)d)", 5, 9, "s[j]")]
    [k] = parse_cuda(SCORES_CU_INLINE, "k.cu").kernels
    assert [(u.factor, u.line) for u in k.scale_uses] == [("sqrtf((float)d)", 8)]
    [k] = parse_cuda(SCORES_CU_TEMP, "k.cu").kernels
    assert [(u.factor, u.origin) for u in k.scale_uses] == [("temperature", "parameter")]
    # `inv = 1.0f / sum` normalises by data: not a scale factor; nor is a data-dependent rsqrt (layer norm)
    ln = SCORES_CU.replace("rsqrtf((float)d)", "rsqrtf(q[i] + 1e-5f)")
    assert parse_cuda(ln, "k.cu").kernels[0].scale_uses == []


@pytest.mark.parametrize("cu", [SCORES_CU, SCORES_CU_INLINE], ids=["local", "inline"])
@pytest.mark.parametrize("nki,consumer", [(SCORES_NEW, "nisa.activation_reduce"), (SCORES_LEGACY, "nl.exp(")],
                         ids=["new", "legacy"])
def test_MIG102_missing_score_scale(cu, nki, consumer):
    fs = [f for f in run(cu, nki) if f.rule == "MIG102"]
    assert [(f.line, f.related[0].line, f.category, f.severity.value) for f in fs] == [
        (line(nki, consumer), line(cu, "s[j] = dot"), "missing-epilogue", "error")]
    assert fs[0].evidence["epilogue_kind"] == "scale" and "sqrt" in fs[0].evidence["cuda_factor"]


@pytest.mark.parametrize("nki", [
    SCORES_NEW.replace("bias=nmx, reduce_op", "bias=nmx, scale=1.0 / math.sqrt(D), reduce_op"),
    SCORES_NEW.replace("    nmx = nl.ndarray", "    nisa.tensor_scalar(dst=sc, data=sc, op0=nl.multiply, operand0=D ** -0.5)\n"
                                           "    nmx = nl.ndarray"),
    SCORES_NEW.replace("    nmx = nl.ndarray", "    nisa.tensor_scalar(dst=sc, data=sc, op0=nl.multiply, operand0=0.125)\n"
                                           "    nmx = nl.ndarray"),
    SCORES_LEGACY.replace("sc = nl.matmul(q_sb, k_sb, transpose_x=True)",
                          "sm_scale = 1.0 / math.sqrt(D)\n    sc = nl.multiply(nl.matmul(q_sb, k_sb, transpose_x=True), sm_scale)"),
], ids=["new-scale-kwarg", "new-pow", "new-literal", "legacy-named"])
def test_MIG102_silent_when_the_port_scales(nki):
    assert not [f for f in run(SCORES_CU, nki) if f.rule == "MIG102"]


def test_MIG102_temperature_parameter():
    assert [f.line for f in run(SCORES_CU_TEMP, SCORES_NEW) if f.rule == "MIG102"] == [
        line(SCORES_NEW, "nisa.activation_reduce")]
    ported = SCORES_NEW.replace("def row_softmax_qk(qT, kT):", "def row_softmax_qk(qT, kT, temperature):").replace(
        "bias=nmx, reduce_op", "bias=nmx, scale=1.0 / temperature, reduce_op")
    assert not [f for f in run(SCORES_CU_TEMP, ported) if f.rule == "MIG102"]
