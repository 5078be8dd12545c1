"""check_source / check_paths against fake front ends: selection, suppressions, NA100, bad input."""

from __future__ import annotations

import time

import pytest

from nki_assist.check import CheckOptions, check_paths, check_source, check_text

NKI_HEAD = "import nki\nimport nki.language as nl\n"


def rules_and_lines(findings):
    return [(f.rule, f.line) for f in findings]


def test_nki_findings_have_path_line_and_target(fake_front_ends):
    text = NKI_HEAD + "x = BADPSUM\ny = SLOWDMA\n"
    found = check_source("k.py", text, CheckOptions(target="trn1"))
    assert rules_and_lines(found) == [("NKI990", 3), ("NKI991", 4)]
    assert found[0].file == "k.py" and found[0].column == 5
    assert "trn1" in found[0].message


def test_py_without_nki_import_is_skipped(fake_front_ends):
    text = "import numpy\nx = BADPSUM\n"
    assert check_source("plain.py", text, CheckOptions()) == []
    assert check_text("plain.py", text, CheckOptions()).status == "skipped"


def test_cuda_by_suffix_and_unknown_suffix(fake_front_ends):
    assert rules_and_lines(check_source("k.cu", "int a; // RACE\n", CheckOptions())) == [("CUDA990", 1)]
    assert rules_and_lines(check_source("k.cuh", "RACE\n", CheckOptions())) == [("CUDA990", 1)]
    assert check_source("k.txt", "RACE\n", CheckOptions()) == []


@pytest.mark.parametrize("select,ignore,want", [
    (None, [], {"NKI990", "NKI991"}),
    (["NKI990"], [], {"NKI990"}),
    (["NKI99"], [], {"NKI990", "NKI991"}),          # id prefix
    (["fake-small-dma"], [], {"NKI991"}),           # kebab name
    (None, ["nki991"], {"NKI990"}),                 # case-insensitive id
    (["NKI"], ["fake-psum-overflow"], {"NKI991"}),  # ignore wins over select
    (["CUDA"], [], set()),
])
def test_select_and_ignore(fake_front_ends, select, ignore, want):
    text = NKI_HEAD + "BADPSUM SLOWDMA\n"
    found = check_source("k.py", text, CheckOptions(select=select, ignore=ignore))
    assert {f.rule for f in found} == want


def test_noqa_specific_bare_and_unused(fake_front_ends):
    text = NKI_HEAD + (
        "a = BADPSUM  # noqa: NKI990\n"          # 3 suppressed
        "b = BADPSUM SLOWDMA  # noqa: NKI991\n"  # 4 NKI990 stays
        "c = SLOWDMA  # noqa\n"                  # 5 bare: suppressed
        "d = 1  # noqa: NKI990, E501\n"          # 6 NKI990 unused, E501 is another tool's
        "e = 1  # noqa\n"                        # 7 bare unused: NA101 (info; other linters read it too)
        "f = SLOWDMA  # noqa: fake-small-dma\n"  # 8 by name
    )
    result = check_text("k.py", text, CheckOptions())
    assert rules_and_lines(result.findings) == [("NKI990", 4), ("NA100", 6), ("NA101", 7)]
    assert result.findings[2].severity.value == "info" and result.findings[2].column == 8
    na = result.findings[1]
    assert na.evidence["unused"] == ["NKI990"] and na.column == 8 and na.severity.value == "warning"
    assert "NKI990 did not fire" in na.message
    assert sorted(rules_and_lines(result.suppressed)) == [("NKI990", 3), ("NKI991", 4), ("NKI991", 5),
                                                         ("NKI991", 8)]


def test_unused_suppression_respects_selection_and_its_own_noqa(fake_front_ends):
    text = NKI_HEAD + "d = 1  # noqa: NKI990\ne = 1  # noqa: NKI991, NA100\n"
    assert rules_and_lines(check_source("k.py", text, CheckOptions())) == [("NA100", 3)]
    # A disabled rule could not have fired: its suppression is not "unused".
    assert check_source("k.py", text, CheckOptions(ignore=["NKI990"])) == []
    assert check_source("k.py", text, CheckOptions(ignore=["NA100"])) == []


