"""The held-out corpora's hand classifications (evals/heldout/*.toml, issue 41) are well formed, name their
source by repo@commit without copying it, and the scorer counts precision per severity from them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.heldout_precision import load_table, score

TABLES = sorted((Path(__file__).resolve().parents[2] / "evals" / "heldout").glob("*.toml"))


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.stem)
def test_a_table_names_its_source_and_classifies_every_row(path):
    data, _ = load_table(path)
    assert re.fullmatch(r"[\w.-]+/[\w.-]+", data["repo"]) and re.fullmatch(r"[0-9a-f]{40}", data["commit"])
    rows = data["finding"]
    assert rows
    for r in rows:
        assert r["severity"] in ("error", "warning") and r["verdict"] in ("true", "false"), r
        assert r["line"] > 0 and re.fullmatch(r"[A-Z]+[0-9]+", r["rule"]) and len(r["reason"]) > 20, r
        assert r.get("verdict_after", "true") in ("true", "false")
        assert ("verdict_after" in r) == ("reason_after" in r), r


def test_two_held_out_corpora_exist():
    assert len(TABLES) >= 2


def test_score_counts_precision_grouped_findings_once_and_lists_unclassified():
    verdicts = {("k.py", 3, "NKI203"): True, ("k.py", 9, "NKI302"): False, ("k.py", 12, "NKI002"): True}
    report = {"findings": [
        {"file": "./k.py", "line": 3, "rule": "NKI203", "severity": "warning"},
        {"file": "k.py", "line": 9, "rule": "NKI302", "severity": "warning"},
        {"file": "k.py", "line": 12, "rule": "NKI002", "severity": "error"},
        {"file": "k.py", "line": 20, "rule": "NKI108", "severity": "info"},
        {"file": "k.py", "line": 30, "rule": "NKI211", "severity": "warning"},
    ]}
    got = score(report, verdicts)
    assert (got["error"], got["warning"], got["info"]) == (1, 3, 1)
    assert got["error_precision"] == 1.0 and got["warning_precision"] == 0.5
    assert got["unclassified"] == ["k.py:30 NKI211 warning"]


def test_after_verdicts_replace_only_rewritten_rows(tmp_path):
    table = tmp_path / "t.toml"
    table.write_text('repo = "a/b"\ncommit = "' + "0" * 40 + '"\n'
                     '[[finding]]\nfile = "k.py"\nline = 1\nrule = "NKI201"\nseverity = "warning"\n'
                     'verdict = "false"\nreason = "r"\nverdict_after = "true"\nreason_after = "r2"\n'
                     '[[finding]]\nfile = "k.py"\nline = 2\nrule = "NKI203"\nseverity = "warning"\n'
                     'verdict = "false"\nreason = "r"\n')
    assert load_table(table)[1] == {("k.py", 1, "NKI201"): False, ("k.py", 2, "NKI203"): False}
    assert load_table(table, after=True)[1] == {("k.py", 1, "NKI201"): True, ("k.py", 2, "NKI203"): False}
