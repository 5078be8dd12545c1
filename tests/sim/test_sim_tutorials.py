"""Tutorial-style kernels (our own code): block dims, hoisted loads, mgrid pooling, rmsnorm, attention."""

from __future__ import annotations

import ml_dtypes
import numpy as np
from sim_helpers import fixture

from nki_assist.api.hardware import get_target
from nki_assist.sim import run_kernel

BF16 = ml_dtypes.bfloat16
rng = np.random.default_rng(11)


def _ok(name, args):
    res = run_kernel(fixture(name), None, args, target=get_target("trn2"))
    assert res.status == "ok", res.error
    assert res.findings == [], [f"{f.rule}:{f.line} {f.message}" for f in res.findings]
    return res


def test_rmsnorm_masked_ragged_rows_with_partition_vectors():
    a = rng.standard_normal((300, 256)).astype(np.float32)
    g = rng.standard_normal((256,)).astype(np.float32)
    res = _ok("legacy_rmsnorm.py", [a, g])
    ref = a / np.sqrt((a.astype(np.float64) ** 2).mean(axis=1, keepdims=True)) * g
    np.testing.assert_allclose(res.outputs[0], ref, rtol=1e-5, atol=1e-5)


def test_blocked_matmul_with_block_dims_and_psum_blocks():
    a = rng.standard_normal((512, 512)).astype(BF16)
    b = rng.standard_normal((512, 1024)).astype(BF16)
    res = _ok("legacy_blocked_matmul.py", [a, b])
    np.testing.assert_allclose(res.outputs[0], a.astype(np.float64).T @ b.astype(np.float64), rtol=1e-5, atol=1e-4)
    # the [2, 128, 512] fp32 PSUM accumulator occupies two banks; lhs tiles [4, 128, 256] bf16 = 2 KiB/partition
    assert res.peaks.psum_banks == 2
    assert res.peaks.sbuf_bytes_per_partition == 4 * 256 * 2 + 512 * 2
    loads = [t for t in res.trace if t.hbm_tensor == "lhsT"]
    assert len(loads) == (512 // 128) * (512 // 256)  # hoisted: loaded once per row block, not per n


def test_avgpool_multi_term_index_expressions():
    x = rng.standard_normal((16, 12, 20)).astype(np.float32)
    res = _ok("legacy_avgpool.py", [x, 2])
    np.testing.assert_allclose(res.outputs[0], x.reshape(16, 6, 2, 10, 2).mean(axis=(2, 4)), rtol=1e-6, atol=1e-6)


def test_causal_attention_affine_select_transposes_and_psum_accumulation():
    S, d = 512, 128
    q = rng.standard_normal((d, S)).astype(BF16)
    k = rng.standard_normal((d, S)).astype(BF16)
    v = rng.standard_normal((S, d)).astype(BF16)
    scale = 1.0 / np.sqrt(d)
    res = _ok("legacy_attention.py", [q, k, v, scale])
    s = (q.astype(np.float64).T @ k.astype(np.float64)) * scale
    s = np.where(np.tril(np.ones((S, S))) > 0, s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(res.outputs[0], p @ v.astype(np.float64), rtol=2e-2, atol=1e-2)
    engines = {t.op: t.engine for t in res.trace}
    assert engines["affine_select"] == "gpsimd" and engines["nc_transpose"] == "tensor"
    assert sum(t.op == "nc_transpose" for t in res.trace) == (S // 128) ** 2
