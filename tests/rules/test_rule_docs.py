"""Every registered rule has a docs page with the standard sections, generated from its spec and not stale,
and is exercised by a test."""

from __future__ import annotations

from pathlib import Path

import pytest

from nki_assist.rules import docgen
from nki_assist.rules.registry import all_rules, docs_text, get, page, registry_problems

ROOT = Path(__file__).resolve().parents[2]
SECTIONS = ("## What it finds", "## Why it matters on Trainium", "## Example", "## Fix")


@pytest.mark.parametrize("spec", all_rules(), ids=lambda s: s.id)
def test_spec_carries_its_docs(spec):
    """The spec's `doc` is the page body: every standard section, and the hover/explain text is the page."""
    for section in SECTIONS:
        assert f"{section}\n" in spec.doc, f"{spec.id}: doc= lacks '{section}'"
    assert docs_text(spec.id) == page(spec)


def test_generated_docs_are_not_stale():
    stale = [str(p.relative_to(ROOT)) for p in docgen.stale(ROOT)]
    assert stale == [], f"run `{docgen.COMMAND}` and commit the result"


def test_docgen_finds_and_rewrites_stale_files(tmp_path):
    """A hand edit of a page or a family table, and an orphan page, are reported and then rewritten."""
    for rel in ["docs/rules", *sorted(set(docgen.FAMILY_TABLES.values()))]:
        src = ROOT / rel
        dst = tmp_path / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            dst.mkdir(exist_ok=True)
            for f in src.glob("*.md"):
                (dst / f.name).write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
        else:
            dst.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    assert docgen.stale(tmp_path) == []
    spec = get("NKI103")
    edited = tmp_path / spec.docs_page
    edited.write_text(edited.read_text(encoding="utf-8").replace("## Fix", "## Fixes"), encoding="utf-8")
    table = tmp_path / "docs" / "nki-rules.md"
    table.write_text(table.read_text(encoding="utf-8").replace("| NKI103 |", "| NKI1O3 |"), encoding="utf-8")
    orphan = tmp_path / "docs" / "rules" / "retired-rule.md"
    orphan.write_text("# retired\n", encoding="utf-8")
    assert sorted(p.name for p in docgen.stale(tmp_path)) == sorted([edited.name, "nki-rules.md", orphan.name])
    assert sorted(p.name for p in docgen.write(tmp_path)) == sorted([edited.name, "nki-rules.md", orphan.name])
    assert docgen.stale(tmp_path) == [] and not orphan.exists()
    assert "## Fix\n" in edited.read_text(encoding="utf-8") and "| NKI103 |" in table.read_text(encoding="utf-8")


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
