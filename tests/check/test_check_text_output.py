"""ruff's CLI habits in `check` (issue 44, case 9): the statistics show the severity reported, text output shows
source snippets and a closing line, `check` alone checks `.`, `--output-format`, `--watch`, and an unknown flag
prints `check`'s usage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nki_assist.cli import main

ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "tests" / "fixtures" / "rules" / "NKI103" / "pos_legacy.py"
CLEAN = "import nki\nimport nki.language as nl\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text(BAD.read_text(encoding="utf-8"), encoding="utf-8")
    return tmp_path


def _run(capsys, *argv):
    code = main(["check", "--no-cache", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_statistics_show_the_severity_reported_after_overrides(project, capsys):
    (project / "pyproject.toml").write_text('[tool.nki-assist.severity]\nNKI103 = "info"\n', encoding="utf-8")
    code, out, _ = _run(capsys, "k.py", "--statistics", "--format", "concise")
    row = next(line for line in out.splitlines() if line.split()[:2][1:] == ["NKI103"] and line.split()[0].isdigit())
    assert row.split()[-1] == "[info]"  # before: [error], the rule's default
    assert "NKI103 [info]" in out


def test_text_shows_each_findings_source_and_a_closing_line(project, capsys):
    code, out, _ = _run(capsys, "k.py")
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if ": NKI103 [error]" in line)
    where = int(lines[first].split(":")[1])
    source = BAD.read_text(encoding="utf-8").splitlines()[where - 1]
    assert lines[first + 2] == f"{where} | {source}".rstrip() or lines[first + 2].endswith(source.strip())
    assert set(lines[first + 3].split("|", 1)[1].strip()) == {"^"}  # the caret line under the finding
    n = sum(1 for line in lines if " [error] " in line or " [warning] " in line or " [info] " in line)
    assert lines[-1] == f"Found {n} finding{'s' if n != 1 else ''} (0 fixable)." and code == 1


def test_a_clean_run_says_all_checks_passed(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.py").write_text(CLEAN, encoding="utf-8")
    code, out, _ = _run(capsys)  # no path: `.`, as ruff does (before: a usage error)
    assert (code, out) == (0, "All checks passed!\n")


def test_check_without_a_path_checks_the_current_directory(project, capsys):
    assert _run(capsys, "--format", "json")[1] == _run(capsys, ".", "--format", "json")[1]
    assert json.loads(_run(capsys, "--format", "json")[1])["summary"]["files_checked"] == 1


def test_output_format_is_an_alias_of_format(project, capsys):
    code, out, _ = _run(capsys, "k.py", "--output-format", "json")
    assert out == _run(capsys, "k.py", "--format", "json")[1] and json.loads(out)["findings"]
    assert _run(capsys, "k.py", "--output-format=sarif")[1] == _run(capsys, "k.py", "--format", "sarif")[1]


def test_an_unknown_flag_prints_checks_usage(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["check", "--no-such-flag", "."])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith("usage: nki-assist check")  # before: `usage: nki-assist [-h]`
    assert "unrecognized arguments: --no-such-flag" in err


def test_watch_checks_again_when_a_file_changes(project, capsys):
    from nki_assist.commands.check import build_options, _run_once
    from nki_assist.commands.check_watch import watch
    from nki_assist.cli import build_parser

    args = build_parser("check").parse_args(["check", "--no-cache", "--format", "concise", "."])
    options, _ = build_options(args)
    runs = []

    def once():
        runs.append(_run_once(args))
        return runs[-1]

    def edit(_seconds):  # the user fixes the file while the watch sleeps
        if len(runs) == 1:
            (project / "k.py").write_text(CLEAN, encoding="utf-8")

    code = watch(["."], options, once, rounds=3, sleep=edit)
    out, err = capsys.readouterr()
    assert runs == [1, 0] and code == 0  # checked twice: before the edit and after it, not on idle polls
    assert out.rstrip().endswith("All checks passed!") and "[watch] 1 file(s) changed" in err
