"""Issue 41 (2): `check --fix` on a copy of nki-library (pinned `nki>=0.0.0a0`: every release admitted, so the
version is a guess) changes no line that NKI 0.3, the release the library targets, needs: no fix writes an
API newer than 0.3, and `nl.tile_size.psum_fmax` (deprecated in 0.4, its replacement new in 0.4) stays."""

from __future__ import annotations

import difflib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nki_assist.api import table

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT.parent / "shared" / "corpora" / "nki-library@d2ad3a5"
API = re.compile(r"\b(?:nl|nisa|nki)\.[A-Za-z_][\w.]*")


@pytest.mark.slow  # about a minute: --fix re-checks each of the ~110 files
@pytest.mark.skipif(not LIB.is_dir(), reason="../shared/corpora/nki-library@d2ad3a5 not present beside the repo")
def test_fix_on_nki_library_keeps_what_nki_0_3_needs(tmp_path):
    copy = tmp_path / "nki-library"
    shutil.copytree(LIB, copy)
    (copy / ".git").mkdir()  # the project root: no pin above it
    (copy / "pyproject.toml").write_text('[project]\nname = "nkilib"\ndependencies = ["nki>=0.0.0a0"]\n')
    out = subprocess.run([sys.executable, "-m", "nki_assist", "check", "--no-config", "--fix", "--exit-zero", "."],
                         capture_output=True, text=True, cwd=copy)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "assuming NKI 0.6" in out.stderr and "admits every NKI release" in out.stderr
    changed, newer = 0, []
    before_psum = after_psum = 0
    for src in sorted(LIB.rglob("*.py")):
        old = src.read_text(encoding="utf-8", errors="replace").splitlines()
        new = (copy / src.relative_to(LIB)).read_text(encoding="utf-8", errors="replace").splitlines()
        before_psum += sum("psum_fmax" in line for line in old)
        after_psum += sum("psum_fmax" in line for line in new)
        for line in difflib.unified_diff(old, new, lineterm="", n=0):
            if line.startswith("+") and not line.startswith("+++"):
                changed += 1
                for name in API.findall(line):
                    e = table.lookup(name)
                    if e is not None and e.introduced and table.vkey(e.introduced) > (0, 3):
                        newer.append((src.name, name, e.introduced))
    assert changed > 0  # the safe fixes that every admitted version takes still apply (loop aliases -> range)
    assert newer == []
    assert before_psum > 0 and after_psum == before_psum and "psum_bank_fmax" not in "".join(
        p.read_text(errors="replace") for p in copy.rglob("*.py"))
