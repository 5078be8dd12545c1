"""MIG1xx pair checks on small CUDA + NKI pairs (both NKI dialects): rule, NKI line, related CUDA line."""

from __future__ import annotations

from pathlib import Path

import pytest

from nki_assist.api.hardware import get_target
from nki_assist.parse.cuda import parse_cuda
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.migration.checks import run_migration_rules

PORTS = Path(__file__).resolve().parents[1] / "fixtures" / "ports"
TRN2 = get_target("trn2")

GEMM_CU = """\
#define TILE 64
__global__ void gemm_bias_relu(const float* A, const float* B, const float* bias, float* C,
                               int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    if (row < M && col < N) {
        C[row * N + col] = fmaxf(acc + bias[col], 0.0f);
    }
}
"""

NEW_GOOD = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def gemm_bias_relu(lhsT, rhs, bias):
    K, M = lhsT.shape
    _, N = rhs.shape
    assert M % 128 == 0 and N % 512 == 0 and K % 128 == 0
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in range(M // 128):
        for n in range(N // 512):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in range(K // 128):
                a = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                b = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=b, src=rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                nisa.nc_matmul(dst=acc, stationary=a, moving=b)
            bt = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=bt, src=bias[0:128, n * 512:(n + 1) * 512])
            s = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=s, data1=acc, data2=bt, op=nl.add)
            r = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=r, op=nl.relu, data=s)
            nisa.dma_copy(dst=out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], src=r)
    return out
"""

LEGACY_GOOD = """\
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def gemm_bias_relu(lhsT, rhs, bias):
    K, M = lhsT.shape
    _, N = rhs.shape
    assert M % 128 == 0 and N % 512 == 0 and K % 128 == 0
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    i_k = nl.arange(128)[:, None]
    i_m = nl.arange(128)[None, :]
    i_n = nl.arange(512)[None, :]
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                a = nl.load(lhsT[k * 128 + i_k, m * 128 + i_m])
                b = nl.load(rhs[k * 128 + i_k, n * 512 + i_n])
                acc += nl.matmul(a, b, transpose_x=True)
            bt = nl.load(bias[i_k, n * 512 + i_n])
            r = nisa.activation(op=nl.relu, data=nl.add(acc, bt))
            nl.store(out[m * 128 + i_k, n * 512 + i_n], value=r)
    return out
