"""DMA trace numbers equal the true transfer: bytes, active partitions, descriptors, HBM box (hand-computed)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from sim_helpers import run_source

LEGACY = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n\n\n@nki.jit\n"
NEW = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n\n\n@nki.jit\n"


def dmas(tmp_path, src, args, legacy=True):
    res, _ = run_source(tmp_path, (LEGACY if legacy else NEW) + src, args)
    assert res.status == "ok", (res.error, [f.message for f in res.findings])
    return [(e.direction, e.bytes, e.partitions, e.transfers, e.hbm_box, e.extra.get("hbm_elem_bytes"))
            for e in res.trace if e.engine == "dma"]


GRID = """
def k(x):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(C)[None, :]
    for t in nl.affine_range((R + 127) // 128):
        v = nl.load(x[t * 128 + ip, jf], mask=(t * 128 + ip < R))
        nl.store(out[t * 128 + ip, jf], value=v, mask=(t * 128 + ip < R))
    return out
"""


@pytest.mark.parametrize("dtype, size", [(np.float32, 4), (ml_dtypes.bfloat16, 2)])
def test_masked_index_grid_rows_move_only_the_rows_that_exist(tmp_path, dtype, size):
    x = np.ones((300, 512), dtype)
    got = dmas(tmp_path, GRID, [x])
    # full tiles: 128 rows x 512 elements, one descriptor per partition (each row is one contiguous run)
    assert got[0] == ("load", 128 * 512 * size, 128, 128, ((0, 128), (0, 512)), size)
    assert got[1] == ("store", 128 * 512 * size, 128, 128, ((0, 128), (0, 512)), size)
    # the ragged tile: rows 256..299 only (the box is clipped to the tensor, not 256..384)
    assert got[4] == ("load", 44 * 512 * size, 44, 44, ((256, 300), (0, 512)), size)
    assert got[5] == ("store", 44 * 512 * size, 44, 44, ((256, 300), (0, 512)), size)


@pytest.mark.parametrize("index, expect", [
    # a column slice: 256 contiguous elements per partition
    ("x[0:128, 128:384]", (128 * 256 * 4, 128, 128, ((0, 128), (128, 384)))),
    # whole rows of a [128, 512] tensor: one run per partition (runs never cross partitions)
    ("x[0:128, 0:512]", (128 * 512 * 4, 128, 128, ((0, 128), (0, 512)))),
    # every other column: each element is its own run
    ("x[0:128, 0:512:2]", (128 * 256 * 4, 128, 128 * 256, ((0, 128), (0, 511)))),
    # 64 partitions
    ("x[64:128, 0:512]", (64 * 512 * 4, 64, 64, ((64, 128), (0, 512)))),
])
def test_slices_and_strides(tmp_path, index, expect):
    src = f"""
def k(x):
    out = nl.ndarray((1, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    v = nl.load({index})
    nl.store(out, value=nl.copy(v[0:1, 0:1]))
    return out
"""
    got = dmas(tmp_path, src, [np.ones((128, 512), np.float32)])
    assert got[0][1:5] == expect


def test_a_free_axis_mask_counts_the_kept_columns(tmp_path):
    src = """
def k(x):
    out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(512)[None, :]
    v = nl.load(x[ip, jf], mask=(jf < 100))
    nl.store(out[ip, jf], value=v, mask=(jf < 100))
    return out
"""
    got = dmas(tmp_path, src, [np.ones((128, 512), np.float32)])
    assert got[0] == ("load", 128 * 100 * 4, 128, 128, ((0, 128), (0, 100)), 4)


def test_a_transposing_index_grid_is_one_descriptor_per_element(tmp_path):
    # element (p, f) of the tile is x[f, p]: consecutive elements of a partition are 128 apart in HBM
    src = """
def k(x):
    out = nl.ndarray((1, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(64)[None, :]
    v = nl.load(x[jf, ip])
    nl.store(out, value=nl.copy(v[0:1, 0:1]))
    return out
"""
    got = dmas(tmp_path, src, [np.ones((64, 128), np.float32)])
    assert got[0] == ("load", 128 * 64 * 4, 128, 128 * 64, ((0, 64), (0, 128)), 4)


def test_a_three_axis_grid_merges_the_contiguous_free_axes(tmp_path):
    src = """
def k(x):
    out = nl.ndarray((1, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    i0, i1, i2 = nl.mgrid[0:128, 0:4, 0:16]
    v = nl.load(x[i0, i1, i2])
    nl.store(out, value=nl.copy(v[0:1, 0, 0:1]))
    return out
"""
    got = dmas(tmp_path, src, [np.ones((128, 4, 16), np.float32)])
    assert got[0] == ("load", 128 * 64 * 4, 128, 128, ((0, 128), (0, 4), (0, 16)), 4)


def test_new_dialect_clamped_tail_and_the_whole_tensor_flag(tmp_path):
    src = """
def k(x):
    R, D = x.shape
    out = nl.ndarray((R, D), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range((R + 127) // 128):
        n = min(128, R - t * 128)
        xt = nl.ndarray((128, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[0:n, 0:D], src=x[t * 128:t * 128 + n, 0:D])
        nisa.dma_copy(dst=out[t * 128:t * 128 + n, 0:D], src=xt[0:n, 0:D])
    return out
"""
    x = np.ones((200, 96), ml_dtypes.bfloat16)
    res, _ = run_source(tmp_path, NEW + src, [x])
    loads = [e for e in res.trace if e.engine == "dma" and e.direction == "load"]
    assert [(e.bytes, e.partitions, e.transfers, e.hbm_box) for e in loads] == [
        (128 * 96 * 2, 128, 128, ((0, 128), (0, 96))), (72 * 96 * 2, 72, 72, ((128, 200), (0, 96)))]
    assert not any(e.extra.get("whole_tensor") for e in loads)
    small = np.ones((64, 96), ml_dtypes.bfloat16)
    res, _ = run_source(tmp_path, NEW + src, [small])
    assert all(e.extra.get("whole_tensor") for e in res.trace if e.engine == "dma")
