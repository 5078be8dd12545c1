"""Attribution by size pattern: a cause is attached to a failure only when its signature fits the sizes
that fail (ragged-only <-> tail rules; aligned <-> never a tail rule; NaN/Inf <-> unwritten or overflow)."""

from __future__ import annotations

import numpy as np
from run_evidence import numerics as res
from run_evidence import size_result

from nki_assist.findings import Finding
from nki_assist.numerics.attribution import attribute

NKI = "k_nki.py"
REF = np.random.default_rng(1).normal(size=(128, 64))


def sr(name, bindings, out, fp32=None, unwritten=0):
    return size_result(name, bindings, REF, out, fp32=fp32, unwritten=unwritten, file=NKI)


def static(rule, category, line, fix=None):
    return Finding(rule=rule, name=rule.lower(), category=category, severity="warning", message="m", file=NKI,
                   line=line, fix=fix)


TAIL = static("NKI203", "missing-boundary-mask", 22, fix="Loop `t` over ceil(R / 128) tiles.")
EXP = static("NKI402", "overflow-risk", 24, fix="Subtract the row max before `nl.exp`.")
UNINIT = Finding(rule="SIM111", name="sim-uninitialized-read", category="uninitialized-read", severity="error",
                 message="m", file=NKI, line=30, source="simulation")


def test_aligned_failure_is_never_attributed_to_a_tail_rule():
    wrong = REF * 2
    r = res(sr("aligned", {"R": 256}, wrong), sr("ragged", {"R": 300}, wrong))
    (f,) = [f for f in attribute(r, [TAIL], nki_path=NKI, kernel_line=5) if f.rule == "NUM102"]
    assert f.category == "output-mismatch" and f.line == 5 and f.evidence["cause_rule"] is None
    # an algorithm cause that fits is still found
    epi = static("MIG102", "missing-epilogue", 31, fix="Add `bias` before the store at line 31.")
    (f,) = [f for f in attribute(r, [TAIL, epi], nki_path=NKI, kernel_line=5) if f.rule == "NUM102"]
    assert f.line == 31 and f.evidence["cause_rule"] == "MIG102" and f.fix == epi.fix


def test_a_failure_only_on_a_ragged_size_may_name_the_tail_rule():
    tail = REF.copy()
    tail[100:] = 0.0
    r = res(sr("aligned", {"R": 256}, REF.copy()), sr("ragged", {"R": 300}, tail))
    (f,) = [f for f in attribute(r, [EXP, TAIL], nki_path=NKI, kernel_line=5) if f.rule == "NUM103"]
    assert f.line == 22 and f.evidence["cause_rule"] == "NKI203" and f.fix == TAIL.fix


def test_inf_output_is_an_overflow_before_anything_else():
    inf = np.full_like(REF, np.inf)
    r = res(sr("aligned", {"R": 256}, inf), sr("ragged", {"R": 300}, inf))
    fs = attribute(r, [TAIL, UNINIT, EXP], nki_path=NKI, kernel_line=5)
    num102 = next(f for f in fs if f.rule == "NUM102")
    assert num102.category == "overflow-risk" and num102.line == 24 and num102.fix == EXP.fix
    num104 = [f for f in fs if f.rule == "NUM104"]
    assert {f.line for f in num104} == {24} and all(f.evidence["cause_rule"] == "NKI402" for f in num104)
    assert "leaving the dtype's range" in num104[0].message


def test_nan_where_the_output_was_never_written_is_the_gap():
    out = REF.copy()
    out[64:] = np.nan
    r = res(sr("aligned", {"R": 256}, out, unwritten=64 * 64))
    (f,) = [f for f in attribute(r, [EXP, UNINIT], nki_path=NKI, kernel_line=5) if f.rule == "NUM104"]
    assert f.category == "uninitialized-read" and f.line == 30
    assert "4096 output elements were never written" in f.message and f.evidence["unwritten_elements"] == 4096


def test_nan_with_every_element_written_is_an_overflow():
    out = REF.copy()
    out[0, 0] = np.nan
    r = res(sr("aligned", {"R": 256}, out))
    (f,) = [f for f in attribute(r, [UNINIT, EXP], nki_path=NKI, kernel_line=5) if f.rule == "NUM104"]
    assert f.category == "overflow-risk" and f.line == 24


def test_fix_without_a_cause_names_the_worst_element_not_an_operation():
    wrong = REF * 2
    r = res(sr("aligned", {"R": 256}, wrong))
    (f,) = [f for f in attribute(r, [], nki_path=NKI, kernel_line=5) if f.rule == "NUM102"]
    assert f.fix.startswith("Compare element [") and "size aligned" in f.fix
    for word in ("exp", "lhsT", "matmul", "max"):
        assert word not in f.fix


def test_a_ragged_failure_caused_by_a_misplaced_tail_says_so():
    tail = REF.copy()
    tail[100:] = 0.0
    r = res(sr("aligned", {"R": 256}, REF.copy()), sr("ragged", {"R": 300}, tail))
    moved = static("NKI207", "indexing-error", 31, fix="Start the partial tile at `r0 = R - R % 128`.")
    (f,) = [f for f in attribute(r, [moved], nki_path=NKI, kernel_line=5) if f.rule == "NUM103"]
    assert f.category == "indexing-error" and f.line == 31 and f.fix == moved.fix
    assert f.message.endswith("the tail tile is written at the wrong offset (NKI207, line 31).")
    (f,) = [f for f in attribute(r, [TAIL], nki_path=NKI, kernel_line=5) if f.rule == "NUM103"]
    assert f.category == "missing-boundary-mask" and f.message.endswith("the tail tile is not handled.")
