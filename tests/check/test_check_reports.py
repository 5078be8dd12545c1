"""text / json / sarif renderings of a CheckReport; SARIF validated against the OASIS 2.1.0 schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from nki_assist.check import CheckOptions, check_paths
from nki_assist.findings import RelatedLocation
from nki_assist.report import render_check

SCHEMA = json.loads((Path(__file__).with_name("sarif-schema-2.1.0.json")).read_text(encoding="utf-8"))
NKI = "import nki\nimport nki.language as nl\nacc = BADPSUM\nx = SLOWDMA  # noqa: NKI991\ny = 1  # noqa: NKI990\n"


@pytest.fixture
def report(fake_front_ends, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("kern").mkdir()
    Path("kern/k.py").write_text(NKI, encoding="utf-8")
    Path("kern/k.cu").write_text("__global__ void k() {\n  s[t] = RACE;\n}\n", encoding="utf-8")
    Path("kern/blob.py").write_bytes(b"\x00\x01")
    rep = check_paths(["kern"], CheckOptions())
    # A migration-style finding that points at another file, as port rules produce.
    rep.findings[0] = rep.findings[0].model_copy(
        update={"related": [RelatedLocation(file="kern/k.py", line=3, message="NKI side")]})
    return rep


def test_text_lines_and_statistics(report):
    out = render_check(report, "text", statistics_table=True, snippets=False)  # concise: one line per finding
    lines = out.splitlines()
    assert lines[:3] == [
        "kern/k.cu:2:10: CUDA990 [warning] RACE seen on target trn2",
        "kern/k.py:3:7: NKI990 [error] BADPSUM seen on target trn2",
        "kern/k.py:5:8: NA100 [warning] [*] Unused suppression: NKI990 did not fire on this line.",  # [*]: fixable
    ]
    assert "\x1b" not in out
    stats = [ln.split() for ln in lines[4:7]]
    assert [(s[0], s[1]) for s in stats] == [("1", "CUDA990"), ("1", "NA100"), ("1", "NKI990")]
    assert lines[7:] == ["", "Found 3 findings (1 fixable)."]


def test_text_summary_line(report):
    from nki_assist.report.text import summary_line

    assert summary_line(report) == ("3 findings (1 error, 2 warning) in 2 files checked, 1 skipped, "
                                    "1 suppressed; target trn2.")


def test_json_contract(report):
    data = json.loads(render_check(report, "json"))
    assert data["schema"] == "nki-assist/check@1"
    assert [f["id"] for f in data["findings"]] == ["F1", "F2", "F3"]
    f = data["findings"][1]
    assert (f["rule"], f["file"], f["line"], f["end_line"], f["column"], f["severity"]) == \
        ("NKI990", "kern/k.py", 3, 3, 7, "error")
    assert f["category"] == "psum-bank-overflow" and f["criterion"] == "memory-hierarchy"
    assert data["cuda"] == {"kern/k.cu": {"kernels": [{"name": "k", "lines": 4}]}}
    assert {r["path"]: r["status"] for r in data["files"]} == \
        {"kern/blob.py": "skipped", "kern/k.cu": "checked", "kern/k.py": "checked"}
    assert data["summary"]["findings"] == 3 and data["summary"]["by_severity"]["error"] == 1
    assert data["summary"]["files_checked"] == 2 and data["summary"]["files_skipped"] == 1
    assert data["notes"] == ["kern/blob.py: binary file (NUL bytes); not checked"]


def test_sarif_is_valid_and_complete(report):
    data = json.loads(render_check(report, "sarif"))
    jsonschema.Draft4Validator(SCHEMA).validate(data)
    run = data["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert ids == sorted(ids) and {"NA100", "NKI990", "CUDA990"} <= set(ids)
    psum = rules[ids.index("NKI990")]
    assert psum["helpUri"].endswith("/docs/rules/fake-psum-overflow.md")
    assert psum["defaultConfiguration"]["level"] == "error"
    results = run["results"]
    assert [(r["ruleId"], r["level"], "suppressions" in r) for r in results] == [
        ("CUDA990", "warning", False), ("NKI990", "error", False), ("NA100", "warning", False),
        ("NKI991", "warning", True)]
    for r in results:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
    loc = results[1]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "kern/k.py", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 3, "startColumn": 7, "endLine": 3}
    assert results[0]["relatedLocations"][0]["message"]["text"] == "NKI side"
    assert results[0]["relatedLocations"][0]["physicalLocation"]["region"] == {"startLine": 3}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/")
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert notes == [{"level": "note", "message": {"text": "kern/blob.py: binary file (NUL bytes); not checked"}},
                     {"level": "error",
                      "message": {"text": "incomplete: kern/blob.py: binary file (NUL bytes); not checked"}}]
    assert run["invocations"][0]["executionSuccessful"] is False  # a kernel file was not checked


def test_sarif_fingerprints_follow_line_text_not_line_number(fake_front_ends, tmp_path, monkeypatch):
    from nki_assist.report.sarif import to_dict

    monkeypatch.chdir(tmp_path)
    # a CUDA file: in a Python file the same finding twice in one scope is one finding (one finding per cause)
    path = Path("k.cu")
    path.write_text("__global__ void k() {\nRACE;\nRACE;\n}\n", encoding="utf-8")
    first = [r["partialFingerprints"]["primaryLocationLineHash"]
             for r in to_dict(check_paths(["k.cu"], CheckOptions()))["runs"][0]["results"]]
    path.write_text("__global__ void k() {\n\n\n// moved down\nRACE;\nRACE;\n}\n", encoding="utf-8")
    moved = [r["partialFingerprints"]["primaryLocationLineHash"]
             for r in to_dict(check_paths(["k.cu"], CheckOptions()))["runs"][0]["results"]]
    assert first == moved and len(set(first)) == 2  # same text, told apart by occurrence


def test_sarif_absolute_paths_become_file_uris(fake_front_ends, tmp_path):
    path = tmp_path / "k.py"
    path.write_text("import nki\nBADPSUM\n", encoding="utf-8")
    data = json.loads(render_check(check_paths([str(path)], CheckOptions()), "sarif"))
    jsonschema.Draft4Validator(SCHEMA).validate(data)
    art = data["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert art == {"uri": path.as_uri()}


def test_sarif_schema_rejects_a_broken_log():
    """The vendored schema really constrains: a result without a message is invalid."""
    bad = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"ruleId": "A"}]}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(SCHEMA).validate(bad)


def test_unknown_format():
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        render_check(None, "xml")


def test_sarif_with_the_real_registry_is_valid():
    from nki_assist.check import CheckReport
    from nki_assist.rules.registry import all_rules

    data = json.loads(render_check(CheckReport(), "sarif"))
    jsonschema.Draft4Validator(SCHEMA).validate(data)
    rules = data["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [s.id for s in all_rules()]
    assert all(r["helpUri"].endswith(f"/docs/rules/{r['name']}.md") for r in rules)
    assert data["runs"][0]["results"] == []


def test_sarif_carries_fixes_and_stays_valid(tmp_path, monkeypatch):
    import shutil

    monkeypatch.chdir(tmp_path)
    fixes = Path(__file__).resolve().parents[1] / "fixtures" / "fixes"
    shutil.copy(fixes / "renamed_apis_new.py", "k.py")
    # at a stated version (on a guessed one the psum_bank_fmax rename is unsafe: issue 41)
    data = json.loads(render_check(check_paths(["k.py"], CheckOptions(nki_version="0.6")), "sarif"))
    jsonschema.Draft4Validator(SCHEMA).validate(data)
    assert data["runs"][0]["properties"]["nki_version"][0]["assumed"] is False
    safe, unsafe = (r["fixes"][0] for r in data["runs"][0]["results"])
    assert safe["properties"] == {"applicability": "safe"} and unsafe["properties"] == {"applicability": "unsafe"}
    (change,) = safe["artifactChanges"]
    assert change["artifactLocation"] == {"uri": "k.py", "uriBaseId": "%SRCROOT%"}
    assert change["replacements"] == [{"deletedRegion": {"startLine": 9, "startColumn": 26, "endLine": 9,
                                                         "endColumn": 35},
                                       "insertedContent": {"text": "psum_bank_fmax"}}]
