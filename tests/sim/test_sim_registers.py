"""Registers and runtime trip counts, nc_find_index8, shared_identity_matrix, NKIObject, a self-copy fence,
and writes through a reshaped alias of an output: small kernels written inline."""

from __future__ import annotations

import numpy as np

from nki_assist.api.hardware import get_target
from nki_assist.sim import run_kernel

HEAD = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\nfrom dataclasses import dataclass\n"


def _run(tmp_path, body, args, kernel=None):
    (tmp_path / "k.py").write_text(HEAD + body)
    return run_kernel(str(tmp_path / "k.py"), kernel, args, target=get_target("trn2"))


DYN = """
@nki.jit
def k(x, n):
    M, H = x.shape
    out = nl.ndarray((M, H), dtype=x.dtype, buffer=nl.shared_hbm)
    n_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=n_sb, src=n)
    reg = nisa.register_alloc()
    nisa.register_load(reg, n_sb)
    row = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=row, value=0)
    for _ in nl.dynamic_range(0, reg, 1):
        t = nl.ndarray((128, H), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x.ap(pattern=[[H, 128], [1, H]], scalar_offset=row, indirect_dim=0))
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out.ap(pattern=[[H, 128], [1, H]], scalar_offset=row, indirect_dim=0), src=t)
        nisa.tensor_scalar(dst=row, data=row, op0=nl.add, operand0=128)
    nisa.dma_copy(dst=out, src=out)
    return out
"""


def test_a_register_bounded_dynamic_loop_with_scalar_offsets(tmp_path):
    x = np.random.default_rng(0).standard_normal((384, 64)).astype(np.float32)
    res = _run(tmp_path, DYN, [x, np.array([[2]], np.int32)])
    assert res.status == "ok", res.error
    np.testing.assert_array_equal(res.outputs[0][:256], 2 * x[:256])
    # rows past the runtime trip count stay unwritten by design: a warning that says why, never an error
    assert [(f.rule, f.severity.value) for f in res.findings] == [("SIM112", "warning")]
    assert res.findings[0].evidence["runtime_trip_count"] is True
    full = _run(tmp_path, DYN, [x, np.array([[3]], np.int32)])
    assert full.status == "ok" and full.findings == []
    np.testing.assert_array_equal(full.outputs[0], 2 * x)


def test_registers_move_store_and_while_loop(tmp_path):
    body = """
@nki.jit
def k(x):
    out = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
    r = nisa.register_alloc(3)
    total = nisa.register_alloc(0)
    acc = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0)
    def body(c):
        nisa.tensor_scalar(dst=acc, data=acc, op0=nl.add, operand0=10)
        nxt = nisa.register_alloc()
        nisa.register_move(nxt, int(c) - 1)
        return nxt
    nl.while_loop(r, body)
    nisa.register_load(total, acc)
    res = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.register_store(res, total)
    nisa.dma_copy(dst=out, src=res)
    return out
"""
    res = _run(tmp_path, body, [np.zeros((1, 1), np.float32)])
    assert res.status == "ok", res.error
    assert res.outputs[0].tolist() == [[30]]


def test_find_index8_identity_and_nkiobject(tmp_path):
    body = """
class Cfg(nl.NKIObject):
    pass

@dataclass
class Tiles(nl.NKIObject):
    n: int = 8

@nki.jit
def k(x):
    cfg = Cfg(scale=2.0)
    tiles = Tiles()
    P, F = x.shape
    out = nl.ndarray((P, tiles.n), dtype=nl.uint32, buffer=nl.shared_hbm)
    eye_out = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=cfg.scale)
    top = nl.ndarray((P, 8), dtype=x.dtype, buffer=nl.sbuf)
    nisa.max8(dst=top, src=t)
    idx = nl.ndarray((P, 8), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.nc_find_index8(dst=idx, data=t, vals=top)
    nisa.dma_copy(dst=out, src=idx)
    eye = nl.shared_identity_matrix(n=P, dtype=nl.float32)
    nisa.dma_copy(dst=eye_out, src=eye)
    return out, eye_out
"""
    x = np.random.default_rng(2).permutation(64 * 40).reshape(64, 40).astype(np.float32)
    res = _run(tmp_path, body, [x])
    assert res.status == "ok", res.error
    np.testing.assert_array_equal(res.outputs[0], np.argsort(-x, axis=1)[:, :8])
    np.testing.assert_array_equal(res.outputs[1], np.eye(64))
    assert res.findings == []


def test_writes_through_a_reshaped_alias_cover_the_output(tmp_path):
    body = """
@nki.jit
def k(x):
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    y2 = y.reshape((x.shape[0] * x.shape[1], x.shape[2]))
    x2 = x.reshape((x.shape[0] * x.shape[1], x.shape[2]))
    t = nl.ndarray((x.shape[0] * x.shape[1], x.shape[2]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x2)
    nisa.dma_copy(dst=y2, src=t)
    return y
"""
    x = np.random.default_rng(3).standard_normal((2, 5, 30)).astype(np.float32)
    res = _run(tmp_path, body, [x])
    assert res.status == "ok" and res.findings == [], [f.message for f in res.findings]
    np.testing.assert_array_equal(res.outputs[0], x)


