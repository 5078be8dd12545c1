"""A masked-off tail is not an uninitialized read until its values reach a result.

Legacy kernels load a ragged tail with `mask=`, run unmasked ops on the whole tile and store with the
same mask: correct code, no SIM111. The unwritten rows are carried through elementwise ops and
per-partition reductions and reported only where they reach a result (an unmasked store, a reduction
that mixes them with written elements)."""

from __future__ import annotations

import numpy as np
import pytest

from nki_assist.api.hardware import get_target
from nki_assist.sim import run_kernel

KERNEL = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def exp_rows(a):
    N, D = a.shape
    out = nl.ndarray((N, D), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(D)[None, :]
    for t in nl.affine_range((N + 127) // 128):
        x = nl.load(a[t * 128 + i_p, i_f], mask=(t * 128 + i_p < N))
        y = nl.exp(x)
        z = nl.multiply(y, 2.0)
        CONSUME
        nl.store(out[t * 128 + i_p, i_f], value=z, mask=(t * 128 + i_p < N))
    return out
"""


def run(tmp_path, consume: str, store_mask: bool = True):
    src = KERNEL.replace("CONSUME", consume)
    if not store_mask:
        src = src.replace(", value=z, mask=(t * 128 + i_p < N))", ", value=z)")
    path = tmp_path / "k.py"
    path.write_text(src)
    a = np.random.default_rng(0).random((200, 64)).astype(np.float32)
    r = run_kernel(str(path), None, [a], target=get_target("trn2"))
    return r, a, src.splitlines()


def line_of(lines, text):
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_masked_load_elementwise_masked_store_is_clean(tmp_path):
    r, a, _ = run(tmp_path, "pass")
    assert r.status == "ok" and [f.rule for f in r.findings] == []
    np.testing.assert_allclose(r.outputs[0], 2 * np.exp(a), rtol=1e-6)


def test_a_free_axis_reduction_of_unwritten_partitions_stays_unwritten(tmp_path):
    # each never-loaded partition reduces only its own garbage: the sum is unwritten in those rows, and the
    # masked store never reads them
    r, a, lines = run(tmp_path, "s = nl.sum(y, axis=1, keepdims=True)\n        z = nl.multiply(z, s)")
    assert [(f.rule, f.line) for f in r.findings] == []
    y = np.exp(a.astype(np.float32))
    np.testing.assert_allclose(r.outputs[0], 2 * y * y.sum(1, keepdims=True), rtol=1e-5)


def test_a_reduction_mixing_written_and_unwritten_elements_is_reported_at_the_reduction(tmp_path):
    # a free-axis mask leaves columns unwritten in every row: summing whole rows mixes them in
    src = KERNEL.replace("mask=(t * 128 + i_p < N))\n        y", "mask=(i_f < D - 8))\n        y")
    src = src.replace("CONSUME", "s = nl.sum(y, axis=1)")
    path = tmp_path / "k.py"
    path.write_text(src)
    a = np.random.default_rng(0).random((256, 64)).astype(np.float32)
    r = run_kernel(str(path), None, [a], target=get_target("trn2"))
    lines = src.splitlines()
    assert ("SIM111", line_of(lines, "nl.sum(y")) in [(f.rule, f.line) for f in r.findings]


def test_storing_the_unwritten_tail_is_reported_at_the_store(tmp_path):
    r, _, lines = run(tmp_path, "pass", store_mask=False)
    assert ("SIM111", line_of(lines, "nl.store(")) in [(f.rule, f.line) for f in r.findings]


@pytest.mark.parametrize("consume", ["w = nl.exp(junk)"])
def test_a_tile_nothing_was_written_to_is_reported_at_its_first_read(tmp_path, consume):
    r, _, lines = run(tmp_path, "junk = nl.ndarray((128, D), dtype=nl.float32)\n        " + consume)
    assert [(f.rule, f.line) for f in r.findings] == [("SIM111", line_of(lines, consume))]
