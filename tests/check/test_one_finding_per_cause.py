"""One finding per cause (issue 41): the same defect repeated per loop or per use is one finding with the count
and the other lines, and every door shows the same (check's JSON/SARIF/GitHub/text, the LSP, the review)."""

from __future__ import annotations

import json

from nki_assist.check import CheckOptions, check_paths, check_text
from nki_assist.findings import Finding, Severity, file_scopes, function_scopes, group_repeats

# Three loops over the same `M // 128` (NKI203's cause) in two functions, and one undefined name read twice in
# `first` and once in `second` (NKI002: the same message, grouped per function).
KERNEL = '''
import nki
import nki.language as nl
import nki.isa as nisa


@nki.jit
def first(a):
    M, N = a.shape
    out = nl.ndarray((M, N), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in range(M // 128):
        t = nl.ndarray((128, N), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[i * 128:(i + 1) * 128, 0:N])
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, 0:N], src=t)
    peak = nl.ndarray((128, N), dtype=a.dtype, buffer=nl.sbuf)
    for j in range(M // 128):
        u = nl.ndarray((128, N), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=u, src=a[j * 128:(j + 1) * 128, 0:N])
        nisa.tensor_tensor(dst=peak, data1=peak, data2=u, op=nl.maximum)
    scale = missing_scale + missing_scale
    return out


@nki.jit
def second(a):
    M, N = a.shape
    out = nl.ndarray((M, N), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in range(M // 128):
        t = nl.ndarray((128, N), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[i * 128:(i + 1) * 128, 0:N])
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, 0:N], src=t)
    scale = missing_scale
    return out
'''
LOOPS = [n for n, ln in enumerate(KERNEL.splitlines(), 1) if "in range(M // 128)" in ln]
SCALES = [n for n, ln in enumerate(KERNEL.splitlines(), 1) if "missing_scale" in ln]


def _by_rule(findings, rule):
    return [f for f in findings if f.rule == rule]


def test_same_cause_in_one_file_is_one_finding_with_count_and_lines(tmp_path):
    found = check_text(str(tmp_path / "k.py"), KERNEL, CheckOptions()).findings
    nki203 = _by_rule(found, "NKI203")
    assert len(nki203) == 1
    f = nki203[0]
    assert f.line == LOOPS[0] and f.severity is Severity.WARNING
    assert f.evidence["occurrences"] == 3 and f.evidence["lines"] == LOOPS
    assert [r.line for r in f.related] == LOOPS[1:]
    assert f"[3 identical findings in this file; also lines {LOOPS[1]}, {LOOPS[2]}]" in f.message


def test_same_message_groups_per_function_only(tmp_path):
    found = _by_rule(check_text(str(tmp_path / "k.py"), KERNEL, CheckOptions()).findings, "NKI002")
    assert [(f.line, f.evidence.get("occurrences")) for f in found] == [(SCALES[0], 2), (SCALES[1], None)]
    assert "[2 identical findings in `first`]" in found[0].message  # two reads on one line: no other line


def test_every_output_format_shows_the_group(tmp_path, capsys):
    path = tmp_path / "k.py"
    path.write_text(KERNEL)
    report = check_paths([str(path)], CheckOptions())
    assert len(_by_rule(report.findings, "NKI203")) == 1
    from nki_assist.report import github, sarif

    data = sarif.to_dict(report)
    res = [r for r in data["runs"][0]["results"] if r["ruleId"] == "NKI203"]
    assert len(res) == 1 and len(res[0]["relatedLocations"]) == 2
    assert "3 identical findings" in res[0]["message"]["text"]
    lines = [ln for ln in github.render(report).splitlines() if "NKI203" in ln]
    assert len(lines) == 1 and f"also lines {LOOPS[1]}, {LOOPS[2]}" in lines[0]
    data = json.loads(json.dumps([f.to_json() for f in report.findings]))
    assert [d["evidence"]["occurrences"] for d in data if d["rule"] == "NKI203"] == [3]


def test_the_language_server_shows_one_diagnostic_with_related_places(tmp_path):
    from lsp_server.diagnostics import to_diagnostic

    path = tmp_path / "k.py"
    f = _by_rule(check_text(str(path), KERNEL, CheckOptions()).findings, "NKI203")[0]
    diag = to_diagnostic(f, KERNEL.splitlines(), doc_path=str(path), language="nki")
    assert [r.location.range.start.line + 1 for r in diag.related_information] == LOOPS[1:]
    assert "3 identical findings" in diag.message


def test_the_review_finalize_groups_with_the_same_function(tmp_path):
    path = tmp_path / "k.py"
    path.write_text(KERNEL)

    def sim(line):
        return Finding(rule="SIM112", name="output-partly-unwritten", category="uninitialized-read",
                       severity=Severity.ERROR, source="simulation", file="k.py", line=line,
                       message="output rows 128.. are never written")

    a, b, c = (n + 1 for n in LOOPS)  # a line in each loop body: two in `first`, one in `second`
    grouped = group_repeats([sim(a), sim(b), sim(c)], file_scopes(tmp_path))
    assert [(g.line, g.evidence.get("occurrences")) for g in grouped] == [(a, 2), (c, None)]


def test_findings_with_fixes_stay_apart_and_unknown_scopes_group_nothing():
    def f(line, **kw):
        return Finding(rule="NKI002", name="undefined-name", category="unsupported-construct",
                       severity=Severity.ERROR, file="x.py", line=line, message="same", **kw)

    from nki_assist.findings import Edit, Fix

    fix = Fix(message="m", applicability="safe", edits=[Edit(line=1, column=1, end_line=1, end_column=2, content="")])
    assert len(group_repeats([f(1, autofix=fix), f(2, autofix=fix)], lambda x: "k")) == 2
    assert function_scopes("") is None and function_scopes("def f():\n    x = 1\ny = 2\n")(2) == "f"
    assert len(group_repeats([f(1), f(2)], lambda x: None)) == 2
    assert len(group_repeats([f(1), f(2)], lambda x: "k")) == 1
