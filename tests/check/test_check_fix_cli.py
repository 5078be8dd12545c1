"""`check --fix / --unsafe-fixes / --diff`, `-` with `--stdin-filename`, and `--format github`."""

from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path

import pytest

from concise_cli import concise, findings_only

from nki_assist.cli import main

FIXES = Path(__file__).resolve().parent.parent / "fixtures" / "fixes"


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("loop_aliases.py", "renamed_apis_new.py", "unused_ignore.cu"):
        shutil.copy(FIXES / name, tmp_path / name)
    return tmp_path


def run(capsys, *argv, stdin: bytes | None = None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    # the fixtures' findings at a stated NKI version (a guessed one: test_guessed_version_*)
    code = main(["check", "--no-config", "--nki-version", "0.6", *concise(argv)])
    out, err = capsys.readouterr()
    return code, findings_only(out), findings_only(err)


def twin(name: str) -> str:
    p = Path(name)
    return (FIXES / f"{p.stem}.fixed{p.suffix}").read_text(encoding="utf-8")


def test_fix_writes_safe_fixes_and_reports_what_is_left(tree, capsys):
    code, out, err = run(capsys, "--fix", ".")
    assert Path("loop_aliases.py").read_text() == twin("loop_aliases.py")
    assert Path("unused_ignore.cu").read_text() == twin("unused_ignore.cu")
    left = Path("renamed_apis_new.py").read_text()
    assert "psum_bank_fmax" in left and "total_available_sbuf_size" in left  # the unsafe rename waits
    assert out.splitlines() == [
        "./renamed_apis_new.py:10:14: NKI501 [warning] `nl.tile_size.total_available_sbuf_size` was deprecated "
        "in NKI 0.4; use nl.tile_size.sbuf_fmax_bytes (usable bytes per partition)."]
    assert "Fixed 6 finding(s) in 3 file(s); 1 left." in err
    assert code == 0  # only a warning is left, below the default --fail-on error


def test_unsafe_fixes_opt_in(tree, capsys):
    code, out, err = run(capsys, "--fix", "--unsafe-fixes", "renamed_apis_new.py")
    assert Path("renamed_apis_new.py").read_text() == twin("renamed_apis_new.py")
    assert out == "" and code == 0 and "Fixed 2 finding(s) in 1 file(s); 0 left." in err


def test_diff_writes_nothing_and_exits_1_when_something_would_change(tree, capsys):
    before = Path("loop_aliases.py").read_text()
    code, out, err = run(capsys, "--diff", "loop_aliases.py")
    assert code == 1 and Path("loop_aliases.py").read_text() == before
    assert out.startswith("--- a/loop_aliases.py\n+++ b/loop_aliases.py\n")
    assert "\n-    for i in nl.affine_range(2):\n" in out and "\n+    for i in range(2):\n" in out
    assert "Would fix 3 finding(s) in 1 file(s)." in err
    Path("loop_aliases.py").write_text(twin("loop_aliases.py"))
    assert run(capsys, "--diff", "loop_aliases.py")[:2] == (0, "")


def test_plain_check_says_how_many_findings_are_fixable(tree, capsys):
    _, _, err = run(capsys, "renamed_apis_new.py")
    assert "note: 1 fixable with `--fix`; 1 more with `--fix --unsafe-fixes` (preview with --diff)" in err


def test_fix_keeps_bom_and_crlf(tree, capsys):
    text = twin("loop_aliases.py").replace("range(2)", "nl.affine_range(2)", 1).replace("\n", "\r\n")
    Path("crlf.py").write_bytes(b"\xef\xbb\xbf" + text.encode())
    run(capsys, "--fix", "crlf.py")
    data = Path("crlf.py").read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and data.count(b"\r\n") == text.count("\r\n")
    assert b"nl.affine_range" not in data


def test_invalid_utf8_is_checked_but_never_rewritten(tree, capsys):
    data = (FIXES / "loop_aliases.py").read_bytes().replace(b"# fix: safe", b"# fix: \xff")
    Path("bad.py").write_bytes(data)
    _, _, err = run(capsys, "--fix", "bad.py")
    assert Path("bad.py").read_bytes() == data
    assert "bad.py: not fixed: not valid UTF-8" in err


def test_stdin_uses_stdin_filename_for_language_and_report(tree, capsys, monkeypatch):
    cuda = (FIXES / "unused_ignore.cu").read_bytes()
    code, out, _ = run(capsys, "--stdin-filename", "src/k.cu", "-", stdin=cuda, monkeypatch=monkeypatch)
    assert [ln.split(": ")[0] for ln in out.splitlines()] == ["src/k.cu:7:40", "src/k.cu:12:59"]
    assert code == 0  # NA100 is a warning
    code, out, _ = run(capsys, "-", stdin=(FIXES / "loop_aliases.py").read_bytes(), monkeypatch=monkeypatch)
    assert out.splitlines()[0].startswith("-:11:14: NKI502 [info] [*] `nl.affine_range`")  # [*]: --fix fixes it


def test_stdin_fix_prints_the_fixed_source_and_the_report_on_stderr(tree, capsys, monkeypatch):
    src = (FIXES / "renamed_apis_new.py").read_bytes()
    code, out, err = run(capsys, "--fix", "--stdin-filename", "k.py", stdin=src, monkeypatch=monkeypatch)
    assert "psum_bank_fmax" in out and "total_available_sbuf_size" in out
    assert "k.py:10:14: NKI501 [warning]" in err and code == 0
    code, out, err = run(capsys, "--diff", "--unsafe-fixes", "-", stdin=src, monkeypatch=monkeypatch)
    assert code == 1 and out.startswith("--- a/-\n+++ b/-\n") and "+    budget = nl.tile_size.sbuf_fmax_bytes" in out


def test_stdin_non_nki_python_is_skipped_quietly(tree, capsys, monkeypatch):
    code, out, _ = run(capsys, "-", stdin=b"print('hello')\n", monkeypatch=monkeypatch)
    assert (code, out) == (0, "")


@pytest.mark.parametrize("argv,message", [
    (["-", "x.py"], "cannot be combined"),
    (["--stdin-filename", "a.py", "x.py"], "needs `-`"),
    (["--fix", "--diff", "x.py"], "not both"),
    (["--unsafe-fixes", "x.py"], "needs --fix or --diff"),
])
def test_usage_errors(tree, capsys, argv, message):
    Path("x.py").write_text("import nki\n")
    code, out, err = run(capsys, *argv)
    assert code == 2 and message in err and out == ""


def test_github_annotations(tree, capsys):
    code, out, _ = run(capsys, "--format", "github", "renamed_apis_new.py", "unused_ignore.cu")
    lines = out.splitlines()
    assert lines[0] == (
        # deprecated from NKI 0.4, not removed (API table): a warning at the default (newest) nki-version
        "::warning file=renamed_apis_new.py,line=9,col=13,endColumn=35,title=NKI501 removed-api-in-new-nki::"
        "`nl.tile_size.psum_fmax` was deprecated in NKI 0.4; use nl.tile_size.psum_bank_fmax.%0A"
        "Fix: Replace `nl.tile_size.psum_fmax` with nl.tile_size.psum_bank_fmax.")
    assert lines[1].startswith("::warning file=renamed_apis_new.py,line=10,")
    assert lines[3].startswith("::warning file=unused_ignore.cu,line=12,col=59,title=NA100 "
                               "unused-suppression::Unused suppression: CUDA101 did not fire on this line; "
                               "NOT_A_RULE is not a known rule.")
    assert code == 0  # warnings only (psum_fmax is deprecated, not removed): below the default --fail-on


def test_github_escapes_properties_and_data():
    from nki_assist.report.github import annotation
    from nki_assist.rules.registry import get

    f = get("NKI502").finding("50% done:\nnext, line", file="a,b:c.py", line=2, end_line=4)
    assert annotation(f) == ("::notice file=a%2Cb%3Ac.py,line=2,endLine=4,title=NKI502 deprecated-loop-iterator::"
                             "50%25 done:%0Anext, line%0AFix: Write `for i in range(n)` (or nl.fori_loop for a "
                             "runtime loop).")


def test_guessed_version_keeps_a_newer_api_rename_unsafe_and_says_which_version_it_assumed(tree, capsys):
    """No flag, config, pin or installed nki: the psum_fmax -> psum_bank_fmax rename (new in NKI 0.4) would
    break users of older NKI, so --fix leaves it; the findings are warnings naming the assumed version."""
    code = main(["check", "--no-config", "--fix", "renamed_apis_new.py"])
    out, err = capsys.readouterr()
    left = Path("renamed_apis_new.py").read_text()
    assert "psum_fmax" in left and "psum_bank_fmax" not in left
    assert "assuming NKI 0.6" in err and err.count("assuming NKI") == 1 and "--nki-version" in err
    assert "[NKI 0.6 assumed" in out and "[error]" not in out
    main(["check", "--no-config", "--format", "json", "renamed_apis_new.py"])
    import json

    data = json.loads(capsys.readouterr().out)
    fix = next(f["autofix"] for f in data["findings"] if f["evidence"].get("api") == "nl.tile_size.psum_fmax")
    assert fix["applicability"] == "unsafe" and "needs NKI 0.4" in fix["message"]
    assert data["nki_version"][0]["assumed"] is True and data["nki_version"][0]["version"] == "0.6"
