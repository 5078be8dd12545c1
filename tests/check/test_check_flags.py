"""ruff-parity flags and walks of `nki-assist check` (issue 30 item 3): .gitignore-aware walks and
gitwildmatch globs (pathspec), --exclude/--extend-exclude/--no-respect-gitignore, --extend-select,
--exit-zero, --show-fixes, --no-cache/--cache-dir, the `[*]` marker, and `rules` piped."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nki_assist.check import CheckOptions, check_paths, file_ignores
from nki_assist.check.walk import glob_matches
from concise_cli import concise, findings_only

from nki_assist.cli import main

NKI = "import nki\nacc = BADPSUM\nx = SLOWDMA\n"
FIXES = Path(__file__).resolve().parents[1] / "fixtures" / "fixes"


def run(capsys, *argv):
    code = main(["check", *concise(argv)])
    out, err = capsys.readouterr()
    return code, findings_only(out), err


def files_in(out: str) -> list[str]:
    return sorted({line.split(":")[0].removeprefix("./") for line in out.splitlines()})


@pytest.fixture
def repo(fake_front_ends, tmp_path, monkeypatch):
    """src/k.py, build/gen.py (git-ignored), src/gen/g.py, notes/n.py; a .gitignore at the top."""
    monkeypatch.chdir(tmp_path)
    for rel in ("src/k.py", "build/gen.py", "src/gen/g.py", "notes/n.py", "src/keep.py"):
        Path(rel).parent.mkdir(parents=True, exist_ok=True)
        Path(rel).write_text(NKI, encoding="utf-8")
    Path(".gitignore").write_text("build/\nnotes/*.py\n", encoding="utf-8")
    return tmp_path


# --- walks -----------------------------------------------------------------------------------------

def test_gitignore_is_honoured_in_walks(repo, capsys):
    _, out, _ = run(capsys, ".")
    assert files_in(out) == ["src/gen/g.py", "src/k.py", "src/keep.py"]
    _, out, _ = run(capsys, ".", "--no-respect-gitignore")
    assert files_in(out) == ["build/gen.py", "notes/n.py", "src/gen/g.py", "src/k.py", "src/keep.py"]


def test_an_ignored_file_named_explicitly_is_checked(repo, capsys):
    _, out, _ = run(capsys, "build/gen.py")
    assert files_in(out) == ["build/gen.py"]


def test_nested_gitignore_and_negation(repo, capsys):
    Path("src/.gitignore").write_text("*.py\n!keep.py\n", encoding="utf-8")
    _, out, _ = run(capsys, ".")
    assert files_in(out) == ["src/keep.py"]


def test_gitignore_above_the_walked_folder_counts_inside_a_git_work_tree(repo, capsys):
    _, out, _ = run(capsys, "notes")  # no .git: the top .gitignore is not above a work tree root
    assert files_in(out) == ["notes/n.py"]
    Path(".git").mkdir()
    _, out, _ = run(capsys, "notes")
    assert out == ""


def test_respect_gitignore_setting(repo, capsys):
    Path("pyproject.toml").write_text("[tool.nki-assist]\nrespect-gitignore = false\n", encoding="utf-8")
    _, out, _ = run(capsys, ".")
    assert "build/gen.py" in files_in(out)


def test_exclude_and_extend_exclude_flags(repo, capsys):
    Path("pyproject.toml").write_text('[tool.nki-assist]\nexclude = ["src/gen/"]\n', encoding="utf-8")
    _, out, _ = run(capsys, ".")
    assert files_in(out) == ["src/k.py", "src/keep.py"]
    _, out, _ = run(capsys, ".", "--exclude", "keep.py")  # replaces the config's exclude
    assert files_in(out) == ["src/gen/g.py", "src/k.py"]
    _, out, _ = run(capsys, ".", "--extend-exclude", "k.py,keep.py")  # added to it
    assert files_in(out) == []
    Path("pyproject.toml").write_text('[tool.nki-assist]\nextend-exclude = ["k.py"]\n', encoding="utf-8")
    _, out, _ = run(capsys, ".")
    assert files_in(out) == ["src/gen/g.py", "src/keep.py"]


def test_exclude_star_does_not_cross_slash_and_double_star_does(repo, capsys):
    _, out, _ = run(capsys, ".", "--exclude", "src/*.py")
    assert files_in(out) == ["src/gen/g.py"]
    _, out, _ = run(capsys, ".", "--exclude", "src/**/*.py")
    assert files_in(out) == []


@pytest.mark.parametrize("pattern,path,want", [
    ("tests/*", "tests/k.py", True),
    ("tests/*", "tests/sub/k.py", False),  # `*` does not cross `/`
    ("tests/**", "tests/sub/k.py", True),
    ("tests/**/*.py", "tests/a/b/k.py", True),
    ("**/test_*.py", "a/b/test_k.py", True),
    ("*.py", "a/b/k.py", True),  # no `/`: the name at any depth
    ("k_*.py", "src/k_1.py", True),
    ("tests/", "tests/sub/k.py", True),  # a folder covers its files
    ("gen", "src/gen/g.py", True),
    ("src/*.py", "lib/src/k.py", False),  # a `/` anchors at the root
    ("k?.py", "k12.py", False),
])
def test_per_file_ignores_globs(pattern, path, want):
    assert glob_matches(pattern, path) is want


def test_globs_raise_no_deprecation_warning():
    # pathspec 1.x deprecates GitWildMatchPattern: every run printed a warning where Python shows them
    import warnings

    from nki_assist.check.walk import _file_pattern

    _file_pattern.cache_clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert glob_matches("src/**/k_[0-9].py", "src/a/k_1.py") is True


def test_per_file_ignores_in_the_engine(fake_front_ends, tmp_path):
    opts = CheckOptions(per_file_ignores={"kernels/*": ["NKI990"], "**/gen/**": ["NKI991"]}, root=str(tmp_path))
    assert file_ignores(str(tmp_path / "kernels" / "k.py"), opts) == ["NKI990"]
    assert file_ignores(str(tmp_path / "kernels" / "sub" / "k.py"), opts) == []
    assert file_ignores(str(tmp_path / "a" / "gen" / "b" / "k.py"), opts) == ["NKI991"]


# --- selection and exit ----------------------------------------------------------------------------

def test_extend_select_adds_to_the_selection(repo, capsys):
    code, out, _ = run(capsys, "src/k.py", "--select", "NKI991")
    assert [ln.split()[1] for ln in out.splitlines()] == ["NKI991"] and code == 0
    code, out, _ = run(capsys, "src/k.py", "--select", "NKI991", "--extend-select", "NKI990")
    assert [ln.split()[1] for ln in out.splitlines()] == ["NKI990", "NKI991"] and code == 1
    Path("pyproject.toml").write_text('[tool.nki-assist]\nselect = ["NKI991"]\n', encoding="utf-8")
    _, out, _ = run(capsys, "src/k.py", "--extend-select", "fake-psum-overflow")
    assert [ln.split()[1] for ln in out.splitlines()] == ["NKI990", "NKI991"]
    code, _, err = run(capsys, "src/k.py", "--extend-select", "NOPE9")
    assert code == 2 and "unknown rule selector(s): NOPE9" in err


def test_exit_zero(repo, capsys):
    code, out, _ = run(capsys, "src/k.py")
    assert code == 1 and "NKI990 [error]" in out
    code, out, _ = run(capsys, "src/k.py", "--exit-zero")
    assert code == 0 and "NKI990 [error]" in out  # still reported


# --- fixes -----------------------------------------------------------------------------------------

@pytest.fixture
def fixable(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(FIXES / "loop_aliases.py", tmp_path / "k.py")
    return tmp_path / "k.py"


def test_fixable_findings_carry_the_marker(fixable, capsys):
    _, out, _ = run(capsys, "k.py")
    lines = out.splitlines()
    assert lines and all(" [*] " in ln for ln in lines if " NKI502 " in ln)
    assert all(" [*] " not in ln for ln in lines if " NKI502 " not in ln)


def test_show_fixes_with_and_without_fix(fixable, capsys):
    before = fixable.read_text(encoding="utf-8")
    code, out, err = run(capsys, "k.py", "--show-fixes")
    n = sum(1 for ln in out.splitlines() if " [*] " in ln)
    assert n >= 2
    assert f"Fixable with --fix: {n} findings:\n- k.py:\n    {n} × NKI502 (deprecated-loop-iterator)" in err
    code, _, err = run(capsys, "k.py", "--diff", "--show-fixes")
    assert f"Would fix {n} findings:\n- k.py:\n" in err and fixable.read_text(encoding="utf-8") == before
    code, _, err = run(capsys, "k.py", "--fix", "--show-fixes")
    assert f"Fixed {n} findings:\n- k.py:\n    {n} × NKI502 (deprecated-loop-iterator)" in err
    assert fixable.read_text(encoding="utf-8") == (FIXES / "loop_aliases.fixed.py").read_text(encoding="utf-8")
    _, _, err = run(capsys, "k.py", "--fix", "--show-fixes")
    assert "Fixed 0 findings." in err


# --- cache flags -----------------------------------------------------------------------------------

def test_cache_dir_flag_env_and_setting(repo, capsys, monkeypatch, tmp_path):
    run(capsys, "src/k.py", "--cache-dir", "mine")
    entries = list(Path("mine").glob("*/*.json"))
    assert len(entries) == 1 and (Path("mine") / "CACHEDIR.TAG").is_file()
    assert (Path("mine") / ".gitignore").read_text(encoding="utf-8").endswith("*\n")
    monkeypatch.delenv("NKI_ASSIST_CACHE_DIR")
    Path("pyproject.toml").write_text('[tool.nki-assist]\ncache-dir = "cfg_cache"\n', encoding="utf-8")
    run(capsys, "src/k.py")
    assert len(list(Path("cfg_cache").glob("*/*.json"))) == 1
    Path("pyproject.toml").unlink()
    run(capsys, "src/k.py")
    assert len(list(Path(".nki_assist_cache").glob("*/*.json"))) == 1  # the default, in the project root


def test_no_cache_writes_nothing(repo, capsys, monkeypatch):
    run(capsys, "src/k.py", "--no-cache", "--cache-dir", "c1")
    assert not Path("c1").exists()
    monkeypatch.setenv("NKI_ASSIST_NO_CACHE", "1")
    run(capsys, "src/k.py", "--cache-dir", "c2")
    assert not Path("c2").exists()


def test_bad_settings_are_usage_errors(repo, capsys):
    Path("pyproject.toml").write_text('[tool.nki-assist]\nrespect-gitignore = "no"\ncache-dir = 3\n'
                                      'extend-exclude = 5\n', encoding="utf-8")
    code, _, err = run(capsys, "src/k.py")
    assert code == 2
    assert "`respect-gitignore` must be true or false" in err and "`cache-dir` must be a folder name" in err
    assert "`extend-exclude` must be a list of strings" in err


def test_help_lists_every_new_flag():
    out = subprocess.run([sys.executable, "-m", "nki_assist", "check", "--help"], capture_output=True,
                         text=True, check=True).stdout
    for flag in ("--extend-select", "--exit-zero", "--exclude", "--extend-exclude", "--no-respect-gitignore",
                 "--no-cache", "--cache-dir", "--show-fixes"):
        assert flag in out, flag


def test_rules_table_is_not_truncated_when_piped():
    from nki_assist.rules.registry import all_rules

    out = subprocess.run([sys.executable, "-m", "nki_assist", "rules"], capture_output=True, text=True,
                         check=True).stdout
    rows = [line.split("\t") for line in out.splitlines()]
    assert rows[0] == ["id", "name", "category", "criterion", "severity"]
    assert "…" not in out
    assert [r[:2] for r in rows[1:]] == [[s.id, s.name] for s in all_rules()]
    assert {r[3] for r in rows[1:]} == {s.criterion for s in all_rules()}


def test_json_output_has_incomplete_list(repo, capsys):
    _, out, _ = run(capsys, "src/k.py", "--format", "json")
    data = json.loads(out)
    assert data["incomplete"] == [] and data["summary"]["incomplete"] == 0


def test_symlinked_folders_are_not_entered(repo, capsys):
    Path("elsewhere").mkdir()
    Path("elsewhere/e.py").write_text(NKI, encoding="utf-8")
    Path("src/link").symlink_to(Path("elsewhere").absolute())
    _, out, _ = run(capsys, "src")
    assert files_in(out) == ["src/gen/g.py", "src/k.py", "src/keep.py"]
