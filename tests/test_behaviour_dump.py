"""The refactor safety net (benchmarks/behaviour_dump.py) must see a changed finding and a changed number."""

from benchmarks.behaviour_dump import _clean, compare, dump_rules


def test_compare_reports_changed_added_and_removed_values():
    a = {"check": {"k.py": {"findings": [{"rule": "NKI103", "line": 23, "evidence": {"bytes": 4096}}]}}}
    b = {"check": {"k.py": {"findings": [{"rule": "NKI103", "line": 24, "evidence": {"bytes": 4096}}]}},
         "extra": 1}
    diffs = compare(a, b)
    assert diffs == ["/check/k.py/findings[0]/line: 23 != 24", "/extra: only in the second"]
    assert compare(a, a) == []


def test_clean_drops_wall_clock_and_keeps_exact_floats():
    assert _clean({"seconds": 1.2, "x": 0.1 + 0.2, "nested": [{"elapsed_s": 3}]}) == {
        "nested": [{}], "x": "0.30000000000000004"}


def test_rule_dump_has_docs_for_every_rule():
    rules = dump_rules()
    assert len(rules) > 90 and all(r["docs"].startswith("#") for r in rules.values())
