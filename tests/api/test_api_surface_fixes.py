"""The API-surface rules' mechanical fixes (unsafe: a person checks the diff): applying them leaves code
the rule no longer flags, and they never name something the target version lacks or deprecates."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from nki_assist.check import apply_fixes
from nki_assist.check import CheckOptions, check_source

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "rules"


def _fixed(rule: str, name: str, version: str | None = None):
    path = FIX / rule / name
    src = path.read_text()
    opts = CheckOptions(nki_version=version)
    found = [f for f in check_source(str(path), src, opts) if f.rule == rule]
    fixes = [f.autofix for f in found if f.autofix is not None]
    return found, fixes, src, opts, path


def test_nki510_renames_to_the_documented_name():
    found, fixes, src, opts, path = _fixed("NKI510", "pos_new.py")
    assert [(f.old_text, f.content) for x in fixes for f in x.edits] == [("negate", "negative"),
                                                                        ("psum_fmx", "psum_bank_fmax")]
    assert all(x.applicability == "unsafe" for x in fixes)
    out, applied = apply_fixes(src, fixes)
    assert len(applied) == len(fixes)
    assert "nl.negative(t)" in out and not [f for f in check_source(str(path), out, opts) if f.rule == "NKI510"]


def test_nki510_suggestion_follows_the_target_version():
    _, fixes, *_ = _fixed("NKI510", "pos_new.py", "0.3")
    assert [f.content for x in fixes for f in x.edits] == ["negative", "psum_fmax"]  # psum_bank_fmax is 0.4+


def test_nki511_drops_the_keyword():
    found, fixes, src, opts, path = _fixed("NKI511", "pos_new.py")
    assert [f.old_text for x in fixes for f in x.edits] == [", dtype=nl.bfloat16", ", unique_indices=True"]
    out, applied = apply_fixes(src, fixes)
    assert len(applied) == len(fixes)
    assert "nisa.tensor_copy(dst=u, src=t)" in out
    assert not [f for f in check_source(str(path), out, opts) if f.rule == "NKI511"]