def test_cuda_ignore_comment(fake_front_ends):
    text = ("x = RACE; // nki-assist: ignore[CUDA990]\n"
            "y = RACE; // nki-assist: ignore\n"
            "z = 0; // nki-assist: ignore[CUDA990, NOPE1]\n"
            "w = RACE; # noqa: CUDA990\n")
    result = check_text("k.cu", text, CheckOptions())
    assert rules_and_lines(result.findings) == [("NA100", 3), ("CUDA990", 4)]
    na = result.findings[0]
    assert na.evidence == {"unused": ["CUDA990"], "unknown": ["NOPE1"], "codes": ["CUDA990", "NOPE1"]}
    assert "NOPE1 is not a known rule" in na.message


def test_severity_override_and_per_file_ignores(fake_front_ends, tmp_path):
    text = NKI_HEAD + "BADPSUM SLOWDMA\n"
    opts = CheckOptions(severity={"NKI991": "error", "fake-psum-overflow": "info"})
    sev = {f.rule: f.severity.value for f in check_source("k.py", text, opts)}
    assert sev == {"NKI990": "info", "NKI991": "error"}
    opts = CheckOptions(per_file_ignores={"tests/*": ["NKI990"]}, root=str(tmp_path))
    assert {f.rule for f in check_source(str(tmp_path / "tests" / "k.py"), text, opts)} == {"NKI991"}
    assert {f.rule for f in check_source(str(tmp_path / "src" / "k.py"), text, opts)} == {"NKI990", "NKI991"}


def test_front_end_crash_becomes_an_error_entry_not_a_traceback(fake_front_ends, tmp_path):
    text = NKI_HEAD + "CRASH\n"
    assert check_source("k.py", text, CheckOptions()) == []
    result = check_text("k.py", text, CheckOptions())
    assert result.status == "error" and "RuntimeError: fake parser exploded" in result.reason
    path = tmp_path / "k.py"
    path.write_text(text, encoding="utf-8")
    report = check_paths([str(path)], CheckOptions())  # reported once, as an error, not also as a note
    assert report.notes == [] and len(report.errors) == 1 and "fake parser exploded" in report.errors[0]



def test_bad_target_is_a_note(fake_front_ends):
    result = check_text("k.py", NKI_HEAD + "BADPSUM\n", CheckOptions(target="trn9"))
    assert result.status == "error" and result.findings == [] and "trn9" in result.reason


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def test_check_paths_walks_sorts_and_skips(fake_front_ends, tmp_path):
    write(tmp_path / "b.py", NKI_HEAD + "SLOWDMA\nBADPSUM\n")
    write(tmp_path / "a" / "k.cu", "RACE\n")
    write(tmp_path / "a" / "util.py", "import os\nBADPSUM\n")  # not NKI: skipped quietly
    write(tmp_path / "a" / "readme.txt", "BADPSUM\n")          # not collected at all
    write(tmp_path / ".hidden" / "x.py", NKI_HEAD + "BADPSUM\n")
    write(tmp_path / "node_modules" / "x.cu", "RACE\n")
    write(tmp_path / ".venv" / "x.py", NKI_HEAD + "BADPSUM\n")
    write(tmp_path / "env" / "pyvenv.cfg", "")
    write(tmp_path / "env" / "lib" / "x.py", NKI_HEAD + "BADPSUM\n")
    report = check_paths([str(tmp_path)], CheckOptions())
    got = [(f.file.removeprefix(str(tmp_path) + "/"), f.line, f.rule, f.id) for f in report.findings]
    assert got == [("a/k.cu", 1, "CUDA990", "F1"), ("b.py", 3, "NKI991", "F2"), ("b.py", 4, "NKI990", "F3")]
    assert (report.files_checked, report.files_skipped) == (2, 1)
    assert report.notes == [] and report.errors == []
    assert list(report.cuda_facts) == [str(tmp_path / "a" / "k.cu")]
    assert report.cuda_facts[str(tmp_path / "a" / "k.cu")]["kernels"][0]["name"] == "k"
    assert report.summary()["by_severity"] == {"error": 1, "warning": 2, "info": 0}


