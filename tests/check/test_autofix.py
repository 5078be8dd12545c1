"""Fixes: each fixture under tests/fixtures/fixes/ is fixed into its hand-written `.fixed` twin,
which re-checks clean; safe/unsafe applicability, conflicts and stale edits are respected."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nki_assist.check.autofix import FIXABLE_RULES, apply_fixes
from nki_assist.check import fix_text
from nki_assist.check import CheckOptions, check_text
from nki_assist.findings import Edit, Finding, Fix

FIXES = Path(__file__).resolve().parent.parent / "fixtures" / "fixes"
RULE_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "rules"
OPTIONS = CheckOptions()


def cases():
    return sorted(p for p in FIXES.iterdir() if p.is_file() and ".fixed." not in p.name)


def _fixed_twin(path: Path) -> Path:
    return path.with_name(path.stem + ".fixed" + path.suffix)


def _mode(text: str) -> str:
    return re.match(r"(?:#|//) fix: (safe|unsafe)", text).group(1)


@pytest.mark.parametrize("path", cases(), ids=lambda p: p.name)
def test_fixture_is_fixed_into_its_twin_and_rechecks_clean(path: Path):
    text = path.read_text(encoding="utf-8")
    before = check_text(path.name, text, OPTIONS).findings
    assert before and all(f.autofix is not None for f in before), [(f.rule, f.line) for f in before]
    outcome = fix_text(path.name, text, OPTIONS, unsafe=_mode(text) == "unsafe")
    assert outcome.text == _fixed_twin(path).read_text(encoding="utf-8")
    assert outcome.result.findings == []
    assert len(outcome.fixed) >= len(before)  # a fix may uncover another (a second legacy import)


@pytest.mark.parametrize("path", [p for p in cases() if _mode(p.read_text()) == "unsafe"], ids=lambda p: p.name)
def test_unsafe_fixes_are_not_applied_without_opt_in(path: Path):
    text = path.read_text(encoding="utf-8")
    outcome = fix_text(path.name, text, OPTIONS, unsafe=False)
    assert all(f.autofix.applicability == "safe" for f in outcome.fixed)
    left = outcome.result.findings
    assert left and {f.autofix.applicability for f in left} == {"unsafe"}


def test_every_fixable_rule_has_a_fixture():
    fixed_rules = set()
    for path in cases():
        text = path.read_text(encoding="utf-8")
        fixed_rules |= {f.rule for f in check_text(path.name, text, OPTIONS).findings if f.autofix}
    assert fixed_rules == set(FIXABLE_RULES)


@pytest.mark.parametrize("rule", FIXABLE_RULES)
def test_rule_positive_fixtures_lose_every_fixed_finding(rule: str):
    """The rules' own positive fixtures: every finding that carries a fix is gone after fixing."""
    paths = sorted((RULE_FIXTURES / rule).glob("pos_*")) if (RULE_FIXTURES / rule).is_dir() else []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        before = [f for f in check_text(path.name, text, OPTIONS).findings if f.rule == rule]
        outcome = fix_text(path.name, text, OPTIONS, unsafe=True)
        after = [f for f in outcome.result.findings if f.rule == rule]
        assert len(after) == sum(1 for f in before if f.autofix is None), path.name


def test_fix_json_is_additive():
    path = FIXES / "loop_aliases.py"
    findings = check_text(path.name, path.read_text(), OPTIONS).findings
    data = findings[0].to_json()
    assert data["autofix"] == {"message": "Replace `nl.affine_range` with `range`", "applicability": "safe",
                               "edits": [{"line": 11, "column": 14, "end_line": 11, "end_column": 29,
                                          "content": "range", "old_text": "nl.affine_range"}]}
    assert Finding.model_validate(data) == findings[0]
    plain = findings[0].model_copy(update={"autofix": None}).to_json()
    assert "autofix" not in plain  # findings without a fix keep the old JSON exactly


def _fix(line, col, end_col, content, old=None, applicability="safe"):
    return Fix(message="m", applicability=applicability,
               edits=[Edit(line=line, column=col, end_line=line, end_column=end_col, content=content, old_text=old)])


def test_overlapping_and_stale_edits_are_skipped():
    text = "abcdef\nxyz\n"
    first, overlapping = _fix(1, 2, 4, "BC"), _fix(1, 3, 5, "??")
    stale = _fix(2, 1, 2, "X", old="q")
    new, applied = apply_fixes(text, [overlapping, first, stale, _fix(2, 3, 4, "Z", old="z")])
    assert new == "aBCdef\nxyZ\n"
    assert len(applied) == 2 and stale not in applied


def test_edit_outside_the_text_is_skipped():
    new, applied = apply_fixes("ab\n", [_fix(5, 1, 2, "x"), _fix(1, 9, 10, "x")])
    assert new == "ab\n" and applied == []


def test_multiline_and_crlf_text_keep_their_line_endings():
    text = "import nki\r\nimport neuronxcc.nki.language as nl\r\n"
    new, applied = apply_fixes(text, [_fix(2, 8, 21, "nki", old="neuronxcc.nki")])
    assert new == "import nki\r\nimport nki.language as nl\r\n" and len(applied) == 1


def test_no_fix_when_the_loop_line_has_two_affine_ranges():
    text = (FIXES / "carried_affine.py").read_text().replace(
        "for k in nl.affine_range(8):", "for k in nl.affine_range(8):  # not nl.affine_range(4)")
    finding = next(f for f in check_text("k.py", text, OPTIONS).findings if f.rule == "NKI201")
    assert finding.autofix is None