"""


def run(cuda: str, nki: str, **kw):
    return run_migration_rules(parse_cuda(cuda, "k.cu"), parse_nki(nki, "k_nki.py"), TRN2, **kw)


def line(text: str, needle: str) -> int:
    return next(i for i, t in enumerate(text.splitlines(), 1) if needle in t)


def rules(findings, severities=("error", "warning")):
    return sorted(f.rule for f in findings if f.severity.value in severities)


@pytest.mark.parametrize("nki", [NEW_GOOD, LEGACY_GOOD], ids=["new", "legacy"])
def test_faithful_gemm_has_no_warning(nki):
    fs = run(GEMM_CU, nki)
    assert rules(fs) == []
    layout = [f for f in fs if f.rule == "MIG109"]
    assert len(layout) == 1 and layout[0].line == line(nki, "def gemm_bias_relu")
    assert layout[0].related[0].line == 2 and layout[0].evidence["paired_by"] == "role"
    for f in fs:
        assert f.source == "migration" and f.file == "k_nki.py" and f.related[0].file == "k.cu"
        assert f.evidence["cuda_line"] == f.related[0].line


@pytest.mark.parametrize("nki,marker", [
    (NEW_GOOD.replace("assert M % 128 == 0 and ", "assert "), "for m in range(M // 128)"),
    (LEGACY_GOOD.replace("assert M % 128 == 0 and ", "assert "), "for m in nl.affine_range(M // 128)"),
], ids=["new", "legacy"])
def test_MIG101_dropped_bounds_guard(nki, marker):
    fs = [f for f in run(GEMM_CU, nki) if f.rule == "MIG101"]
    assert [(f.line, f.related[0].line) for f in fs] == [(line(nki, marker), 9)]
    assert fs[0].evidence["cuda_guard"] == "row < M && col < N"


def test_MIG101_silent_with_legacy_mask():
    nki = LEGACY_GOOD.replace("assert M % 128 == 0 and ", "assert ").replace(
        "nl.store(out[m * 128 + i_k, n * 512 + i_n], value=r)",
        "nl.store(out[m * 128 + i_k, n * 512 + i_n], value=r, mask=(m * 128 + i_k < M))")
    assert not [f for f in run(GEMM_CU, nki) if f.rule == "MIG101"]


@pytest.mark.parametrize("nki,drop,store", [
    (NEW_GOOD, ("op=nl.relu", "op=nl.copy"), "nisa.dma_copy(dst=out["),
    (LEGACY_GOOD, ("op=nl.relu", "op=nl.copy"), "nl.store(out["),
], ids=["new", "legacy"])
def test_MIG102_missing_activation(nki, drop, store):
    bad = nki.replace(*drop)
    fs = [f for f in run(GEMM_CU, bad) if f.rule == "MIG102"]
    assert [(f.line, f.related[0].line, f.evidence["epilogue_detail"]) for f in fs] == [(line(bad, store), 10, "relu")]
    assert not [f for f in run(GEMM_CU, nki) if f.rule == "MIG102"]


def test_MIG102_missing_bias_param_and_MIG103_unused_input():
    bad = NEW_GOOD.replace("def gemm_bias_relu(lhsT, rhs, bias):", "def gemm_bias_relu(lhsT, rhs, bias_unused, bias):")
    bad = bad.replace("src=bias[0:128", "src=bias_unused[0:128")  # bias itself never read
    fs = run(GEMM_CU, bad)
    mig102 = [f for f in fs if f.rule == "MIG102"]
    assert [(f.line, f.related[0].line) for f in mig102] == [(line(bad, "nisa.dma_copy(dst=out["), 10)]
    assert "never read" in mig102[0].message
    cu = GEMM_CU.replace("const float* bias,", "const float* bias, const float* residual,")
    fs = [f for f in run(cu, NEW_GOOD) if f.rule == "MIG103"]
    assert [(f.line, f.related[0].line, f.evidence["cuda_param"]) for f in fs] == [(line(NEW_GOOD, "def gemm"), 2, "residual")]


@pytest.mark.parametrize("nki", [
    PORTS.joinpath("rev_rowsum_bf16", "row_sum_nki.py").read_text(),
    """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def row_sum(x):
    out = nl.ndarray((128, 1), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 1), dtype=nl.bfloat16, buffer=nl.sbuf)
    for j in nl.sequential_range(8):
        t = nl.load(x[0:128, j * 512:(j + 1) * 512])
        acc += nl.sum(t, axis=1, keepdims=True)
    nl.store(out, value=acc)
    return out
