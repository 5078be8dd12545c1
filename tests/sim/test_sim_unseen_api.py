"""Regressions found by reviewing unseen ports: legacy `nl.loop_reduce`, block-dim partition counts in
the trace, and `mask=` on bn_stats/bn_aggr for a ragged tail."""

from __future__ import annotations

import textwrap

import numpy as np

from nki_assist.api.hardware import get_target
from nki_assist.sim import run_kernel

LEGACY = ("import numpy as np\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.isa as nisa\n"
          "import neuronxcc.nki.language as nl\n\n")


def _line(tmp_path, text):
    return next(i for i, ln in enumerate((tmp_path / "k.py").read_text().splitlines(), 1) if text in ln)


def _run(tmp_path, body, args):
    path = tmp_path / "k.py"
    path.write_text(LEGACY + textwrap.dedent(body))
    return run_kernel(str(path), None, args, target=get_target("trn2"))


LOOP_REDUCE = """
@nki.jit
def k(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((2, nl.par_dim(128), 64), dtype=ACC, buffer=nl.sbuf)
    for j in nl.affine_range(2):
        for kk in nl.sequential_range(4):
            t = nl.load(x[kk, :, j * 64:(j + 1) * 64])
            acc[j, :, :] = nl.loop_reduce(t, op=np.add, loop_indices=[kk], dtype=ACC)
    nl.store(out, value=nl.copy(nl.add(acc[0], acc[1]), dtype=nl.float32))
    return out
"""


def test_loop_reduce_folds_into_the_assigned_block(tmp_path):
    x = np.random.default_rng(0).standard_normal((4, 128, 128)).astype(np.float32)
    res = _run(tmp_path, LOOP_REDUCE.replace("ACC", "nl.float32"), [x])
    assert res.status == "ok" and res.findings == [], (res.error, [f.message for f in res.findings])
    np.testing.assert_allclose(res.outputs[0], x[:, :, :64].sum(0) + x[:, :, 64:].sum(0), rtol=1e-5, atol=1e-5)
    # the block-dim tile [2, par_dim(128), 64] is on 128 partitions, not 2 (trace feeds the cost model)
    memset = next(t for t in res.trace if t.op == "memset")
    assert memset.partitions == 128
    red = [t for t in res.trace if t.op == "tensor_tensor" and t.line == _line(tmp_path, "nl.loop_reduce")]
    assert len(red) == 8 and all(t.partitions == 128 for t in red)


def test_loop_reduce_into_bf16_is_a_low_precision_running_sum(tmp_path):
    x = np.random.default_rng(0).standard_normal((4, 128, 128)).astype(np.float32)
    res = _run(tmp_path, LOOP_REDUCE.replace("ACC", "nl.bfloat16"), [x])
    assert res.status == "ok"
    assert [(f.rule, f.line) for f in res.findings] == [("SIM116", _line(tmp_path, "nl.loop_reduce"))]


BN_MASKED = """
@nki.jit
def k(x):
    R, C = x.shape
    y = nl.ndarray((R, 2), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(C)[None, :]
    i_2 = nl.arange(2)[None, :]
    for t in nl.affine_range((R + 127) // 128):
        valid = t * 128 + i_p < R
        xt = nl.load(x[t * 128 + i_p, i_f], mask=valid)
        st = nisa.bn_stats(xt, MASK)
        mv = nisa.bn_aggr(st, MASK)
        nl.store(y[t * 128 + i_p, i_2], value=mv, mask=valid)
    return y
"""


def test_bn_stats_and_bn_aggr_honour_the_partition_mask(tmp_path):
    x = np.random.default_rng(1).standard_normal((200, 256)).astype(np.float32)
    res = _run(tmp_path, BN_MASKED.replace("MASK", "mask=valid"), [x])
    assert res.status == "ok" and res.findings == [], [f"{f.rule}:{f.line} {f.message}" for f in res.findings]
    np.testing.assert_allclose(res.outputs[0][:, 0], x.mean(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res.outputs[0][:, 1], x.var(1), rtol=1e-4, atol=1e-6)
    # without the mask the tail tile's never-loaded rows give never-written statistics in the same rows,
    # which the masked store skips: correct on hardware, so nothing is reported and the output is the same
    unmasked = _run(tmp_path, BN_MASKED.replace(", MASK", ""), [x])
    assert unmasked.findings == [] and np.array_equal(unmasked.outputs[0], res.outputs[0])
    # storing those rows is what reaches HBM: reported at the store
    bad = _run(tmp_path, BN_MASKED.replace(", MASK", "").replace("value=mv, mask=valid", "value=mv"), [x])
    assert ("SIM111", _line(tmp_path, "nl.store")) in [(f.rule, f.line) for f in bad.findings]
