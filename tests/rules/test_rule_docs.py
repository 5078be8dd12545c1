"""Every registered rule has a docs page with the standard sections, and is exercised by a test."""

from __future__ import annotations

from pathlib import Path

import pytest

from nki_assist.rules.registry import all_rules, docs_text, get, registry_problems

ROOT = Path(__file__).resolve().parents[2]
SECTIONS = ("## What it finds", "## Why it matters on Trainium", "## Example", "## Fix")


@pytest.mark.parametrize("spec", all_rules(), ids=lambda s: s.id)
def test_docs_page(spec):
    page = ROOT / spec.docs_page
    assert page.is_file(), f"missing {spec.docs_page}"
    text = page.read_text(encoding="utf-8")
    assert text.startswith(f"# {spec.name} ({spec.id})"), f"{spec.docs_page} must start with '# {spec.name} ({spec.id})'"
    for section in SECTIONS:
        assert section in text, f"{spec.docs_page} lacks '{section}'"


def test_every_rule_is_tested():
    """Each rule id appears in a fixture directory name or in some test module's text."""
    corpus = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in (ROOT / "tests").rglob("*.py"))
    fixture_dirs = {p.name for p in (ROOT / "tests" / "fixtures" / "rules").glob("*") if p.is_dir()}
    untested = [s.id for s in all_rules() if s.id not in fixture_dirs and f'"{s.id}"' not in corpus]
    assert not untested, f"rules no test refers to: {untested}"


def test_lookup_by_id_and_name():
    spec = all_rules()[0]
    assert get(spec.id.lower()) is spec
    assert get(spec.name) is spec
    assert spec.name in docs_text(spec.id)
    with pytest.raises(KeyError):
        get("XYZ999")


def test_rule_ids_and_names_are_unique():
    assert registry_problems() == []
