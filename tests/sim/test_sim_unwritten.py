"""What counts as written: ragged tails in index-grid kernels (our own kernels, written in the style of the
public legacy tutorials) are clean, and unwritten values are reported exactly where they reach a result."""

from __future__ import annotations

import numpy as np
import pytest

from sim_helpers import run_source

LEGACY = "import numpy as np\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n" \
         "import neuronxcc.nki.isa as nisa\n"
NEW = "import numpy as np\nimport nki\nimport nki.language as nl\nimport nki.isa as nisa\n"
rng = np.random.default_rng(7)


def run(tmp_path, src, args, *, legacy=True):
    return run_source(tmp_path, (LEGACY if legacy else NEW) + src, args)


def line_of(lines, text):
    return next(i for i, ln in enumerate(lines, 1) if text in ln)


def found(res):
    return [(f.rule, f.line) for f in res.findings]


ROW_SOFTMAX = """
@nki.jit
def row_softmax(x):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(C)[None, :]
    for t in nl.affine_range((R + 127) // 128):
        rows = t * 128 + ip < R
        tile = nl.load(x[t * 128 + ip, jf], mask=rows)
        top = nl.max(tile, axis=[1], keepdims=True, mask=rows)
        z = nl.subtract(tile, top, mask=rows)
        e = nl.exp(z)
        den = nl.sum(e, axis=[1])
        nl.store(out[t * 128 + ip, jf], value=e / den, mask=rows)
    return out
"""


