"""Smaller API behaviours, with kernels written inline: PSUM accumulate= rules, enums, typing, stubs."""

from __future__ import annotations

import textwrap

import numpy as np

from nki_assist.api.hardware import get_target
from nki_assist.sim import run_kernel

NEW = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\nimport nki.typing as nt\n\n"
LEGACY = "import neuronxcc.nki as nki\nimport neuronxcc.nki.isa as nisa\nimport neuronxcc.nki.language as nl\n\n"


def _run(tmp_path, header, body, args, **kw):
    path = tmp_path / "k.py"
    path.write_text(header + textwrap.dedent(body))
    return run_kernel(str(path), None, args, target=get_target(kw.pop("target", "trn2")), **kw)


def _line(tmp_path, text):
    return next(i for i, ln in enumerate((tmp_path / "k.py").read_text().splitlines(), 1) if text in ln)


def test_new_dialect_accumulate_flags(tmp_path):
    body = """
    @nki.jit(mode="simulation")
    def k(a: nt.tensor[128, 128], b: nt.tensor[256, 512]):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        at = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=at, src=a)
        acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        for rep in range(2):
            for kk in range(2):
                bt = nl.ndarray((128, 512), dtype=b.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=bt, src=b[kk * 128:(kk + 1) * 128, :])
                nisa.nc_matmul(acc, at, bt, accumulate=(kk > 0))
        res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out, src=res)
        return out
    """
    a = np.eye(128, dtype=np.float32)
    b = np.arange(256 * 512, dtype=np.float32).reshape(256, 512) % 7
    res = _run(tmp_path, NEW, body, [a, b])
    assert res.status == "ok" and res.findings == []
    # accumulate=False on the first k of each rep restarts the group: one rep's sum, not two
    np.testing.assert_array_equal(res.outputs[0], b[:128] + b[128:])
    bad = _run(tmp_path, NEW, body.replace("accumulate=(kk > 0)", "accumulate=True"), [a, b])
    assert [(f.rule, f.line) for f in bad.findings] == [("SIM111", _line(tmp_path, "nisa.nc_matmul"))]


def test_new_dialect_iota_affine_select_and_memset_dtype(tmp_path):
    body = """
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        idx = nl.ndarray((128, 128), dtype=nl.int32, buffer=nl.sbuf)
        nisa.iota(idx, [[1, 128]], offset=0, channel_multiplier=-1)
        ones = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(ones, 1.0)
        tri = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        nisa.affine_select(tri, [[-1, 128]], 1, ones, 0.0, cmp_op=nl.greater_equal)
        nisa.tensor_tensor(tri, tri, idx, op=nl.multiply)
        ints = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(ints, 2.0)
        nisa.dma_copy(dst=out, src=tri)
        return out
    """
    res = _run(tmp_path, NEW, body, [np.zeros((1, 1), np.float32)])
    assert res.status == "ok"
    p, f = np.mgrid[0:128, 0:128]
    np.testing.assert_array_equal(res.outputs[0], np.where(p - f >= 0, f - p, 0).astype(np.float32))
    assert [(x.rule, x.line) for x in res.findings] == [("SIM107", _line(tmp_path, "nisa.memset(ints, 2.0)"))]
    assert {t.op: t.engine for t in res.trace}["iota"] == "gpsimd"


def test_unknown_nki_api_is_an_unsupported_finding_naming_it(tmp_path):
    body = """
    @nki.jit
    def k(x):
        t = nl.load(x)
        y = nl.fancy_new_op(t)
        return y
    """
    res = _run(tmp_path, LEGACY, body, [np.ones((4, 4), np.float32)])
    assert res.status == "unsupported"
    (f,) = res.findings
    assert f.rule == "SIM115" and f.line == _line(tmp_path, "fancy_new_op")
    assert "neuronxcc.nki.language.fancy_new_op" in f.message


def test_low_precision_check_ignores_one_off_updates_of_distinct_slices(tmp_path):
    body = """
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 8), dtype=nl.bfloat16, buffer=nl.shared_hbm)
        t = nl.load(x)
        for j in nl.sequential_range(8):
            t[:, j:j + 1] = nl.add(t[:, j:j + 1], 1.0)
        nl.store(out, value=t)
        return out
    """
    import ml_dtypes

    x = np.zeros((128, 8), ml_dtypes.bfloat16)
    res = _run(tmp_path, LEGACY, body, [x])
    assert res.status == "ok" and res.findings == []
    assert (res.outputs[0].astype(np.float32) == 1.0).all()


