"""RUF100-like reports on suppression comments (issue 30 item 3): `# noqa: NKI999` (shaped like an
nki-assist id, but no rule) is NA100 "not a known rule"; a bare `# noqa` that suppressed nothing is
NA101 (info, unsafe fix: other linters read bare noqa too). Another tool's code (`E501`) stays silent."""

from __future__ import annotations

from pathlib import Path

from nki_assist.check import CheckOptions, check_text
from nki_assist.cli import main
from nki_assist.check import fix_text

HERE = Path(__file__).resolve().parents[1] / "fixtures" / "check" / "noqa"


def _check(name: str, **kw):
    path = HERE / name
    return check_text(path.name, path.read_text(encoding="utf-8"), CheckOptions(**kw))


def test_bare_unused_and_unknown_code_on_a_clean_kernel():
    found = _check("pos_bare_noqa.py").findings
    assert [(f.rule, f.line, f.severity.value) for f in found] == [("NA101", 8, "info"), ("NA100", 10, "warning")]
    assert found[1].evidence["unknown"] == ["NKI999"] and "NKI999 is not a known rule" in found[1].message
    assert found[0].autofix.applicability == "unsafe" and found[1].autofix.applicability == "safe"


def test_used_bare_noqa_and_other_tools_codes_are_silent():
    result = _check("neg_bare_noqa_used.py")
    assert result.findings == []
    assert [f.rule for f in result.suppressed] == ["NKI103"]  # the bare noqa was used


def test_na101_follows_selection():
    assert [f.rule for f in _check("pos_bare_noqa.py", ignore=["NA101"]).findings] == ["NA100"]
    assert [f.rule for f in _check("pos_bare_noqa.py", ignore=["unused-bare-suppression"]).findings] == ["NA100"]
    assert [f.rule for f in _check("pos_bare_noqa.py", select=["NA101"]).findings] == ["NA101"]


def test_bare_cuda_ignore_unused_is_na100():
    text = "__global__ void k(float* a) {\n  a[0] = 1.0f;  // nki-assist: ignore\n}\n"
    found = check_text("k.cu", text, CheckOptions()).findings
    assert [(f.rule, f.line) for f in found] == [("NA100", 2)]
    assert found[0].evidence["bare"] is True


def test_fix_removes_bare_only_with_unsafe_fixes():
    path = HERE / "pos_bare_noqa.py"
    text = path.read_text(encoding="utf-8")
    safe = fix_text(path.name, text, CheckOptions())
    assert [f.rule for f in safe.result.findings] == ["NA101"]
    assert "# noqa  # expect" in safe.text and "NKI999" not in safe.text
    # the note after the codes stays a comment (it used to be left behind as code: a syntax error)
    assert safe.text.split("\n")[9] == "    nl.store(out, value=nl.add(x, y))  #  (unknown ids are NA100, not NA101)"
    unsafe = fix_text(path.name, text, CheckOptions(), unsafe=True)
    assert unsafe.result.findings == [] and "# noqa" not in unsafe.text.split("\n")[7]


def test_cli_shows_them(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("k.py").write_text((HERE / "pos_bare_noqa.py").read_text(encoding="utf-8"), encoding="utf-8")
    code = main(["check", "k.py", "--output-format", "concise"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0  # a warning and an info: below the default --fail-on error
    assert out[0].startswith("k.py:8:35: NA101 [info] Unused bare `# noqa`")
    assert out[1].startswith("k.py:10:40: NA100 [warning] [*] Unused suppression: NKI999 is not a known rule")


def test_codes_of_ruff_families_that_share_our_prefixes_are_left_alone():
    text = ("import neuronxcc.nki as nki\n"
            "x = 1  # noqa: SIM910, PERF999, TC999\n"  # ruff's flake8-simplify, Perflint, flake8-type-checking
            "y = 2  # noqa: NKI9999, CUDA999, MIG999\n")
    found = check_text("k.py", text, CheckOptions()).findings
    assert [(f.rule, f.line, f.evidence["unknown"]) for f in found] == [
        ("NA100", 3, ["NKI9999", "CUDA999", "MIG999"])]
