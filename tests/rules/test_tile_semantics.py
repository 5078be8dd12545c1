"""Held-out set 2's rule families (NKI524-NKI527, NKI106's nl.transpose operands, NKI514 in helpers, NKI515's
unary minus): the line, severity and evidence each fixture gets per NKI version (tests/fixtures/rules/...)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki.run import run_nki_rules

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "rules"


def found(rule: str, rel: str, nki_version: str | None = None, text: str | None = None):
    path = FIX / rel
    t = get_target("trn2")
    if nki_version:
        t = dataclasses.replace(t, nki_version=nki_version)
    fs = run_nki_rules(parse_nki(text if text is not None else path.read_text(), str(path)), t)
    return sorted(((f.line, f.severity.value, f) for f in fs if f.rule == rule), key=lambda x: x[0])


def lines_sev(got):
    return [(line, sev) for line, sev, _ in got]


# -- NKI524 --------------------------------------------------------------------------------------------
def test_astype_is_an_error_where_the_stub_lists_nkitensor_methods_else_a_warning():
    assert lines_sev(found("NKI524", "NKI524/pos_new.py")) == [(12, "error"), (14, "error")]  # 0.6: methods listed
    assert lines_sev(found("NKI524", "NKI524/pos_new.py", "0.3")) == [(12, "warning"), (14, "warning")]
    assert found("NKI524", "NKI524/pos_new.py", "0.2") == []  # before 0.3 the rule does not judge
    got = found("NKI524", "NKI524/pos_new.py")
    assert got[0][2].evidence["tile"] == "mask" and got[1][2].evidence["tile"].startswith("nl.greater(")


# -- NKI525 --------------------------------------------------------------------------------------------
def test_reduction_reports_the_rank_and_axes_it_read():
    got = found("NKI525", "NKI525/pos_new.py")
    assert lines_sev(got) == [(13, "warning"), (14, "warning"), (16, "warning")]
    assert [(f.evidence["rank"], f.evidence["axes"]) for _, _, f in got] == [(2, [1]), (2, [1]), (3, [1, 2])]
    assert "1-D result" in got[0][2].message and "keepdims=True" in got[0][2].fix


def test_reduction_keeps_quiet_when_keepdims_is_true_or_not_literal():
    src = (FIX / "NKI525/pos_new.py").read_text().replace("nl.max(score, axis=1)", "nl.max(score, axis=1, keepdims=k)")
    assert [line for line, _, _ in found("NKI525", "NKI525/pos_new.py", text=src)] == [14, 16]


# -- NKI526 / NKI514 in helpers ------------------------------------------------------------------------
def test_comprehensions_and_subscript_tuple_targets_in_the_traced_call_tree():
    got = found("NKI526", "NKI526/pos_new.py")
    assert lines_sev(got) == [(7, "warning"), (17, "warning"), (18, "warning")]
    helper, comp, target = (f for _, _, f in got)
    assert (helper.evidence["function"], helper.evidence["kernel"]) == ("_xor_bytes", "rounds")
    assert comp.evidence["construct"] == "list comprehension"
    assert target.evidence == {"construct": "subscript tuple target", "target": "xs[0]", "function": "rounds",
                               "kernel": "rounds", "nki_version": "0.6"}
    assert found("NKI526", "NKI526/pos_new.py", "0.2") == []


def test_nested_def_in_a_helper_reached_through_another_helper():
    got = found("NKI514", "NKI514/pos_helper.py")
    assert lines_sev(got) == [(7, "warning")]
    assert got[0][2].evidence == {"function": "mul", "helper": "_mul_parts", "kernel": "product", "nki_version": "0.6"}
    # the kernel's own nested defs are still reported once, by the original check
    assert lines_sev(found("NKI514", "NKI514/pos_new.py")) == [(10, "warning")]


# -- NKI527 --------------------------------------------------------------------------------------------
def test_wide_shift_is_an_error_in_new_nki_and_a_warning_in_legacy_code():
    got = found("NKI527", "NKI527/pos_new.py")
    assert lines_sev(got) == [(13, "error"), (14, "error")]
    assert [(f.evidence["api"], f.evidence["shift"]) for _, _, f in got] == [("nl.right_shift", 32),
                                                                            ("nl.left_shift", 40)]
    legacy = (FIX / "NKI527/pos_new.py").read_text().replace("import nki.language as nl",
                                                             "import neuronxcc.nki.language as nl") \
        .replace("import nki.isa as nisa", "import neuronxcc.nki.isa as nisa").replace("import nki\n",
                                                                                  "import neuronxcc.nki as nki\n")
    assert lines_sev(found("NKI527", "NKI527/pos_new.py", text=legacy)) == [(13, "warning"), (14, "warning")]


def test_wide_shift_through_tensor_scalar():
    src = (FIX / "NKI527/neg_new.py").read_text().replace(
        "    nl.store(out[0:128, 0:1], value=hi)",
        "    nisa.tensor_scalar(dst=hi, data=c0, op0=nl.right_shift, operand0=48)\n"
        "    nl.store(out[0:128, 0:1], value=hi)")
    assert lines_sev(found("NKI527", "NKI527/neg_new.py", text=src)) == [(14, "error")]


# -- NKI106: nl.transpose's result as a matmul operand -------------------------------------------------
def test_transposed_operand_is_a_warning_with_the_binding_related():
    got = found("NKI106", "NKI106/pos_transpose.py")
    assert lines_sev(got) == [(13, "warning"), (14, "warning")]
    named, direct = got[0][2], got[1][2]
    assert named.evidence["role"] == "stationary" and named.evidence["via"] == "nl.transpose"
    assert [r.line for r in named.related] == [12] and direct.related == []


def test_transposed_operand_role_in_the_value_returning_form():
    src = (FIX / "NKI106/pos_transpose.py").read_text().replace(
        "nisa.nc_matmul(psum, weights_t, v_tile, accumulate=True)", "psum[...] += nisa.nc_matmul(v_tile, weights_t)")
    got = [f for _, _, f in found("NKI106", "NKI106/pos_transpose.py", text=src) if f.line == 13]
    assert [f.evidence["role"] for f in got] == ["moving"]


# -- NKI515: unary minus ---------------------------------------------------------------------------------
def test_unary_minus_on_a_tile_new_and_legacy():
    new = found("NKI515", "NKI515/pos_new.py")
    assert (24, "error") in lines_sev(new)
    unary = next(f for line, _, f in new if line == 24)
    assert unary.evidence["operator"] == "unary -" and unary.evidence["replacement"] == "nl.negative"
    legacy = found("NKI515", "NKI515/pos_legacy_unary.py")
    assert lines_sev(legacy) == [(12, "warning")]  # the binary operators on line 13 are legacy NKI
    assert "legacy NKI tiles overload binary operators" in legacy[0][2].message