def test_affine_range_is_plain_range_in_the_new_dialect(tmp_path):
    body = """
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(4):
            part = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_reduce(part, nl.add, x_tile := nl.load(x[:, j * 16:(j + 1) * 16]), axis=1, keepdims=True)
            nisa.tensor_tensor(acc, acc, part, op=nl.add)
        nisa.dma_copy(dst=out, src=acc)
        return out
    """
    x = np.random.default_rng(0).standard_normal((128, 64)).astype(np.float32)
    res = _run(tmp_path, NEW, body, [x])
    assert res.status == "ok" and res.findings == []  # sequential semantics, no SIM110 in 0.2+
    np.testing.assert_allclose(res.outputs[0], x.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_kernel_exit_stub_dtype_and_output_arguments(tmp_path):
    exits = _run(tmp_path, LEGACY, """
    import sys

    @nki.jit
    def k(x):
        sys.exit(3)
    """, [np.ones((4, 4), np.float32)])
    assert exits.status == "kernel-error" and [f.rule for f in exits.findings] == ["SIM114"]
    jax_dtype = _run(tmp_path, LEGACY, """
    import jax.numpy as jnp

    @nki.jit
    def k(x):
        t = nl.ndarray((4, 4), dtype=jnp.float32)
        return t
    """, [np.ones((4, 4), np.float32)])
    assert jax_dtype.status == "unsupported"
    assert [(f.rule, "jax.numpy.float32" in f.message) for f in jax_dtype.findings] == [("SIM115", True)]
    # baremetal style: the output is an argument the kernel writes, nothing is returned
    in_place = _run(tmp_path, LEGACY, """
    @nki.baremetal
    def k(x, out):
        nl.store(out, value=nl.exp(nl.load(x)))
    """, [np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32)])
    assert in_place.status == "ok" and len(in_place.outputs) == 1
    np.testing.assert_array_equal(in_place.outputs[0], np.ones((4, 4), np.float32))


def test_rebound_bf16_running_sum_is_reported_and_names_the_tile(tmp_path):
    body = """
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        total = nl.zeros((128, 1), dtype=nl.bfloat16)
        for j in nl.sequential_range(8):
            part = nl.sum(nl.load(x[:, j * 64:(j + 1) * 64]), axis=1, keepdims=True)
            total = nl.add(total, part, dtype=nl.bfloat16)
        nl.store(out, value=nl.copy(total, dtype=nl.float32))
        return out
    """
    res = _run(tmp_path, LEGACY, body, [np.ones((128, 512), np.float32)])
    (f,) = res.findings
    assert (f.rule, f.line) == ("SIM116", _line(tmp_path, "total = nl.add"))
    assert "total[128, 1]" in f.message
    clean = _run(tmp_path, LEGACY, body.replace("dtype=nl.bfloat16)\n        nl.store", "dtype=nl.float32)\n        nl.store")
                 .replace("nl.zeros((128, 1), dtype=nl.bfloat16)", "nl.zeros((128, 1), dtype=nl.float32)"),
                 [np.ones((128, 512), np.float32)])
    assert clean.findings == []


def test_huge_tile_is_reported_before_the_allocation_fails(tmp_path):
    body = """
    @nki.jit
    def k(x):
        big = nl.ndarray((128, 1 << 40), dtype=nl.float32)
        return x
    """
    res = _run(tmp_path, LEGACY, body, [np.ones((4, 4), np.float32)])
    assert res.status in ("out-of-memory", "kernel-error")
    line = _line(tmp_path, "big = nl.ndarray")
    assert ("SIM104", line) in [(f.rule, f.line) for f in res.findings]
    assert res.error_line == line


def test_strict_stop_cannot_be_swallowed_by_the_kernel(tmp_path):
    body = """
    @nki.jit
    def k(x):
        try:
            t = nl.load(x[0:256, :])
        except Exception:
            t = None
        return x
    """
    res = _run(tmp_path, LEGACY, body, [np.ones((256, 4), np.float32)], lenient=False)
    assert res.status == "kernel-error" and [f.rule for f in res.findings] == ["SIM101"]


def test_load_transpose2d_and_dma_transpose(tmp_path):
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    legacy = _run(tmp_path, LEGACY, """
    @nki.jit
    def k(x):
        out = nl.ndarray((32, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load_transpose2d(x))
        return out
    """, [x])
    new = _run(tmp_path, NEW, """
    @nki.jit
    def k(x):
        out = nl.ndarray((32, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((32, 64), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=t, src=x)
        nisa.dma_copy(dst=out, src=t)
        return out
    """, [x])
    for res in (legacy, new):
        assert res.status == "ok" and res.findings == []
        np.testing.assert_array_equal(res.outputs[0], x.T)
        (tr,) = [t for t in res.trace if t.op == "dma_transpose"]
        assert tr.engine == "dma" and tr.direction == "load" and tr.bytes == 64 * 32 * 4
