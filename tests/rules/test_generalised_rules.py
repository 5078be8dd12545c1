"""NKI112, NKI216, NKI523: lines, severities and the facts each finding names, on our fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki.run import run_nki_rules

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "rules"


def _found(rule: str, name: str, target: str = "trn2"):
    path = FIX / rule / name
    found = run_nki_rules(parse_nki(path.read_text(), str(path)), get_target(target))
    return sorted((f for f in found if f.rule == rule), key=lambda f: f.line)


def test_self_comparisons_are_warnings_at_the_comparison():
    found = _found("NKI216", "pos_verification.py")
    assert [(f.line, f.severity.value) for f in found] == [(18, "warning"), (19, "warning"), (20, "warning"),
                                                           (21, "warning")]
    assert [f.evidence["operand"] for f in found] == ["got", "got", "got[0:4]", "got.shape"]


def test_partition_broadcast_literal_sizes_are_errors_expressions_warnings():
    found = _found("NKI112", "pos_legacy_operators.py")
    assert [(f.line, f.severity.value) for f in found] == [(15, "warning"), (20, "error"), (24, "warning"),
                                                           (25, "error")]
    chunk, literal, indexed, isa = found
    assert (chunk.evidence["left_partitions"], chunk.evidence["right_partitions"]) == (1, "p_end - p_off")
    assert [r.line for r in chunk.related] == [13]  # where the one-partition tile was loaded
    assert (literal.evidence["left_partitions"], literal.evidence["right_partitions"]) == (128, 1)
    assert [r.line for r in indexed.related] == [22]  # `ws[2]`: an integer index keeps one partition
    assert isa.evidence["form"] == "tensor_tensor"


def test_new_dialect_nl_binary_ops_and_tensor_tensor_do_not_broadcast():
    found = _found("NKI112", "pos_new_dialect.py")
    assert [(f.line, f.severity.value, f.evidence["form"]) for f in found] == [(14, "error", "tensor_tensor"),
                                                                              (15, "error", "nl")]


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
def test_gated_api_severity_follows_the_pinned_target_not_the_setting(target):
    # legacy decorator without platform_target: a warning whatever --target says; a pin older than the
    # instruction's generation: an error
    found = _found("NKI523", "pos_legacy_unpinned.py", target)
    assert [(f.line, f.severity.value) for f in found] == [(13, "warning"), (22, "error")]
    unpinned, pinned = found
    assert unpinned.evidence["requires_generation"] == 3 and unpinned.evidence["pinned_target"] is None
    assert [r.line for r in unpinned.related] == [6]
    assert pinned.evidence["pinned_target"] == "trn1"


@pytest.mark.parametrize("target, want", [("trn1", [(11, "info")]), ("trn2", []), ("trn3", [])])
def test_new_dialect_takes_the_target_from_the_setting(target, want):
    found = _found("NKI523", "neg_new_dialect_target_has_it.py", target)
    assert [(f.line, f.severity.value) for f in found] == want


def test_one_dimensional_on_chip_tiles_in_legacy_code():
    found = _found("NKI113", "pos_legacy_one_dim.py")
    assert [(f.line, f.severity.value, f.evidence["form"]) for f in found] == [
        (9, "warning", "allocation"), (10, "warning", "load"), (12, "warning", "load")]
    assert [r.line for r in found[1].related] == [7]  # `(n,) = x.shape` shows x is 1-D
    assert [r.line for r in found[2].related] == [11]  # the 1-D reshape