@pytest.mark.parametrize("rows", [256, 300, 129])
def test_ragged_softmax_with_keepdims_max_and_free_axis_sum_is_clean(tmp_path, rows):
    x = rng.standard_normal((rows, 200)).astype(np.float32)
    res, _ = run(tmp_path, ROW_SOFTMAX, [x])
    assert res.status == "ok" and found(res) == []
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(res.outputs[0], e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


LAYERNORM = """
@nki.jit
def layer_norm(x, gamma, eps):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(C)[None, :]
    i0 = nl.arange(1)[:, None]
    g = nl.load(gamma.reshape((1, C))[i0, jf])
    g_all = g.broadcast_to((128, C))
    for t in nl.affine_range((R + 127) // 128):
        tile = nl.load(x[t * 128 + ip, jf], mask=(t * 128 + ip < R))
        mean = nl.mean(tile, axis=1)
        var = nl.mean(nl.square(tile), axis=1) - mean * mean
        y = (tile - mean) * nl.rsqrt(var + eps) * g_all
        nl.store(out[t * 128 + ip, jf], value=y, mask=(t * 128 + ip < R))
    return out
"""


def test_ragged_layernorm_with_per_partition_stats_and_a_reshaped_1d_param_is_clean(tmp_path):
    x = rng.standard_normal((300, 96)).astype(np.float32)
    g = rng.standard_normal(96).astype(np.float32)
    res, _ = run(tmp_path, LAYERNORM, [x, g, 1e-5])
    assert res.status == "ok" and found(res) == []
    ref = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * g
    np.testing.assert_allclose(res.outputs[0], ref, rtol=1e-4, atol=1e-4)


BN_STATS = """
@nki.jit
def moments(x):
    R, F = x.shape
    out = nl.ndarray((R, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    FMAX = nl.tile_size.bn_stats_fmax
    n_chunks = (F + FMAX - 1) // FMAX
    ip = nl.arange(128)[:, None]
    jf = nl.arange(F)[None, :]
    jb = nl.arange(FMAX)[None, :]
    j6 = nl.arange(6)[None, :]
    j2 = nl.arange(2)[None, :]
    for t in nl.affine_range((R + 127) // 128):
        tile = nl.load(x[t * 128 + ip, jf], mask=(t * 128 + ip < R))
        stats = nl.ndarray((128, 6 * n_chunks), dtype=nl.float32)
        for j in nl.affine_range(n_chunks):
            stats[ip, j * 6 + j6] = nisa.bn_stats(tile[ip, j * FMAX + jb], mask=(j * FMAX + jb < F),
                                                  dtype=nl.float32)
        mv = nisa.bn_aggr(stats)
        nl.store(out[t * 128 + ip, j2], value=mv, mask=(t * 128 + ip < R))
    return out
"""


def test_bn_stats_with_a_free_axis_mask_on_the_last_chunk_counts_only_real_elements(tmp_path):
    # F = 700: the second 512-wide chunk is 188 real columns and 324 masked-off (out of bounds of the tile)
    x = rng.standard_normal((200, 700)).astype(np.float32)
    res, _ = run(tmp_path, BN_STATS, [x])
    assert res.status == "ok" and found(res) == []
    np.testing.assert_allclose(res.outputs[0][:, 0], x.mean(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res.outputs[0][:, 1], x.var(1), rtol=1e-4, atol=1e-6)


ROWS_MATMUL = """
@nki.jit
def rows_times_w(x, w):
    R, K = x.shape
    _, N = w.shape
    out = nl.ndarray((R, N), dtype=nl.float32, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    jk = nl.arange(K)[None, :]
    jn = nl.arange(N)[None, :]
    ik = nl.arange(K)[:, None]
    wt = nl.load(w[ik, jn])
    for t in nl.affine_range((R + 127) // 128):
        xt = nl.load(x[t * 128 + ip, jk], mask=(t * 128 + ip < R))
        xT = nl.transpose(xt)
        acc = nl.matmul(xT, wt, transpose_x=True)
        res = nl.copy(acc, dtype=nl.float32)
        nl.store(out[t * 128 + ip, jn], value=res, mask=(t * 128 + ip < R))
    return out
"""


def test_a_ragged_row_tile_through_transpose_and_matmul_stays_row_wise(tmp_path):
    # unwritten rows become unwritten columns after the transpose, then unwritten output rows of the matmul
    # (each output row reads only its own input row): nothing mixes, the masked store skips them
    x = rng.standard_normal((200, 64)).astype(np.float32)
    w = rng.standard_normal((64, 96)).astype(np.float32)
    res, _ = run(tmp_path, ROWS_MATMUL, [x, w])
    assert res.status == "ok" and found(res) == []
    np.testing.assert_allclose(res.outputs[0], x @ w, rtol=1e-4, atol=1e-4)


def test_contracting_over_unwritten_partitions_is_reported_at_the_matmul(tmp_path):
    # the ragged tile used directly as the moving operand: K runs over its partitions, so every output element
    # sums written and unwritten rows
    src = ROWS_MATMUL.replace("xT = nl.transpose(xt)", "xT = xt").replace(
        "acc = nl.matmul(xT, wt, transpose_x=True)", "acc = nl.matmul(xt, xt, transpose_x=True)")
    x = rng.standard_normal((200, 128)).astype(np.float32)
    w = rng.standard_normal((128, 128)).astype(np.float32)
    res, lines = run(tmp_path, src, [x, w])
    assert ("SIM111", line_of(lines, "acc = nl.matmul(")) in found(res)


def test_storing_the_unwritten_rows_is_reported_at_the_store(tmp_path):
    src = ROW_SOFTMAX.replace("value=e / den, mask=rows)", "value=e / den)")
    x = rng.standard_normal((300, 64)).astype(np.float32)
    res, lines = run(tmp_path, src, [x])
    assert ("SIM111", line_of(lines, "nl.store(")) in found(res)
    assert not any(line != line_of(lines, "nl.store(") for rule, line in found(res) if rule == "SIM111")


def test_a_sum_over_a_free_axis_tail_mixes_written_and_unwritten_elements(tmp_path):
    src = ROW_SOFTMAX.replace("tile = nl.load(x[t * 128 + ip, jf], mask=rows)",
                              "tile = nl.load(x[t * 128 + ip, jf], mask=rows & (jf < C - 3))")
    x = rng.standard_normal((256, 64)).astype(np.float32)
    res, lines = run(tmp_path, src, [x])
    # max is masked by rows only, so it already mixes the 3 never-loaded columns into each row's result
    assert ("SIM111", line_of(lines, "top = nl.max(")) in found(res)


def test_a_partition_broadcast_of_an_unwritten_row_is_reported_where_it_is_stored(tmp_path):
    src = """
@nki.jit
def bcast(x):
    R, C = x.shape
    out = nl.ndarray((128, C), dtype=x.dtype, buffer=nl.shared_hbm)
    i0 = nl.arange(1)[:, None]
    jf = nl.arange(C)[None, :]
    ip = nl.arange(128)[:, None]
    row = nl.load(x[i0 + R, jf], mask=(i0 + R < R))
    full = row.broadcast_to((128, C))
    y = nl.multiply(full, 2.0)
    nl.store(out[ip, jf], value=y)
    return out
"""
    res, lines = run(tmp_path, src, [rng.standard_normal((4, 8)).astype(np.float32)])
    assert "SIM111" in {r for r, _ in found(res)}


NEW_TAIL = """
P = 128


@nki.jit
def scale_tail(x, alpha):
    R, D = x.shape
    out = nl.ndarray((R, D), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range((R + P - 1) // P):
        n = min(P, R - t * P)
        xt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[0:n, 0:D], src=x[t * P:t * P + n, 0:D])
        yt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=yt, data=xt, op0=nl.multiply, operand0=alpha)
        s = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=s, op=nl.add, data=yt, axis=1)
        nisa.tensor_scalar(dst=yt, data=yt, op0=nl.subtract, operand0=s)
        nisa.dma_copy(dst=out[t * P:t * P + n, 0:D], src=yt[0:n, 0:D])
    return out
"""


def test_new_dialect_clamped_tail_computed_on_the_whole_tile_is_clean(tmp_path):
    x = rng.standard_normal((200, 32)).astype(np.float32)
    res, _ = run(tmp_path, NEW_TAIL, [x, 0.5], legacy=False)
    assert res.status == "ok" and found(res) == []
    y = 0.5 * x
    np.testing.assert_allclose(res.outputs[0], y - y.sum(1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_new_dialect_copying_the_whole_tile_to_hbm_reports_the_unwritten_rows(tmp_path):
    src = NEW_TAIL.replace("nisa.dma_copy(dst=out[t * P:t * P + n, 0:D], src=yt[0:n, 0:D])",
                           "scratch = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.shared_hbm)\n"
                           "        nisa.dma_copy(dst=scratch, src=yt)\n"
                           "        nisa.dma_copy(dst=out[t * P:t * P + n, 0:D], src=yt[0:n, 0:D])")
    res, lines = run(tmp_path, src, [rng.standard_normal((200, 32)).astype(np.float32), 0.5], legacy=False)
    assert ("SIM111", line_of(lines, "nisa.dma_copy(dst=scratch")) in found(res)


def test_a_tile_nothing_wrote_is_still_an_uninitialized_accumulator(tmp_path):
    src = """
@nki.jit
def acc_sum(x):
    R, C = x.shape
    out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 1), dtype=nl.float32)
    for t in nl.sequential_range(R // 128):
        xt = nl.load(x[t * 128:(t + 1) * 128, 0:C])
        acc[...] = nl.add(acc, nl.sum(xt, axis=1, keepdims=True))
    nl.store(out, value=acc)
    return out
"""
    res, lines = run(tmp_path, src, [rng.standard_normal((256, 16)).astype(np.float32)])
    assert found(res)[0] == ("SIM111", line_of(lines, "acc[...] = nl.add("))


def test_an_output_left_unwritten_by_a_store_mask_is_a_warning_and_a_skipped_tail_an_error(tmp_path):
    src = """
@nki.jit
def first_n(a, n):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(64)[None, :]
    for t in nl.affine_range(a.shape[0] // 128):
        off = (t * 128 + ip) * 64 + jf
        v = nl.load(a[t * 128 + ip, jf], mask=off < n)
        nl.store(out[t * 128 + ip, jf], value=v, mask=off < n)
    return out
"""
    a = rng.standard_normal((256, 64)).astype(np.float32)
    res, _ = run(tmp_path, src, [a, 256 * 64 - 100])
    (f,) = [f for f in res.findings if f.rule == "SIM112"]
    assert f.severity.value == "warning" and f.evidence["excluded_by_store_mask"] is True
    assert f.evidence["unwritten_elements"] == 100
    np.testing.assert_array_equal(res.outputs[0].reshape(-1)[:-100], a.reshape(-1)[:-100])
    skipped = src.replace("a.shape[0] // 128", "a.shape[0] // 128 - 1")
    res, _ = run(tmp_path, skipped, [a, 256 * 64])
    (f,) = [f for f in res.findings if f.rule == "SIM112"]
    assert f.severity.value == "error" and f.evidence["excluded_by_store_mask"] is False


def test_values_the_simulator_cannot_follow_are_a_warning_not_an_error(tmp_path):
    # a ragged tile scattered through a non-affine index grid: the destination view cannot carry the
    # never-written rows, so the simulator says it lost track (a warning) instead of accusing the kernel
    src = """
@nki.jit
def regroup(x):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None, None]
    ia = nl.arange(2)[None, :, None]
    ib = nl.arange(C // 2)[None, None, :]
    i2 = nl.arange(128)[:, None]
    jf = nl.arange(C)[None, :]
    t = nl.load(x[i2, jf], mask=(i2 < R))
    u = nl.ndarray((128, C), dtype=x.dtype)
    u[ip, ib * 2 + ia] = nl.copy(t[ip, ia * (C // 2) + ib])
    nl.store(out[i2, jf], value=u, mask=(i2 < R))
    return out
"""
    x = rng.standard_normal((100, 8)).astype(np.float32)
    res, lines = run(tmp_path, src, [x])
    sim111 = [f for f in res.findings if f.rule == "SIM111"]
    assert sim111 and all(f.severity.value == "warning" and f.evidence["untracked"] for f in sim111)
    np.testing.assert_array_equal(res.outputs[0], x.reshape(100, 2, 4).transpose(0, 2, 1).reshape(100, 8))
