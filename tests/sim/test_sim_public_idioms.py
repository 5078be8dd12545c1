"""Constructs AWS's public NKI samples use (our own small kernels exercising each one): modelled with the
documented semantics, or stopped with an info tool-limit finding, never an error about the kernel."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from sim_helpers import run_source

LEGACY = "import numpy as np\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n" \
         "import neuronxcc.nki.isa as nisa\nimport neuronxcc.nki.compiler as ncc\n" \
         "from neuronxcc.nki.language import par_dim\n"
NEW = "import numpy as np\nimport nki\nimport nki.language as nl\nimport nki.isa as nisa\n"
rng = np.random.default_rng(3)


def run(tmp_path, src, args, *, legacy=True, target="trn2"):
    return run_source(tmp_path, (LEGACY if legacy else NEW) + src, args, target)[0]


def ok(res):
    assert res.status == "ok", (res.error, [f"{f.rule}:{f.line} {f.message}" for f in res.findings])
    assert [f for f in res.findings if f.severity.value == "error"] == []
    return res


@pytest.mark.parametrize("init", ["0.5", "init_t"])
def test_tensor_tensor_scan_is_the_documented_recurrence(tmp_path, init):
    src = f"""
@nki.jit
def scan(a, b, c):
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    at = nl.load(a)
    bt = nl.load(b)
    init_t = nl.load(c)
    r = nisa.tensor_tensor_scan(at, bt, initial={init}, op0=np.multiply, op1=np.add)
    nl.store(out, value=r)
    return out
"""
    a, b = rng.uniform(0.5, 1, (128, 40)).astype(np.float32), rng.standard_normal((128, 40)).astype(np.float32)
    c = rng.standard_normal((128, 1)).astype(np.float32)
    res = ok(run(tmp_path, src, [a, b, c]))
    prev = np.full(128, 0.5) if init == "0.5" else c[:, 0].astype(np.float64)
    ref = np.empty((128, 40))
    for i in range(40):
        prev = a[:, i] * prev + b[:, i]
        ref[:, i] = prev
    np.testing.assert_allclose(res.outputs[0], ref, rtol=1e-5, atol=1e-5)


def test_tensor_scalar_reduce_both_dialects(tmp_path):
    legacy = """
@nki.jit
def tsr(x):
    out = nl.ndarray((128, 65), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.load(x)
    red = nl.ndarray((128, 1), dtype=nl.float32)
    y = nisa.tensor_scalar_reduce(data=xt, op0=np.multiply, operand0=2.0, reduce_op=nl.max, reduce_res=red)
    nl.store(out[:, 0:64], value=y)
    nl.store(out[:, 64:65], value=red)
    return out
"""
    new = """
@nki.jit
def tsr(x):
    out = nl.ndarray((128, 65), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=xt, src=x)
    y = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    red = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=y, data=xt, op0=nl.multiply, operand0=2.0, reduce_op=nl.maximum, reduce_res=red)
    nisa.dma_copy(dst=out[:, 0:64], src=y)
    nisa.dma_copy(dst=out[:, 64:65], src=red)
    return out
"""
    x = rng.standard_normal((128, 64)).astype(np.float32)
    for src, legacy_dialect in ((legacy, True), (new, False)):
        res = ok(run(tmp_path, src, [x], legacy=legacy_dialect))
        np.testing.assert_allclose(res.outputs[0][:, :64], 2 * x)
        np.testing.assert_allclose(res.outputs[0][:, 64], 2 * x.max(1))


def test_shared_constant_finfo_fp32_and_nc_version(tmp_path):
    src = """
@nki.jit
def consts(x):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    eye = nl.load(nl.shared_constant(np.identity(128, dtype=np.int8), dtype=nl.float32))
    lo = nl.finfo(nl.bfloat16).min
    gen = 1.0 if nisa.get_nc_version() >= nisa.nc_version.gen3 else 0.0
    y = nl.add(nl.multiply(eye, gen), nl.fp32.max * 0.0 + lo * 0.0)
    nl.store(out, value=y)
    return out
