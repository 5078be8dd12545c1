"""NKI213 (bit test as a divisibility guard) and NKI214 (misspelled name assigned in one branch): lines,
severities and what the findings say, on fixtures of ours."""

from __future__ import annotations

from pathlib import Path

from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki.run import run_nki_rules
from nki_assist.rules.nki.slips import near_miss

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "rules"


def _run(src: str, rule: str):
    return [f for f in run_nki_rules(parse_nki(src, "k.py"), get_target("trn2")) if f.rule == rule]


def test_bit_test_guard_is_a_warning_with_the_divisibility_form():
    found = _run((FIX / "NKI213" / "pos_new.py").read_text(), "NKI213")
    assert [(f.line, f.severity.value) for f in found] == [(9, "warning"), (10, "warning")]
    first = found[0]
    assert first.evidence["constant"] == 512 and first.evidence["meant"] == "cols % 512 == 0"
    assert "1536" in first.message and "256" in first.message  # 3 * 512 refused, 512 // 2 accepted
    assert first.category == "missing-boundary-mask"


def test_not_equal_form_suggests_the_not_divisible_test():
    found = _run((FIX / "NKI213" / "pos_legacy.py").read_text(), "NKI213")
    assert [f.line for f in found] == [6]
    assert found[0].evidence["meant"] == "n % 128 != 0"


def test_misspelled_branch_name_points_at_the_read_and_the_sibling():
    found = _run((FIX / "NKI214" / "pos_new.py").read_text(), "NKI214")
    assert [(f.line, f.severity.value) for f in found] == [(16, "warning")]
    f = found[0]
    assert f.evidence["name"] == "row_vaild" and f.evidence["meant"] == "row_valid"
    assert f.evidence["read_line"] == 17 and f.evidence["sibling_line"] == 12
    assert sorted(r.line for r in f.related) == [12, 17]
    assert f.category == "uninitialized-read"


def test_a_read_name_or_an_absent_sibling_is_not_reported():
    src = """import nki
import nki.language as nl

@nki.jit
def k(x, flag):
    if flag:
        scale = 2.0
    else:
        scael = 1.0
    return x
"""
    assert _run(src, "NKI214") == []  # `scale` is never read after the chain: nothing stale to warn about


def test_near_miss_distance():
    assert near_miss("casual_mask", "causal_mask")  # a swapped pair
    assert near_miss("row_vaild", "row_valid")
    assert not near_miss("lhs", "rhs")  # too short to tell
    assert not near_miss("tile_a", "tile_bc")  # two edits in a short name
    assert not near_miss("q_tile", "q_tile")
