"""run_nki_rules: finding fields and numbers, crash isolation, targets, and the check speed budget."""

from __future__ import annotations

import pytest

from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki import common as nki_common
from nki_assist.rules.runner import Check
from nki_assist.rules.nki.run import run_nki_rules

NEW = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n"
LEGACY = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"

PSUM_WIDE = NEW + """
@nki.jit
def k(a):
    acc = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)
    return a
"""


def test_psum_finding_carries_numbers_and_positions():
    [f] = [f for f in run_nki_rules(parse_nki(PSUM_WIDE, "kern.py"), get_target("trn2")) if f.rule == "NKI103"]
    assert f.message == "PSUM tile [128, 1024] float32 needs 4096 B per partition; a PSUM bank holds 2048 B."
    assert f.evidence["bytes_per_partition"] == 4096 and f.evidence["bank_bytes"] == 2048
    assert f.evidence["shape"] == [128, 1024]
    line = PSUM_WIDE.splitlines()[6]
    call = "nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)"
    assert (f.file, f.line, f.column, f.end_line) == ("kern.py", 7, line.index(call) + 1, 7)
    assert f.end_column == line.index(call) + len(call) + 1  # end is one past the last character
    assert f.source == "static" and f.category == "psum-bank-overflow" and f.criterion == "memory-hierarchy"
    assert "512-wide" in f.fix


def test_target_changes_the_verdict():
    nf = parse_nki(PSUM_WIDE, "kern.py")
    assert any(f.rule == "NKI103" for f in run_nki_rules(nf, get_target("trn1")))
    assert not any(f.rule == "NKI103" for f in run_nki_rules(nf, get_target("trn3")))


def test_sbuf_budget_numbers_per_target():
    src = LEGACY + """
@nki.jit
def k(a):
    t = nl.ndarray((nl.par_dim(128), 50000), dtype=nl.float32, buffer=nl.sbuf)
    return a
"""
    nf = parse_nki(src, "k.py")
    trn1 = [f for f in run_nki_rules(nf, get_target("trn1")) if f.rule == "NKI102"]
    trn3 = [f for f in run_nki_rules(nf, get_target("trn3")) if f.rule == "NKI102"]
    assert trn1 and trn1[0].evidence["sbuf_bytes_per_partition"] == 200000
    assert trn1[0].evidence["budget_bytes_per_partition"] == 192 * 1024 - 16648
    assert not trn3  # 200000 B fits trn3's 245496 usable bytes


def test_a_crashing_check_does_not_lose_other_findings(monkeypatch):
    def boom(nf, t):
        raise ZeroDivisionError("synthetic")
        yield  # pragma: no cover

    monkeypatch.setattr(nki_common.CHECKS, "checks", [Check(("NKI999",), boom)] + nki_common.CHECKS.checks)
    findings = run_nki_rules(parse_nki(PSUM_WIDE, "kern.py"), get_target("trn2"))
    notes = [f for f in findings if f.rule == "NKI001"]
    assert len(notes) == 1 and notes[0].severity.value == "info" and "NKI999" in notes[0].message
    assert any(f.rule == "NKI103" for f in findings)


def test_syntax_error_is_a_finding_and_the_rest_is_checked():
    src = NEW + """
@nki.jit
def broken(a):
    x = nl.exp(a +)
    return x

@nki.jit
def fine(a):
    acc = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)
    return a
"""
    findings = run_nki_rules(parse_nki(src, "k.py"), get_target("trn2"))
    assert [(f.rule, f.line) for f in findings if f.rule == "NKI001"] == [("NKI001", 7)]
    assert [(f.rule, f.line) for f in findings if f.rule == "NKI103"] == [("NKI103", 12)]


def test_a_line_dedented_out_of_its_block_is_python_s_syntax_error_with_the_line_above_related():
    # tree-sitter reads this file without an error node; CPython rejects the indented line after the dedent
    src = NEW + """
@nki.jit
def k(a):
    for t in nl.affine_range(4):
        x = nl.load(a[t])
    y = nl.exp(x)
        nl.store(a[t], value=y)
    return a
"""
    nf = parse_nki(src, "k.py")
    findings = run_nki_rules(nf, get_target("trn2"))
    syntax = [f for f in findings if f.rule == "NKI001"]
    assert [(f.line, f.severity.value) for f in syntax] == [(10, "error")]
    assert "unexpected indent" in syntax[0].message
    assert [r.line for r in syntax[0].related] == [9]  # the dedented statement
    assert nf.python_syntax_error == (10, 8, "unexpected indent")


@pytest.mark.parametrize("text", ["", "import nki\n\x00\x00", "import nki\ndef (:\n", "import nki\n" + "[" * 2000])
def test_bad_input_yields_findings_not_tracebacks(text):
    findings = run_nki_rules(parse_nki(text, "bad.py"), get_target("trn2"))
    assert all(f.rule.startswith("NKI") for f in findings)
