"""`nki-assist check`: flags over config, formats, --output, exit codes 0/1/2, stderr side channel."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nki_assist.cli import main

NKI = "import nki\nacc = BADPSUM\nx = SLOWDMA\n"


@pytest.fixture
def tree(fake_front_ends, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("k.py").write_text(NKI, encoding="utf-8")
    return tmp_path


def run(capsys, *argv):
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_text_output_and_exit_codes(tree, capsys):
    code, out, err = run(capsys, "k.py")
    assert code == 1  # an error-level finding at the default --fail-on error
    assert out == "k.py:2:7: NKI990 [error] BADPSUM seen on target trn2\nk.py:3:5: NKI991 [warning] SLOWDMA seen on target trn2\n"
    # one line on stderr: the NKI version assumed, as nothing names it (issue 41)
    assert err.startswith("nki-assist: no NKI version found") and err.count("\n") == 1
    assert run(capsys, "k.py", "--ignore", "NKI990")[0] == 0
    assert run(capsys, "k.py", "--ignore", "NKI990", "--fail-on", "warning")[0] == 1
    assert run(capsys, "k.py", "--fail-on", "never")[0] == 0


def test_select_ignore_target_flags(tree, capsys):
    code, out, _ = run(capsys, "k.py", "--select", "NKI991,NKI990", "--ignore", "fake-psum-overflow",
                       "--target", "trn3")
    assert out == "k.py:3:5: NKI991 [warning] SLOWDMA seen on target trn3\n" and code == 0


def test_config_applies_and_flags_override(tree, capsys):
    Path("pyproject.toml").write_text(
        '[tool.nki-assist]\ntarget = "trn1"\nignore = ["NKI990"]\nfail-on = "warning"\n'
        '[tool.nki-assist.severity]\nNKI991 = "info"\n', encoding="utf-8")
    code, out, _ = run(capsys, "k.py")
    assert out == "k.py:3:5: NKI991 [info] SLOWDMA seen on target trn1\n" and code == 0
    code, out, _ = run(capsys, "k.py", "--target", "trn2", "--fail-on", "info")
    assert out == "k.py:3:5: NKI991 [info] SLOWDMA seen on target trn2\n" and code == 1
    code, out, _ = run(capsys, "k.py", "--no-config")
    assert out.count("\n") == 2 and code == 1


def test_usage_errors_exit_2(tree, capsys):
    code, out, err = run(capsys, "k.py", "missing.py")
    assert code == 2 and out == "" and "no such file or directory: missing.py" in err
    code, _, err = run(capsys, "k.py", "--select", "NKI99X")
    assert code == 2 and "unknown rule selector(s): NKI99X" in err
    Path("pyproject.toml").write_text('[tool.nki-assist]\ntarget = "trn7"\n', encoding="utf-8")
    code, _, err = run(capsys, "k.py")
    assert code == 2 and "invalid configuration" in err and "trn7" in err
    with pytest.raises(SystemExit) as exc:
        main(["check", "k.py", "--format", "xml"])
    assert exc.value.code == 2
    code, _, err = run(capsys, "k.py", "--no-config", "--output", "no/such/dir/out.txt")
    assert code == 2 and "cannot write no/such/dir/out.txt" in err


def test_json_and_output_file(tree, capsys):
    code, out, err = run(capsys, "k.py", "--format", "json", "--output", "report.json")
    assert code == 1 and out == "" and err == ""
    data = json.loads(Path("report.json").read_text(encoding="utf-8"))
    assert data["schema"] == "nki-assist/check@1"
    assert [(f["rule"], f["line"]) for f in data["findings"]] == [("NKI990", 2), ("NKI991", 3)]


def test_sarif_to_stdout(tree, capsys):
    code, out, _ = run(capsys, ".", "--format", "sarif")
    data = json.loads(out)
    assert data["version"] == "2.1.0" and len(data["runs"][0]["results"]) == 2 and code == 1


def test_notes_go_to_stderr_only(tree, capsys):
    Path("latin.py").write_bytes(b"import nki\ns = '\xe9'\n")
    code, out, err = run(capsys, "latin.py", "--format", "json")
    json.loads(out)  # stdout stays pure JSON
    assert "note: latin.py: not valid UTF-8 (first bad byte on line 2, offset 16)" in err


def test_interactive_summary_on_stderr(tree, capsys, monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, err = run(capsys, "k.py", "--statistics")
    assert out.splitlines()[-2].split() == ["1", "NKI990", "fake-psum-overflow", "[error]"]
    assert "2 findings (1 error, 1 warning) in 1 file checked; target trn2." in err
    assert "\x1b" not in out


def test_cli_subprocess_piped_has_no_colour_and_skips_plain_python(tmp_path):
    pytest.importorskip("nki_assist.parse.nki")  # end to end: needs the real NKI front end
    (tmp_path / "plain.py").write_text("print('hello')\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "nki_assist.cli", "check", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == ""
    proc = subprocess.run([sys.executable, "-m", "nki_assist.cli", "check", str(tmp_path / "nope")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no such file or directory" in proc.stderr


def test_max_file_bytes_flag(tree, capsys):
    code, out, err = run(capsys, "k.py", "--max-file-bytes", "10")
    assert code == 0 and out == "" and "k.py: larger than max-file-bytes (37 > 10 bytes); not checked" in err
    code, _, err = run(capsys, "k.py", "--max-file-bytes", "0")
    assert code == 2 and "--max-file-bytes must be positive" in err


def test_options_from_config_for_the_language_server(tmp_path):
    from nki_assist.check import options_from_config
    from nki_assist.config import load_config

    (tmp_path / "pyproject.toml").write_text(
        '[tool.nki-assist]\ntarget = "trn3"\nselect = ["NKI1"]\n[tool.nki-assist.per-file-ignores]\n"t/*" = ["NKI104"]\n',
        encoding="utf-8")
    opts = options_from_config(load_config(tmp_path), target=None, ignore=["NKI107"])
    assert (opts.target, opts.select, opts.ignore, opts.root) == ("trn3", ["NKI1"], ["NKI107"], str(tmp_path))
    assert opts.per_file_ignores == {"t/*": ["NKI104"]} and opts.fail_on == "error"
