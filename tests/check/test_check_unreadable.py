"""An unreadable folder is never skipped in silence (issue 44, case 7). Tests run as root here, where chmod does not
bite, so `os.scandir` (and the config search's stat) raise PermissionError for the folders named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nki_assist.check import CheckOptions, check_paths
from nki_assist.cli import main

NKI = "import nki\nimport nki.language as nl\nx = 1\n"


@pytest.fixture
def locked(monkeypatch):
    """Folders (absolute or relative paths) that cannot be listed or searched."""
    names: set[str] = set()
    real_scandir, real_stat = os.scandir, os.stat

    def scandir(path="."):
        if os.path.abspath(path) in names:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    def stat(path, *a, **k):
        if os.path.abspath(os.path.dirname(os.fspath(path))) in names:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_stat(path, *a, **k)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "stat", stat)
    return lambda p: names.add(os.path.abspath(p))


def test_an_unreadable_subdirectory_makes_the_run_incomplete(tmp_path, locked, capsys, monkeypatch):
    (tmp_path / "ok.py").write_text(NKI, encoding="utf-8")
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "k.py").write_text(NKI, encoding="utf-8")
    locked(tmp_path / "secret")
    report = check_paths([str(tmp_path)], CheckOptions())
    assert [i for i in report.incomplete if "secret" in i and "cannot read directory" in i]
    monkeypatch.chdir(tmp_path)
    code = main(["check", ".", "--no-cache"])
    err = capsys.readouterr().err
    assert code == 1 and "incomplete" in err and "secret" in err  # before: exit 0, nothing said


def test_an_unreadable_directory_argument_is_a_clear_error(tmp_path, locked, capsys):
    (tmp_path / "d").mkdir()
    locked(tmp_path / "d")
    code = main(["check", str(tmp_path / "d"), "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot read directory" in err and "Permission denied" in err
    assert "internal error" not in err  # before: internal error: PermissionError (config find_pyproject)


def test_the_config_search_passes_over_a_folder_it_cannot_search(tmp_path, locked):
    from nki_assist.config import find_pyproject

    (tmp_path / "pyproject.toml").write_text("[tool.nki-assist]\ntarget = 'trn2'\n", encoding="utf-8")
    (tmp_path / "a").mkdir()
    locked(tmp_path / "a")
    found = find_pyproject(tmp_path / "a")
    assert found is not None and found[0] == tmp_path / "pyproject.toml"
