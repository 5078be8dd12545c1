"""NKI215: the softmax denominator summed after dropout, at the sum, with the exp and the dropout related."""

from __future__ import annotations

from pathlib import Path

from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki.run import run_nki_rules

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "rules" / "NKI215"


def test_sum_of_dropped_probabilities_is_a_warning_at_the_sum():
    path = FIX / "pos_legacy.py"
    found = [f for f in run_nki_rules(parse_nki(path.read_text(), str(path)), get_target("trn2")) if f.rule == "NKI215"]
    assert [(f.line, f.severity.value, f.confidence) for f in found] == [(19, "warning", "medium"),
                                                                        (22, "warning", "medium")]
    helper, inline = found
    assert (helper.evidence["exp_line"], helper.evidence["dropout_line"]) == (17, 18)
    assert sorted(r.line for r in helper.related) == [17, 18]
    # dropout writing a new tile: the new tile's sum is reported, naming the exp's tile
    assert inline.evidence["summed"] == "kept" and inline.evidence["probabilities"] == "q"
