"""Precise migration matching: operand/loop dependence from every subscript (batch axes, resolved locals),
sliding windows recognised as intended, CUDA launcher literals paired with port constants by value."""

from __future__ import annotations

from nki_assist.api.hardware import get_target
from nki_assist.parse.cuda import parse_cuda
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.migration.checks import run_migration_rules
from nki_assist.rules.nki.run import run_nki_rules

TRN2 = get_target("trn2")

SCORES_CU = """\
__global__ void scores(const float* qT, const float* kT, float* s, int batch, int d, int seq, float scale) {
    int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y, b = blockIdx.z;
    if (j >= seq || b >= batch) return;
    float acc = 0.0f;
    for (int c = 0; c < d; ++c) acc += qT[(b * d + c) * seq + i] * kT[(b * d + c) * seq + j];
    s[(b * seq + i) * seq + j] = acc * scale;
}
void launch(const float* q, const float* k, float* s, int batch, int seq) {
    scores<<<dim3(seq / 128, seq, batch), 128>>>(q, k, s, batch, 128, seq, 0.125f);
}
"""

SCORES_NEW = """\
import nki
import nki.isa as nisa
import nki.language as nl

SCALE = 0.125


@nki.jit
def scores(qT, kT):
    B, D, S = qT.shape
    assert D == 128 and S % 128 == 0 and S <= 512
    s = nl.ndarray((B, S, S), dtype=nl.float32, buffer=nl.shared_hbm)
    for b in range(B):
        k_sb = nl.ndarray((D, S), dtype=kT.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=k_sb, src=kT[{kb}, 0:D, 0:S])
        for i in range(S // 128):
            q_sb = nl.ndarray((D, 128), dtype=qT.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=q_sb, src=qT[{kb}, 0:D, i * 128:(i + 1) * 128])
            ps = nl.ndarray((128, S), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=ps, stationary=q_sb, moving=k_sb)
            sc = nl.ndarray((128, S), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=sc, data=ps, op0=nl.multiply, operand0=SCALE)
            nisa.dma_copy(dst=s[b, i * 128:(i + 1) * 128, 0:S], src=sc)
    return s
"""

CONV_CU = """\
__global__ void conv(const float* x, const float* w, float* y, int len) {
    int l = blockIdx.x * blockDim.x + threadIdx.x, co = blockIdx.y;
    if (l >= len) return;
    float acc = 0.0f;
    for (int t = 0; t < 3; ++t)
        for (int ci = 0; ci < 128; ++ci) acc += w[ci * 384 + t * 128 + co] * x[ci * (len + 2) + l + t];
    y[co * len + l] = acc;
}
"""

