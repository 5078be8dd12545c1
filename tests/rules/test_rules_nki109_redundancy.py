"""NKI109 counts redundant HBM reads as a formula of the loop trip counts (spec sizes play no part)."""

from __future__ import annotations

from pathlib import Path

from nki_assist.check import CheckOptions, check_text

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "rules" / "NKI109"


def nki109(name: str):
    res = check_text(name, (FIX / name).read_text(), CheckOptions(target="trn2", select=["NKI109"]))
    return [f for f in res.findings if f.rule == "NKI109"]


def test_constant_trips_give_numbers():
    (f,) = nki109("pos_legacy.py")  # i (4, used) x j (4, not used)
    ev = f.evidence
    assert (ev["loads"], ev["distinct_loads"], ev["redundant_reads"]) == (16, 4, 12)
    assert ev["redundant_reads_expr"] == "4 * (4 - 1)" and ev["hoist_above_line"] == 11
    assert ev["elements_per_load"] == 128 * 512
    assert "12 of its 16 executions (= 4 * (4 - 1))" in f.message
    (g,) = nki109("pos_new.py")  # one loop of 8: 7 reloads
    assert (g.evidence["loads"], g.evidence["redundant_reads"], g.evidence["redundant_reads_expr"]) == (8, 7, "8 - 1")


def test_symbolic_trips_give_a_formula_over_every_hoistable_loop():
    (f,) = nki109("pos_nested_new.py")
    ev = f.evidence
    # independent of c and h (the two inner loops), dependent on r
    assert ev["independent_vars"] == ["c", "h"] and ev["hoist_above_line"] == 11
    assert ev["redundant_reads_expr"] == "(R // 128) * ((C // 512) * 2 - 1)"
    assert ev["loads_expr"] == "(R // 128) * (C // 512) * 2"
    assert ev["redundant_reads"] is None and ev["distinct_loads"] is None
    assert [lp["var"] for lp in ev["independent_loops"]] == ["c", "h"]
    assert "Hoist the load above line 11" in f.fix


def test_hoisted_loads_are_not_reported():
    assert nki109("neg_legacy.py") == [] and nki109("neg_new.py") == []
