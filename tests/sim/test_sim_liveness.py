"""SBUF is counted from a tile's allocation to its last use (sim/liveness.py), not until Python drops it.

A chain of wide temporaries held by variables is over budget only in the ledger (the nki-samples layernorm
tutorial at its default size was reported SIM104 that way); the same tiles all used at the end are over budget
by any allocator and stay an error, at the allocation that reaches the peak.
"""

from __future__ import annotations

import textwrap

import numpy as np

from nki_assist.api.hardware import get_target
from nki_assist.findings import Severity
from nki_assist.sim import run_kernel

LEGACY = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n\n"
D = 12288  # one [128, D] fp32 tile is 48 KiB per partition: five of them pass trn2's budget, two do not

CHAIN = """
@nki.jit
def k(x):
    out = nl.ndarray((128, {D}), dtype=x.dtype, buffer=nl.shared_hbm)
    t0 = nl.load(x)
    t1 = nl.multiply(t0, 2.0)
    t2 = nl.add(t1, 1.0)
    t3 = nl.multiply(t2, 3.0)
    t4 = nl.subtract(t3, 1.0)
    {tail}
    return out
"""


def _run(tmp_path, tail):
    path = tmp_path / "k.py"
    path.write_text(LEGACY + textwrap.dedent(CHAIN).format(D=D, tail=tail))
    x = np.linspace(-1, 1, 128 * D, dtype=np.float32).reshape(128, D)
    return run_kernel(str(path), None, [x], target=get_target("trn2")), x, path


def _line(path, text):
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


def test_a_chain_of_temporaries_held_by_variables_fits(tmp_path):
    res, x, _ = _run(tmp_path, "nl.store(out, value=t4)")
    budget = get_target("trn2").sbuf_usable_bytes_per_partition
    assert res.status == "ok" and [f.rule for f in res.findings] == []
    np.testing.assert_allclose(res.outputs[0], (x * 2 + 1) * 3 - 1, rtol=1e-6)
    # one tile at a time (an elementwise result can take its operand's place), although five are held by
    # variables at the end
    assert res.peaks.sbuf_bytes_per_partition == D * 4 < budget < 5 * D * 4


def test_tiles_all_used_at_the_end_are_over_budget(tmp_path):
    res, _, path = _run(tmp_path, "nl.store(out, value=nl.add(nl.add(t0, t1), nl.add(t2, nl.add(t3, t4))))")
    sbuf = [f for f in res.findings if f.rule == "SIM104"]
    assert len(sbuf) == 1 and sbuf[0].severity == Severity.ERROR
    # the peak is reached when t4 joins the four tiles the final sum still needs
    assert sbuf[0].line == _line(path, "t4 = nl.subtract") and sbuf[0].evidence["live_bytes_per_partition"] == 5 * D * 4
    assert res.peaks.sbuf_bytes_per_partition == 5 * D * 4
    assert sbuf[0].evidence["held_by_variables_bytes_per_partition"] >= 5 * D * 4


def test_a_direct_allocation_keeps_its_space_until_released(tmp_path):
    # the same chain with each tile placed by the kernel (`mod_alloc`): placed tiles are not freed at their
    # last use, so five held at the end pass the budget as before
    path = tmp_path / "k.py"
    src = textwrap.dedent(CHAIN).format(D=D, tail="nl.store(out, value=t4)")
    for i, expr in enumerate(["nl.load(x)", "nl.multiply(t0, 2.0)", "nl.add(t1, 1.0)", "nl.multiply(t2, 3.0)",
                              "nl.subtract(t3, 1.0)"]):
        placed = (f"nl.ndarray((128, {D}), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr={i * D * 4}))\n"
                  f"    t{i}[...] = {expr}")
        src = src.replace(f"t{i} = {expr}", f"t{i} = {placed}")
    path.write_text(LEGACY + "import neuronxcc.nki.compiler as ncc\n" + src)
    x = np.linspace(-1, 1, 128 * D, dtype=np.float32).reshape(128, D)
    res = run_kernel(str(path), None, [x], target=get_target("trn2"))
    np.testing.assert_allclose(res.outputs[0], (x * 2 + 1) * 3 - 1, rtol=1e-6)
    (f,) = [f for f in res.findings if f.rule == "SIM104"]
    assert f.evidence["live_bytes_per_partition"] > get_target("trn2").sbuf_usable_bytes_per_partition