def test_check_paths_missing_path_and_duplicates(fake_front_ends, tmp_path):
    f = write(tmp_path / "k.py", NKI_HEAD + "BADPSUM\n")
    report = check_paths([str(f), str(tmp_path), str(tmp_path / "nope.py")], CheckOptions())
    assert len(report.findings) == 1 and report.files_checked == 1
    assert report.errors == [f"{tmp_path / 'nope.py'}: no such file or directory"]


def test_exclude_globs_apply_to_walks(fake_front_ends, tmp_path):
    write(tmp_path / "gen" / "k.py", NKI_HEAD + "BADPSUM\n")
    write(tmp_path / "src" / "k.py", NKI_HEAD + "BADPSUM\n")
    report = check_paths([str(tmp_path)], CheckOptions(exclude=["gen"], root=str(tmp_path)))
    assert [f.file for f in report.findings] == [str(tmp_path / "src" / "k.py")]


# --- bad input ---------------------------------------------------------------------------------

def test_empty_files(fake_front_ends, tmp_path):
    write(tmp_path / "e.py", "")
    write(tmp_path / "e.cu", "")
    report = check_paths([str(tmp_path)], CheckOptions())
    assert report.findings == [] and report.errors == []
    assert (report.files_checked, report.files_skipped) == (1, 1)  # empty .cu parsed, empty .py is not NKI


def test_binary_file_is_skipped_with_note(fake_front_ends, tmp_path):
    write(tmp_path / "blob.py", b"import nki\x00\x01\x02BADPSUM" * 10)
    report = check_paths([str(tmp_path)], CheckOptions())
    assert report.findings == [] and report.files_skipped == 1
    assert report.notes == [f"{tmp_path / 'blob.py'}: binary file (NUL bytes); not checked"]


def test_non_utf8_is_decoded_with_replacement_and_noted(fake_front_ends, tmp_path):
    data = (NKI_HEAD + "s = '\xe9t\xe9'\nBADPSUM\n").encode("latin-1")
    path = write(tmp_path / "latin.py", data)
    report = check_paths([str(path)], CheckOptions())
    assert rules_and_lines(report.findings) == [("NKI990", 4)]
    assert len(report.notes) == 1 and "not valid UTF-8 (first bad byte on line 3, offset 42)" in report.notes[0]


def test_utf8_bom_is_accepted(fake_front_ends, tmp_path):
    path = write(tmp_path / "bom.py", b"\xef\xbb\xbf" + (NKI_HEAD + "BADPSUM\n").encode())
    report = check_paths([str(path)], CheckOptions())
    assert rules_and_lines(report.findings) == [("NKI990", 3)] and report.notes == []


def test_ten_megabyte_file_is_skipped_fast(fake_front_ends, tmp_path):
    path = write(tmp_path / "huge.py", NKI_HEAD + ("x = BADPSUM\n" * 900_000))
    assert path.stat().st_size > 10_000_000
    t0 = time.perf_counter()
    report = check_paths([str(path)], CheckOptions())
    assert time.perf_counter() - t0 < 1.0
    assert report.findings == [] and report.files_skipped == 1
    assert "larger than max-file-bytes" in report.notes[0] and "5,000,000" in report.notes[0]
    # The limit is configurable; check_source applies it to text too.
    small = CheckOptions(max_file_bytes=100)
    assert check_text("k.py", NKI_HEAD + "BADPSUM\n" * 20, small).status == "skipped"


def test_unreadable_file_is_an_error_entry(fake_front_ends, tmp_path, monkeypatch):
    import nki_assist.check.read as check_mod

    path = write(tmp_path / "locked.py", NKI_HEAD + "BADPSUM\n")

    def denied(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(check_mod, "read_regular", denied)  # root ignores chmod 000
    report = check_paths([str(path)], CheckOptions())
    assert report.findings == [] and report.files_checked == 0
    assert report.errors == [f"{path}: cannot read: Permission denied"]


def test_directory_symlink_loop_is_harmless(fake_front_ends, tmp_path):
    write(tmp_path / "k.py", NKI_HEAD + "BADPSUM\n")
    (tmp_path / "loop").symlink_to(tmp_path)
    report = check_paths([str(tmp_path)], CheckOptions())
    assert len(report.findings) == 1
