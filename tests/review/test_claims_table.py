"""The table of claim kinds (review/claims/table.py) is the one place they are listed: the docs section is
generated from it, every claim kind a rule emits has a row, and every row's check module exists. Over every
port in the repository, no claim the run refutes is reported above info."""

from __future__ import annotations

import re
from pathlib import Path

from nki_assist.findings import Severity
from nki_assist.review.claims.table import CLAIMS, claim_kind, claims_markdown

ROOT = Path(__file__).resolve().parents[2]


def test_docs_section_is_the_generated_table():
    doc = (ROOT / "docs" / "feedback.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- claims-table:begin -->\n(.*?)\n<!-- claims-table:end -->", doc, re.S)
    assert m is not None and m.group(1) == claims_markdown()


def test_every_claim_kind_a_rule_emits_has_a_row():
    emitted = set()
    for p in (ROOT / "nki_assist" / "rules").rglob("*.py"):
        emitted |= set(re.findall(r'claim[^\n]{0,40}\{"kind": "([a-z-]+)"', p.read_text(encoding="utf-8")))
    assert emitted >= {"tail-dropped", "output-wrong", "input-unused", "operand-dtype"}
    assert emitted <= {c.kind for c in CLAIMS}
    assert len({c.kind for c in CLAIMS}) == len(CLAIMS)
    for c in CLAIMS:
        assert (ROOT / "nki_assist" / c.module).is_file(), c.module


def test_dispatch_follows_the_table():
    from nki_assist.rules.registry import get

    tail = get("NKI203").finding("t", file="k.py", line=3, evidence={"claim": {"kind": "tail-dropped"}})
    exp = get("NKI402").finding("e", file="k.py", line=4)
    sim = get("SIM112").finding("s", file="k.py", line=5, source="simulation")
    assert claim_kind(tail).kind == "tail-dropped" and claim_kind(exp).kind == "exp-overflow"
    assert claim_kind(sim).kind == "output-unwritten"
    assert claim_kind(get("NKI203").finding("t", file="k.py", line=3)) is None  # no claim made


def _refuted(f) -> bool:
    """The finding's evidence carries a number the run refutes it with."""
    rec = f.evidence.get("reconciled") or {}
    return rec.get("status") == "contradicted"


def test_no_refuted_claim_is_reported_above_info(reviewed_ports):
    refuted, loud, confirmed_against_margin = [], [], []
    for spec, port in reviewed_ports.items():
        for f in port.review.findings:
            if _refuted(f):
                refuted.append((spec, f.rule))
                if f.severity is not Severity.INFO or f.evidence.get("root_cause_lead") or "root_cause" in f.evidence:
                    loud.append((spec, f.id, f.rule, f.severity.value))
            rows = f.evidence.get("run_range") if f.rule == "NKI402" else None
            rec = (f.evidence.get("reconciled") or {}).get("status")
            if isinstance(rows, dict) and rec == "confirmed" and all(
                    (r.get("margin_out_dtype") or 0) > 0 and not r.get("nonfinite_args")
                    for k, r in rows.items() if not k.startswith("2x:")):
                confirmed_against_margin.append((spec, f.id))
    assert loud == [] and confirmed_against_margin == []
    # the collection is not empty: the refuted-claim ports and the eval cases' cleared claims are in it
    assert ("tests/fixtures/ports/claims_store_offset_exp/port.toml", "NKI402") in refuted
    assert len(refuted) >= 10