CONV_LEGACY = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def conv(x, w):
    B, C, LX = x.shape
    L = LX - 2
    assert L % 512 == 0
    y = nl.ndarray((B, 128, L), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_l = nl.arange(512)[None, :]
    i_o = nl.arange(128)[None, :]
    w_sb = nl.load(w[i_p, nl.arange(384)[None, :]])
    for b in nl.affine_range(B):
        for n in nl.affine_range(L // 512):
            acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            for t in nl.affine_range(3):
                xw = nl.load(x[b, i_p, n * {step} + t + i_l])
                acc += nl.matmul(w_sb[i_p, t * 128 + i_o], xw, transpose_x=True)
            nl.store(y[b, i_p, n * 512 + i_l], value=nl.copy(acc, dtype=nl.float32))
    return y
"""

CONV_NEW_LOCAL = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def conv(x, w):
    C, LX = x.shape
    L = LX - 2
    assert L % 512 == 0
    y = nl.ndarray((128, L), dtype=nl.float32, buffer=nl.shared_hbm)
    w_sb = nl.ndarray((128, 384), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_sb, src=w[0:128, 0:384])
    for n in range(L // 512):
        acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        for t in range(3):
            xw = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
            start = n * 512 + t
            nisa.dma_copy(dst=xw, src=x[0:128, start:start + 512])
            nisa.nc_matmul(dst=acc, stationary=w_sb[0:128, t * 128:(t + 1) * 128], moving=xw)
        res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=y[0:128, n * 512:(n + 1) * 512], src=res)
    return y
"""


def mig(cu: str, py: str, source: bool = True):
    return run_migration_rules(parse_cuda(cu, "k.cu"), parse_nki(py, "k_nki.py"), TRN2,
                               nki_source=py if source else None)


def test_batched_operands_that_index_the_batch_variable_are_not_flagged():
    assert not [f for f in mig(SCORES_CU, SCORES_NEW.replace("{kb}", "b")) if f.rule == "MIG110"]


def test_operands_that_both_miss_the_batch_variable_are_still_caught():
    # (one operand shared by every batch, like a convolution's weights, is fine: it is the other one that
    # carries b)
    (f,) = [f for f in mig(SCORES_CU, SCORES_NEW.replace("{kb}", "0")) if f.rule == "MIG110"]
    assert f.evidence["kind"] == "output-tile-not-selected" and f.evidence["loop_vars"] == ["b"]
    assert "batch index" in f.message and "`b`" in f.fix


def test_sliding_window_taps_are_intended_and_get_the_halo_advice():
    fs = mig(CONV_CU, CONV_LEGACY.replace("{step}", "512"))
    assert not [f for f in fs if f.rule == "MIG110"]  # no contraction-offset (batch axis) nor overlap report
    (w,) = [f for f in run_nki_rules(parse_nki(CONV_LEGACY.replace("{step}", "512"), "k_nki.py"), TRN2)
            if f.rule == "NKI111"]
    assert w.severity.value == "info" and w.evidence["halo"] == 514 and w.evidence["loop_var"] == "t"
    assert "514-wide halo tile of `x`" in w.fix and "[t:t + 512]" in w.fix


def test_overlap_along_a_loop_that_selects_the_output_is_an_error():
    (f,) = [f for f in mig(CONV_CU, CONV_LEGACY.replace("{step}", "256")) if f.rule == "MIG110"]
    assert f.evidence["kind"] == "offset-step" and f.evidence["loop_var"] == "n" and f.evidence["step"] == 256
    assert "`n * 512`" in f.fix
    assert not [f for f in run_nki_rules(parse_nki(CONV_LEGACY.replace("{step}", "256"), "k_nki.py"), TRN2)
                if f.rule == "NKI111" and f.evidence["loop_var"] == "n"]


def test_offsets_held_in_locals_are_resolved():
    fs = mig(CONV_CU, CONV_NEW_LOCAL)
    assert not [f for f in fs if f.rule in ("MIG110", "MIG101")]  # `start` depends on n; the assert covers L


RMS_CU = """\
__global__ void rms(const float* x, float* y, int rows, int dim, float eps) {
    int r = blockIdx.x;
    if (r >= rows) return;
    float ss = 0.0f;
    for (int c = 0; c < dim; ++c) ss += x[r * dim + c] * x[r * dim + c];
    for (int c = 0; c < dim; ++c) y[r * dim + c] = x[r * dim + c] * rsqrtf(ss / dim + eps);
}
void launch(const float* x, float* y, int rows, int dim) {
    rms<<<rows, 1>>>(x, y, rows, dim, {eps});
}
"""

RMS_NEW = """\
import nki
import nki.isa as nisa
import nki.language as nl

{const}


@nki.jit
def rms(x):
    R, D = x.shape
    assert R % 128 == 0
    y = nl.ndarray((R, D), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range(R // 128):
        xt = nl.ndarray((128, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * 128:(t + 1) * 128, 0:D])
        sq = nl.ndarray((128, D), dtype=nl.float32, buffer=nl.sbuf)
        ss = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=sq, op=nl.square, data=xt, reduce_op=nl.add, reduce_res=ss)
        inv = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=inv, data=ss, op0=nl.multiply, operand0=1.0 / D, op1=nl.add, operand1={eps_use})
        nisa.activation(dst=inv, op=nl.rsqrt, data=inv)
        yt = nl.ndarray((128, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=yt, data=xt, op0=nl.multiply, operand0=inv)
        nisa.dma_copy(dst=y[t * 128:(t + 1) * 128, 0:D], src=yt)
    return y
"""


def unused(fs):
    return [f for f in fs if f.rule == "MIG103" and f.evidence.get("cuda_param") == "eps"]


def test_a_launcher_literal_pairs_with_the_port_constant_of_the_same_value():
    port = RMS_NEW.replace("{const}", "EPS = 1e-6").replace("{eps_use}", "EPS")
    assert not unused(mig(RMS_CU.replace("{eps}", "1e-6f"), port))
    # a different value is not a pairing: the port ignores the value callers pass
    (f,) = unused(mig(RMS_CU.replace("{eps}", "1e-5f"), port))
    assert f.evidence["claim"] == {"kind": "input-unused", "cuda_param": "eps", "pointer": False}
    assert "remove" not in f.fix


def test_a_literal_in_the_kernel_body_pairs_only_when_the_source_is_given():
    port = RMS_NEW.replace("{const}", "").replace("{eps_use}", "1e-06")
    assert not unused(mig(RMS_CU.replace("{eps}", "0.000001f"), port))
    assert unused(mig(RMS_CU.replace("{eps}", "0.000001f"), port, source=False))


def test_a_define_passed_by_the_launcher_pairs_too():
    cu = "#define RMS_EPS 1e-6f\n" + RMS_CU.replace("{eps}", "RMS_EPS")
    port = RMS_NEW.replace("{const}", "EPS = 1e-6").replace("{eps_use}", "EPS")
    fs = mig(cu, port)
    assert not unused(fs)


def test_a_floored_loop_completed_by_a_tail_tile_is_not_a_dropped_guard():
    from pathlib import Path

    case = Path(__file__).resolve().parents[2] / "evals" / "cases" / "clean_residual_rmsnorm_tail_legacy"
    cu = (case / "residual_rmsnorm.cu").read_text()
    py = (case / "residual_rmsnorm_nki.py").read_text()
    fs = mig(cu, py)
    assert not [f for f in fs if f.rule in ("MIG101", "MIG103")]  # tail tile after the loop; eps = 1e-6f literal
    assert not [f for f in run_nki_rules(parse_nki(py, "k_nki.py"), TRN2) if f.rule in ("NKI203", "NKI207")]
    broken = py.replace("r0 = R - rem", "r0 = R // P")
    (f,) = [f for f in run_nki_rules(parse_nki(broken, "k_nki.py"), TRN2) if f.rule == "NKI207"]
    assert f.line == py.splitlines().index("        r0 = R - rem") + 1 and "R - R % 128" in f.fix


def test_nki203_is_silent_on_both_dialects_tail_tiles():
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "rules" / "NKI207"
    for name in ("neg_new.py", "neg_legacy.py", "pos_new.py", "pos_legacy.py"):
        fs = run_nki_rules(parse_nki((fixtures / name).read_text(), name), TRN2)
        assert not [f for f in fs if f.rule == "NKI203"], name  # a tail tile follows the loop (right or wrong)