"""], ids=["new", "legacy"])
def test_MIG104_bf16_running_sum_and_MIG106_order(nki):
    cu = PORTS.joinpath("rev_rowsum_bf16", "row_sum.cu").read_text()
    fs = run(cu, nki)
    mig104 = [f for f in fs if f.rule == "MIG104"]
    needle = "data1=acc, data2=part" if "data1=acc" in nki else "acc +="
    assert [(f.line, f.related[0].line) for f in mig104] == [(line(nki, needle), line(cu, "acc += __bfloat162float"))]
    order = [f for f in fs if f.rule == "MIG106"]
    assert len(order) == 1 and order[0].severity.value == "info"
    assert order[0].related[0].line == line(cu, "__shfl_down_sync")
    assert order[0].evidence["rtol_for_n"]["4096"] == pytest.approx(2 * 64 * 2**-24, rel=1e-2)
    fp32 = nki.replace("acc = nl.ndarray((P, 1), dtype=nl.bfloat16", "acc = nl.ndarray((P, 1), dtype=nl.float32").replace(
        "acc = nl.zeros((128, 1), dtype=nl.bfloat16", "acc = nl.zeros((128, 1), dtype=nl.float32")
    assert not [f for f in run(cu, fp32) if f.rule == "MIG104"]


def test_MIG105_output_dtype():
    bad = NEW_GOOD.replace("out = nl.ndarray((M, N), dtype=nl.float32", "out = nl.ndarray((M, N), dtype=nl.bfloat16")
    fs = [f for f in run(GEMM_CU, bad) if f.rule == "MIG105"]
    assert [(f.line, f.related[0].line, f.severity.value) for f in fs] == [(line(bad, "out = nl.ndarray"), 2, "warning")]
    assert fs[0].evidence["cuda_dtype"] == "float32" and fs[0].evidence["nki_dtype"] == "bfloat16"
    assert not [f for f in run(GEMM_CU, NEW_GOOD) if f.rule == "MIG105"]


GELU_CU = """\
__global__ void gelu(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
}
"""
GELU_NKI = """\
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def gelu(x):
    y = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(y, value=nisa.activation(op=nl.gelu, data=t))
    return y
"""


def test_MIG107_gelu_forms():
    fs = [f for f in run(GELU_CU, GELU_NKI) if f.rule == "MIG107"]
    assert [(f.line, f.related[0].line) for f in fs] == [(line(GELU_NKI, "op=nl.gelu"), 5)]
    assert fs[0].evidence["max_abs_difference"] == pytest.approx(4.73e-4)
    same = [f for f in run(GELU_CU, GELU_NKI.replace("nl.gelu", "nl.gelu_apprx_tanh")) if f.rule == "MIG107"]
    assert len(same) == 1 and "max_abs_difference" not in same[0].evidence
    assert not [f for f in run(GELU_CU.replace("tanhf(0.7978845608f * (v + 0.044715f * v * v * v))", "erff(v * 0.70710678f)"),
                               GELU_NKI) if f.rule == "MIG107"]


def test_MIG108_cuda_tile_carried_over():
    bad = NEW_GOOD.replace("for k in range(K // 128):", "for k in range(K // 64):").replace(
        "(128, 128), dtype=lhsT.dtype", "(64, 128), dtype=lhsT.dtype").replace(
        "(128, 512), dtype=rhs.dtype", "(64, 512), dtype=rhs.dtype").replace(
        "lhsT[k * 128:(k + 1) * 128", "lhsT[k * 64:(k + 1) * 64").replace("rhs[k * 128:(k + 1) * 128", "rhs[k * 64:(k + 1) * 64")
    fs = [f for f in run(GEMM_CU, bad) if f.rule == "MIG108"]
    assert [(f.line, f.related[0].line, f.evidence["value"]) for f in fs] == [(line(bad, "nisa.nc_matmul"), 4, 64)]
    assert not [f for f in run(GEMM_CU, NEW_GOOD) if f.rule == "MIG108"]


@pytest.mark.parametrize("good,old,new,kind", [
    (NEW_GOOD, "lhsT[k * 128:(k + 1) * 128, m * 128", "lhsT[k * 128:(k + 1) * 128, n * 128", "output-tile-not-selected"),
    (LEGACY_GOOD, "lhsT[k * 128 + i_k, m * 128 + i_m]", "lhsT[m * 128 + i_k, m * 128 + i_m]", "contraction-offset"),
    (NEW_GOOD, "rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512]", "rhs[k * 128:(k + 1) * 128, n * 256:n * 256 + 512]",
     "offset-step"),
], ids=["new-row-tile", "legacy-contraction", "new-step"])
def test_MIG110_operand_offsets(good, old, new, kind):
    bad = good.replace(old, new)
    fs = [f for f in run(GEMM_CU, bad) if f.rule == "MIG110"]
    assert [f.evidence["kind"] for f in fs] == [kind]
    assert fs[0].line == line(bad, new[:12] + new[12:30]) and fs[0].related[0].line == 10
    assert not [f for f in run(GEMM_CU, good) if f.rule == "MIG110"]


def test_kernel_selection_and_bad_input():
    two = GEMM_CU + GEMM_CU.replace("gemm_bias_relu", "other")
    assert run(two, NEW_GOOD) == []  # two __global__ kernels, none named: no guessing
    assert rules(run(two, NEW_GOOD.replace("assert M % 128 == 0 and ", "assert "), cuda_kernel="gemm_bias_relu")) == ["MIG101"]
    assert run("this is not CUDA {{{", "def broken(:\n") == []
    assert run(GEMM_CU, NEW_GOOD, nki_kernel="missing") == []


SILU_CU = """\
__global__ void swiglu(const float* gate, const float* up, float* out, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) {
        const float g = gate[i];
        out[i] = g / (1.0f + expf(-g)) * up[i];
    }
}
"""

SILU_NKI = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def swiglu(gate, up):
    R, C = gate.shape
    assert R % 128 == 0
    out = nl.ndarray((R, C), dtype=gate.dtype, buffer=nl.shared_hbm)
    for r in range(R // 128):
        g = nl.ndarray((128, C), dtype=gate.dtype, buffer=nl.sbuf)
        u = nl.ndarray((128, C), dtype=up.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=g, src=gate[r * 128:(r + 1) * 128, :])
        nisa.dma_copy(dst=u, src=up[r * 128:(r + 1) * 128, :])
        s = nl.ndarray((128, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=s, op=nl.silu, data=g)
        nisa.tensor_tensor(dst=s, data1=s, data2=u, op=nl.multiply)
        nisa.dma_copy(dst=out[r * 128:(r + 1) * 128, :], src=s)
    return out
"""