def test_a_partial_store_outside_dynamic_loops_is_still_an_error(tmp_path):
    body = """
@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0:64, :])
    nisa.dma_copy(dst=out[0:64, :], src=t)
    return out
"""
    res = _run(tmp_path, body, [np.ones((128, 32), np.float32)])
    assert [(f.rule, f.severity.value) for f in res.findings] == [("SIM112", "error")]


def test_single_input_alu_ops_in_operand_slots_and_unknown_ops_name_themselves(tmp_path):
    body = """
@nki.jit
def k(x):
    P, F = x.shape
    out = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    a = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    amax = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=a, data=t, op0=nl.abs, operand0=0.0, reduce_op=nl.maximum, reduce_res=amax)
    nisa.dma_copy(dst=out, src=amax)
    return out
"""
    x = np.random.default_rng(4).standard_normal((32, 50)).astype(np.float32)
    res = _run(tmp_path, body, [x])
    assert res.status == "ok", res.error
    np.testing.assert_allclose(res.outputs[0][:, 0], np.abs(x).max(1))
    res = _run(tmp_path, body.replace("op0=nl.abs", "op0='bogus_op'"), [x])
    assert res.status == "unsupported" and [(f.rule, f.severity.value) for f in res.findings] == [("SIM117", "info")]
    assert "bogus_op" in res.findings[0].message
    line = next(i for i, ln in enumerate((tmp_path / "k.py").read_text().splitlines(), 1) if "bogus_op" in ln)
    assert res.findings[0].line == line


def test_dma_transpose_permutes_by_rank(tmp_path):
    """nki.isa.dma_transpose: a 4-d source is permuted [3, 1, 2, 0] (not flattened to 2-d first)."""
    body = """
@nki.jit
def k(x):
    A, B, C, D = x.shape
    out = nl.ndarray((D, B, C, A), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((D, B, C, A), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out
"""
    x = np.arange(4 * 2 * 3 * 16, dtype=np.float32).reshape(4, 2, 3, 16).astype(np.float16)
    res = _run(tmp_path, body, [x])
    assert res.status == "ok", res.error
    np.testing.assert_array_equal(res.outputs[0], x.transpose(3, 1, 2, 0))


def test_stream_shuffle_moves_partitions_within_each_quadrant(tmp_path):
    body = """
@nki.jit
def k(x):
    P, F = x.shape
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    mask = [31 - i for i in range(32)]
    mask[5] = 255  # partition 5 of each quadrant keeps its own value
    nisa.nc_stream_shuffle(dst=t, src=t, shuffle_mask=mask)
    nisa.dma_copy(dst=out, src=t)
    return out
"""
    x = np.arange(64 * 4, dtype=np.float32).reshape(64, 4)
    res = _run(tmp_path, body, [x])
    assert res.status == "ok", res.error
    want = np.concatenate([x[31::-1], x[63:31:-1]])
    want[5], want[37] = x[5], x[37]
    np.testing.assert_array_equal(res.outputs[0], want)


def test_match_replace8_takes_two_rounds_of_top8_with_repeated_values(tmp_path):
    body = """
@nki.jit
def k(x):
    P, F = x.shape
    vals_out = nl.ndarray((P, 16), dtype=nl.float32, buffer=nl.shared_hbm)
    idx_out = nl.ndarray((P, 16), dtype=nl.uint32, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    top = nl.ndarray((P, 16), dtype=x.dtype, buffer=nl.sbuf)
    idx = nl.ndarray((P, 16), dtype=nl.uint32, buffer=nl.sbuf)
    for r in nl.sequential_range(2):
        nisa.max8(dst=top[:, r * 8:(r + 1) * 8], src=t)
        nisa.nc_match_replace8(dst=t, data=t, vals=top[:, r * 8:(r + 1) * 8], imm=float('-inf'),
                               dst_idx=idx[:, r * 8:(r + 1) * 8])
    nisa.dma_copy(dst=vals_out, src=top)
    nisa.dma_copy(dst=idx_out, src=idx)
    return vals_out, idx_out
"""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 12, (32, 40)).astype(np.float32)  # many repeated values per row
    res = _run(tmp_path, body, [x])
    assert res.status == "ok", res.error
    assert res.findings == []
    order = np.argsort(-x, axis=1, kind="stable")[:, :16]  # equal values: the earlier index first
    np.testing.assert_array_equal(res.outputs[0], np.take_along_axis(x, order, 1))
    np.testing.assert_array_equal(res.outputs[1], order)
