"""Per-block lifetimes of legacy block-dimension tiles: a kernel-scope [64, par_dim(128), 1024] fp32 tile
(256 KiB per partition, more than SBUF) used one block per iteration needs one block; read all at once
after the loop, they do not fit (a warning). nl.loop_reduce initialises its destination on the first iteration."""

from __future__ import annotations

import textwrap

import numpy as np

from nki_assist.api.hardware import get_target
from nki_assist.sim import run_kernel

LEGACY = "import numpy as np\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"

BLOCKS = """
@nki.jit
def k(x):
    out = nl.ndarray((64, 128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    buf = nl.ndarray((64, nl.par_dim(128), 1024), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(64):
        buf[i] = nl.load(x[i])
        nl.store(out[i], value=nl.multiply(buf[i], 2.0))
    TAIL
    return out
"""


def _run(tmp_path, src, args):
    (tmp_path / "k.py").write_text(LEGACY + textwrap.dedent(src))
    return run_kernel(str(tmp_path / "k.py"), None, args, target=get_target("trn2"))


def _line(tmp_path, text):
    return next(i for i, ln in enumerate((tmp_path / "k.py").read_text().splitlines(), 1) if text in ln)


def test_blocks_used_one_at_a_time_need_one_block(tmp_path):
    x = np.random.default_rng(0).standard_normal((64, 128, 1024)).astype(np.float32)
    res = _run(tmp_path, BLOCKS.replace("TAIL", ""), [x])
    assert res.status == "ok" and res.findings == [], [f.message for f in res.findings]
    np.testing.assert_array_equal(res.outputs[0], 2 * x)
    assert res.peaks.sbuf_bytes_per_partition < 3 * 4096 + 16  # one 4 KiB block (+ the multiply result)


def test_blocks_all_read_after_the_loop_do_not_fit(tmp_path):
    x = np.random.default_rng(0).standard_normal((64, 128, 1024)).astype(np.float32)
    tail = ("acc = nl.copy(buf[0])\n    for j in nl.sequential_range(1, 64):\n"
            "        acc = nl.add(acc, buf[j])\n    nl.store(out[0], value=acc)")
    res = _run(tmp_path, BLOCKS.replace("TAIL", tail), [x])
    (f,) = [f for f in res.findings if f.rule == "SIM104"]
    # a warning: the legacy compiler allocates block tiles itself (it can fuse loops or spill)
    assert f.severity.value == "warning" and f.line == _line(tmp_path, "buf = nl.ndarray")
    assert f.evidence["blocks_live"] == 64 and f.evidence["block_bytes_per_partition"] == 4096
    assert res.peaks.sbuf_bytes_per_partition >= 64 * 4096


def test_loop_reduce_does_not_read_an_uninitialised_destination_on_the_first_iteration(tmp_path):
    src = """
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((2, nl.par_dim(128), 1), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(2):
            for kk in nl.affine_range(4):
                t = nl.load(x[kk, :, j * 64:(j + 1) * 64])
                s = nl.sum(t, axis=1, keepdims=True)
                acc[j, :, :] = nl.loop_reduce(s, op=np.add, loop_indices=[kk], dtype=nl.float32)
        nl.store(out, value=nl.add(acc[0], acc[1]))
        return out
    """
    x = np.random.default_rng(1).standard_normal((4, 128, 128)).astype(np.float32)
    res = _run(tmp_path, src, [x])
    assert res.status == "ok" and res.findings == [], [f.message for f in res.findings]
    np.testing.assert_allclose(res.outputs[0][:, 0], x.sum(axis=(0, 2)), rtol=1e-4, atol=1e-4)