"""
    res = ok(run(tmp_path, src, [np.zeros((1, 1), np.float32)]))
    np.testing.assert_array_equal(res.outputs[0], np.identity(128))  # trn2 is gen3
    res = ok(run(tmp_path, src, [np.zeros((1, 1), np.float32)], target="trn1"))
    np.testing.assert_array_equal(res.outputs[0], np.zeros((128, 128)))


def test_sizeinbytes_constants_module(tmp_path):
    src = """
from neuronxcc.nki.language.constants import sizeinbytes


@nki.jit
def sizes(x):
    out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.full((128, 1), sizeinbytes(np.float32) * 10 + sizeinbytes(nl.bfloat16), nl.float32))
    return out
"""
    res = ok(run(tmp_path, src, [np.zeros((1, 1), np.float32)]))
    assert res.outputs[0][0, 0] == 42


def test_direct_allocation_counts_the_physical_tiles(tmp_path):
    # 12 logical [128, 512] fp32 blocks in PSUM rotating through 2 banks: 2 banks live, not 12
    src = """
@nki.jit
def rotate(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.load(x)
    acc = nl.ndarray((12, par_dim(128), 512), dtype=nl.float32, buffer=BUFFER)
    for i in nl.affine_range(12):
        acc[i] = nl.matmul(xt[:, 0:128], xt, transpose_x=True)
    nl.store(out, value=nl.copy(acc[11], dtype=nl.float32))
    return out
"""
    x = rng.standard_normal((128, 512)).astype(np.float32)
    res = ok(run(tmp_path, src.replace("BUFFER", "ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(2,))"), [x]))
    assert res.peaks.psum_banks == 2 and not any(f.rule == "SIM103" for f in res.findings)
    # auto-allocated: each block lives from its first to its last use, so only the block in use counts
    res = ok(run(tmp_path, src.replace("BUFFER", "nl.psum"), [x]))
    assert res.peaks.psum_banks == 1 and not any(f.rule == "SIM103" for f in res.findings)
    # every block read after the loop: all 12 are live at once (the compiler spills: a warning, not an error)
    every = src.replace("BUFFER", "nl.psum").replace(
        "nl.store(out, value=nl.copy(acc[11], dtype=nl.float32))",
        "tot = nl.copy(acc[0], dtype=nl.float32)\n    for j in range(1, 12):\n        tot = nl.add(tot, acc[j])\n"
        "    nl.store(out, value=tot)")
    res = run(tmp_path, every, [x])
    (f,) = [f for f in res.findings if f.rule == "SIM103"]
    assert f.severity.value == "warning" and res.peaks.psum_banks == 12 and f.evidence["blocks_live"] == 12


def test_mgrid_attributes_and_iota_of_a_grid_expression(tmp_path):
    src = """
@nki.jit
def grid(x):
    out = nl.ndarray((128, 4, 3), dtype=nl.float32, buffer=nl.shared_hbm)
    w = nl.mgrid[0:128, 0:4, 0:3]
    idx = nisa.iota(3 * w.x + w.y, dtype=nl.float32)
    nl.store(out[w.p, w.x, w.y], value=idx)
    return out
"""
    res = ok(run(tmp_path, src, [np.zeros((1, 1), np.float32)]))
    assert res.outputs[0].shape == (128, 4, 3)
    np.testing.assert_array_equal(res.outputs[0][77], np.arange(12).reshape(4, 3))


def test_double_row_fp8_matmul_contracts_both_rows_of_each_partition(tmp_path):
    src = """
@nki.jit
def dr(a, b):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    at = nl.load(a)
    bt = nl.load(b)
    r = nisa.nc_matmul(at, bt, perf_mode='double_row_gen3')
    nl.store(out, value=nl.copy(r, dtype=nl.float32))
    return out
"""
    a = rng.uniform(-1, 1, (128, 2, 128)).astype(ml_dtypes.float8_e4m3)
    b = rng.uniform(-1, 1, (128, 2, 512)).astype(ml_dtypes.float8_e4m3)
    res = ok(run(tmp_path, src, [a, b]))
    ref = a.astype(np.float64).reshape(256, 128).T @ b.astype(np.float64).reshape(256, 512)
    np.testing.assert_allclose(res.outputs[0], ref, rtol=1e-5, atol=1e-4)
    mm = next(e for e in res.trace if e.op == "nc_matmul")
    assert mm.extra["k"] == 256 and mm.extra["perf_mode"] == "double_row"


def test_legacy_idioms_of_the_attention_samples(tmp_path):
    # `t[:, j]` of a tile stays [P, 1]; a TensorE transpose result (PSUM) fed to a matmul is copied by the
    # legacy compiler (a warning); `psum += matmul` onto an nl.ndarray PSUM tile starts the group; SBUF `+=`
    # inside affine_range is an associative reduction
    src = """
@nki.jit
def idioms(x):
    out = nl.ndarray((128, 129), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.load(x)
    stats = nl.ndarray((128, 4), dtype=nl.float32)
    stats[...] = nl.full((128, 4), 3.0, dtype=nl.float32)
    col = stats[:, 2]
    one = nl.copy(col[:, 0], dtype=nl.float32)
    acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    tot = nl.zeros((128, 128), dtype=nl.float32)
    for k in nl.affine_range(2):
        xT = nisa.nc_transpose(xt)
        acc += nisa.nc_matmul(xT, xt)
        tot += xt
    nl.store(out[:, 0:128], value=nl.add(nl.copy(acc, dtype=nl.float32), tot))
    nl.store(out[:, 128:129], value=one)
    return out
"""
    x = rng.standard_normal((128, 128)).astype(np.float32)
    res = run(tmp_path, src, [x])
    assert res.status == "ok"
    assert [(f.rule, f.severity.value) for f in res.findings] == [("SIM106", "warning")]
    np.testing.assert_allclose(res.outputs[0][:, :128], 2 * (x @ x) + 2 * x, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(res.outputs[0][:, 128], 3.0)


@pytest.mark.parametrize("call, rule, severity", [
    ("y = nisa.made_up_instruction(data=xt)", "SIM115", "warning"),   # not an NKI API: keyword-only call
    ("y = xt[xt_mask]", "SIM117", "info"),                           # operand masking by tile[mask]
    ("y = xt.ap(pattern=[[64, 128], [1, 64]], dtype=nl.int32)", "SIM117", "info"),  # .ap() reinterpreting
])
def test_constructs_the_simulator_does_not_model_stop_with_a_named_finding(tmp_path, call, rule, severity):
    src = f"""
@nki.jit
def k(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.load(x)
    xt_mask = nl.arange(64)[None, :] < 32
    {call}
    nl.store(out, value=y)
    return out
"""
    res = run(tmp_path, src, [np.ones((128, 64), np.float32)])
    assert res.status == "unsupported"
    assert [(f.rule, f.severity.value) for f in res.findings] == [(rule, severity)]
    assert f.evidence["api"] if (f := res.findings[0]) else False


def test_reshape_with_a_shape_keyword_and_a_legacy_dma_transpose(tmp_path):
    src = """
@nki.jit
def k(x):
    out = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nisa.dma_transpose(x.reshape(shape=(128, 64)))
    nl.store(out, value=t)
    return out
"""
    x = rng.standard_normal(128 * 64).astype(np.float32)
    res = ok(run(tmp_path, src, [x]))
    np.testing.assert_array_equal(res.outputs[0], x.reshape(128, 64).T)
    assert next(e for e in res.trace if e.engine == "dma").op == "dma_transpose"
