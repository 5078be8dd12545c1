"""A NaN the run read past a tensor's end is one item with the out-of-bounds read, not an exp overflow (issue 29)."""

from __future__ import annotations

import shutil
from pathlib import Path

from nki_assist.review import ReviewOptions, review_port

PORT = Path(__file__).resolve().parent.parent / "fixtures" / "ports" / "oob_nan_exp"


def _review(tmp_path: Path, shift: bool):
    d = tmp_path / "port"
    shutil.copytree(PORT, d)
    if not shift:
        k = d / "k_nki.py"
        k.write_text(k.read_text().replace("i * 128 + 1:(i + 1) * 128 + 1", "i * 128:(i + 1) * 128"))
    return review_port(str(d / "port.toml"), ReviewOptions(plots=False)).review


def test_nan_from_an_out_of_bounds_read_is_attributed_to_it(tmp_path):
    r = _review(tmp_path, shift=True)
    by = {f.rule: f for f in r.findings}
    oob, nan, num102, exp = by["SIM108"], by["NUM104"], by["NUM102"], by["NKI402"]
    assert (oob.line, nan.line) == (11, 11) and nan.evidence["cause_rule"] == "SIM108"
    assert "out-of-bounds read at line 11" in nan.message and "leaving the dtype's range" not in nan.message
    assert num102.evidence["cause_rule"] == "SIM108" and nan.category == "indexing-error"
    # the exp is still advice on its own (no max subtraction) but nothing confirms it as the NaN's cause
    assert exp.severity.value == "warning" and "reconciled" not in exp.evidence
    item = next(it for it in r.assessment.items if oob.id in it.finding_ids)
    assert nan.id in item.finding_ids and exp.id not in item.finding_ids


def test_aligned_load_has_no_nan(tmp_path):
    r = _review(tmp_path, shift=False)
    assert not {"SIM108", "NUM104", "NUM102"} & {f.rule for f in r.findings}


def test_the_item_is_led_and_titled_by_the_read_not_the_nan(tmp_path):
    """The item opens with the out-of-bounds read the other findings name as their cause, and its text is about
    an access past the end, not a matmul's operand layout (the generic indexing-error rationale)."""
    r = _review(tmp_path, shift=True)
    oob = next(f for f in r.findings if f.rule == "SIM108")
    item = next(it for it in r.assessment.items if oob.id in it.finding_ids)
    assert item.finding_ids[0] == oob.id and item.title.startswith("Access past a tensor's end")
    assert "Nothing traps an access past a tensor's end" in item.why
    assert "nc_matmul" not in item.why and "non-square" not in item.profiling
