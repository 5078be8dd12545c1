"""NKI403 on the forms production kernels write: sums of squares and sums reduced into tensor views
(`v.get_view()`), averaged by a matmul with a constant, the mean squared into a reused view, then subtracted."""

from __future__ import annotations

from pathlib import Path

from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki.run import run_nki_rules

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "rules" / "NKI403"


def _variance(name: str):
    path = FIX / name
    return [f for f in run_nki_rules(parse_nki(path.read_text(), str(path)), get_target("trn2")) if f.rule == "NKI403"]


def test_matmul_means_over_views_are_the_variance_pattern():
    (f,) = _variance("pos_new_matmul_views.py")
    assert (f.line, f.severity.value, f.confidence) == (35, "warning", "medium")  # dtype not known at the views
    # the multi-line call reads as one line in the message
    assert "sum_view.get_view(), mean_sq[...], sum_sq_view.get_view(), nl.subtract" in f.evidence["expression"]
    assert "\n" not in f.message


def test_the_two_pass_form_over_views_is_not_reported():
    assert _variance("neg_new_matmul_views.py") == []
