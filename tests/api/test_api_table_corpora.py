"""Issue 41 (1): the API table never contradicts public code at the version it targets.

Every public corpus in ../shared/corpora is scanned (tools/nki_api_evidence.py: the `import nki` files'
nl/nisa/nki.collectives names, keywords and call shapes) and held against the table at the corpus's NKI
version: a name the table calls removed, or absent where the module's data is complete, a keyword a
certain signature lacks, a required argument a call omits. AWS's released code must show none (it is the
table's evidence); third-party code may hold real defects, each listed here with why it is one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nki_assist.api import table

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ROOT.parent / "shared" / "corpora"
sys.path.insert(0, str(ROOT / "tools"))
from nki_api_evidence import contradictions, scan  # noqa: E402  (tools/ is not a package)

# corpus -> the NKI version its new-dialect code targets (shared/corpora/README.md, the corpus dates)
VERSIONS = {"nki-library@d2ad3a5": "0.3", "nki-samples@6905a68": "0.2", "nki-samples@7af4e4d": "0.2",
            "trnfft@9c494a8": "0.3", "AccelOpt@47e29a7": "0.2"}
# third-party defects the table rightly reports (checked by reading the code)
KNOWN_DEFECTS = {
    "trnfft@9c494a8": {
        "nl.cast": "no NKI release has nl.cast; trnfft calls it on the dtype != float32 branch only "
                   "(trnfft/nki/dispatch.py), which its fp32 tests never take: NKI510 reports it",
    },
}
AWS = {ev["corpus"] for ev in table.evidence_corpora()}


def _corpora() -> list[str]:
    if not CORPORA.is_dir():
        return []
    return sorted(p.name for p in CORPORA.iterdir() if "@" in p.name and p.is_dir())


@pytest.mark.skipif(not CORPORA.is_dir(), reason="../shared/corpora not present beside the repo")
def test_every_public_corpus_has_a_known_version():
    assert set(_corpora()) <= set(VERSIONS), f"add the new corpus's NKI version: {set(_corpora()) - set(VERSIONS)}"


@pytest.mark.skipif(not CORPORA.is_dir(), reason="../shared/corpora not present beside the repo")
@pytest.mark.parametrize("corpus", _corpora() or ["(none)"])
def test_no_contradiction_with_public_code(corpus):
    if corpus == "(none)":
        pytest.skip("no corpus folders")
    used = scan(CORPORA / corpus, corpus)
    found = contradictions(used, VERSIONS[corpus], table)
    known = KNOWN_DEFECTS.get(corpus, {})
    unexplained = [c for c in found if c.split(":")[0].split("(")[0] not in known]
    assert unexplained == []
    if corpus in AWS:
        assert found == [] and used, "AWS's released code is the table's evidence: it uses names and agrees"
    for name in known:  # a listed defect that disappears means the list is stale
        assert any(c.startswith(name + ":") for c in found), f"{corpus}: {name} no longer contradicts"


@pytest.mark.skipif(not CORPORA.is_dir(), reason="../shared/corpora not present beside the repo")
def test_the_reported_false_findings_are_gone():
    """The issue's false reports on shipped kernels: each name is known at the version its code targets."""
    seq = table.lookup("nl.sequential_range", "0.2")
    assert not next(p for p in seq.params if p.name == "stop").required  # AWS's 0.2 tutorial: sequential_range(n)
    assert "0.2" in table.evidence("nl.sequential_range")
    assert not table.complete_signatures("nisa", "0.2") and not table.complete("nl", "0.2")
    assert table.complete_signatures("nisa", "0.3") and not table.certain_signature(table.lookup("nisa.iota", "0.2"), "0.2")
    assert table.status("nl.range", "0.3") == "present" and "nki-library" in table.evidence("nl.range")["0.3"]
    assert table.kwarg_status("nl.ndarray", "address", "0.3") == "present"
    # a parameter removal is not the API's removal (release notes 0.3: `num_channels` parameter removed)
    assert table.status("nki.collectives.collective_permute_implicit_current_processing_rank_id", "0.3") == "present"


def test_evidence_widens_only_its_version():
    # nki-library (0.3) omits iota's offset, which 0.3 makes optional anyway; 0.2's stub requires it
    assert table.lookup("nisa.iota", "0.3").param("offset").default == "0"
    assert table.lookup("nisa.iota", "0.2").param("offset").required
