"""Issue 41 (2): a guessed NKI version never makes an error, and a range pin is checked at both ends.

The fixture kernels are ours: value_copy_kernel.py binds the result of `nisa.tensor_copy(src=x)` (the
form some NKI releases' users write), versioned_kernel.py uses names whose status changes across 0.2-0.6."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nki_assist.api import version as api_version

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "api"
FORI_LINE = 16  # versioned_kernel.py: `for j in nl.fori_loop(0, 1, None):` (new in NKI 0.6)


def _check(folder: Path, *extra: str) -> tuple[dict, str]:
    out = subprocess.run([sys.executable, "-m", "nki_assist", "check", "--no-cache", "--format", "json", *extra,
                          str(folder)], capture_output=True, text=True, cwd=folder)
    return json.loads(out.stdout), out.stderr


@pytest.fixture
def project(tmp_path):
    api_version._infer_in.cache_clear()
    (tmp_path / ".git").mkdir()  # the project's root: no pins above it
    shutil.copy(FIX / "value_copy_kernel.py", tmp_path / "value_copy_kernel.py")
    shutil.copy(FIX / "versioned_kernel.py", tmp_path / "versioned_kernel.py")
    yield tmp_path
    api_version._infer_in.cache_clear()


def test_guessed_version_makes_warnings_that_name_it(project):
    data, _ = _check(project)
    version_dependent = [f for f in data["findings"] if "nki_version" in f["evidence"]]
    assert version_dependent, "the fixture has version-dependent findings"
    assert all(f["severity"] != "error" for f in version_dependent)
    assert all("[NKI 0.6 assumed" in f["message"] and f["evidence"]["nki_version_assumed"] for f in version_dependent)
    assert data["nki_version"] == [{"version": "0.6", "source": "default", "assumed": True, "oldest_admitted": "0.2",
                                    "newest_admitted": "0.6", "files": 2,
                                    "message": data["nki_version"][0]["message"]}]
    # the same kernel at a stated version: the errors the table is certain of are errors again
    stated, err = _check(project, "--nki-version", "0.6")
    errors = {(f["rule"], f["line"]) for f in stated["findings"] if f["severity"] == "error"}
    assert ("NKI513", 11) in errors and "assuming" not in err
    assert stated["nki_version"][0]["assumed"] is False


def test_text_output_prints_the_assumed_version_once(project):
    out = subprocess.run([sys.executable, "-m", "nki_assist", "check", "--no-cache", str(project)],
                         capture_output=True, text=True, cwd=project)
    assert out.stderr.count("assuming NKI 0.6") == 1
    assert "--nki-version" in out.stderr and "nki-version` in pyproject.toml" in out.stderr
    assert "[error]" not in out.stdout


def test_range_pin_is_checked_at_both_ends(project):
    (project / "requirements.txt").write_text("nki>=0.3\n")
    data, _ = _check(project)
    fori = [f for f in data["findings"] if f["file"].endswith("versioned_kernel.py") and f["line"] == FORI_LINE]
    # nl.fori_loop is new in 0.6: missing at 0.3 (an error there), present at 0.6, which the pin admits too
    assert [(f["rule"], f["severity"]) for f in fori] == [("NKI510", "warning")]
    assert "holds at NKI 0.3, not at 0.6" in fori[0]["message"] and fori[0]["evidence"]["not_at"] == ["0.6"]
    (project / "requirements.txt").write_text("nki==0.3.0\n")
    api_version._infer_in.cache_clear()
    exact, _ = _check(project)
    assert [(f["rule"], f["severity"]) for f in exact["findings"]
            if f["file"].endswith("versioned_kernel.py") and f["line"] == FORI_LINE] == [("NKI510", "error")]


def test_a_deprecation_at_a_guessed_version_is_a_note(project):
    """A deprecated API still works: when the version is only assumed, the code may target a release before the
    deprecation, so NKI501 is an info naming the assumption; at a stated version it is a warning."""
    (project / "deprecated_kernel.py").write_text(
        "import nki\nimport nki.language as nl\n\n\n@nki.jit\ndef k(a):\n"
        "    n = nl.tile_size.psum_fmax\n    return a\n", encoding="utf-8")
    guessed, _ = _check(project)
    (dep,) = [f for f in guessed["findings"] if f["rule"] == "NKI501" and f["file"].endswith("deprecated_kernel.py")]
    assert dep["severity"] == "info" and dep["evidence"]["deprecated_in"] and "assumed" in dep["message"]
    stated, _ = _check(project, "--nki-version", "0.6")
    (dep,) = [f for f in stated["findings"] if f["rule"] == "NKI501" and f["file"].endswith("deprecated_kernel.py")]
    assert dep["severity"] == "warning"