def test_MIG102_hand_written_exp_is_covered_by_a_fused_silu():
    assert not [f for f in run(SILU_CU, SILU_NKI) if f.rule == "MIG102"]
    no_act = SILU_NKI.replace("op=nl.silu", "op=nl.copy")
    fs = [f for f in run(SILU_CU, no_act) if f.rule == "MIG102"]
    assert fs and fs[0].evidence["epilogue_detail"] == "exp"


ERF_CU = """\
__global__ void gelu_erf(const float* x, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
    }
}
"""


def test_MIG107_exact_erf_gelu_ported_as_tanh_approximation():
    tanh_port = SILU_NKI.replace("def swiglu(gate, up)", "def gelu_erf(gate, up)").replace("op=nl.silu", "op=nl.gelu_apprx_tanh")
    fs = [f for f in run(ERF_CU, tanh_port) if f.rule == "MIG107"]
    assert [(f.line, f.related[0].line, f.severity.value) for f in fs] == [(line(tanh_port, "op=nl.gelu_apprx_tanh"), 5, "warning")]
    assert fs[0].evidence["max_abs_difference"] == 4.73e-4
    erf_port = tanh_port.replace("op=nl.gelu_apprx_tanh", "op=nl.gelu")
    assert not [f for f in run(ERF_CU, erf_port) if f.rule == "MIG107"]


def test_unread_bias_is_one_item_with_the_unused_input_finding():
    from nki_assist.feedback.drafter import group_findings
    from nki_assist.findings import prioritize
    from nki_assist.rules.nki.run import run_nki_rules

    bad = NEW_GOOD.replace("def gemm_bias_relu(lhsT, rhs, bias):", "def gemm_bias_relu(lhsT, rhs, bias_unused, bias):")
    bad = bad.replace("src=bias[0:128", "src=bias_unused[0:128")
    static = [f for f in run_nki_rules(parse_nki(bad, "k_nki.py"), TRN2) if f.rule == "NKI202"]
    mig = [f for f in run(GEMM_CU, bad) if f.rule == "MIG102"]
    assert static and mig and static[0].evidence["root_cause"] == mig[0].evidence["root_cause"] == "unread-input:bias"
    groups = group_findings(prioritize([*static, *mig]))
    assert len(groups) == 1
