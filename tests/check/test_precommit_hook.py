"""The pre-commit hook definition: valid manifest fields, and its entry run the way pre-commit runs
it (entry + args + the staged file names) reports findings and fails the commit on errors."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
FIXES = REPO / "tests" / "fixtures" / "fixes"
# Keys pre-commit's manifest schema knows (pre_commit/clientlib.py MANIFEST_HOOK_DICT).
KNOWN = {"id", "name", "entry", "language", "alias", "files", "exclude", "types", "types_or",
         "exclude_types", "additional_dependencies", "args", "always_run", "fail_fast", "pass_filenames",
         "description", "language_version", "log_file", "minimum_pre_commit_version", "require_serial",
         "stages", "verbose"}


def hooks():
    return yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())


def test_manifest_fields():
    (hook,) = hooks()
    assert set(hook) <= KNOWN and {"id", "name", "entry", "language"} <= set(hook)
    assert hook["id"] == "nki-assist" and hook["language"] == "python"
    files = re.compile(hook["files"])
    assert files.search("k/gemm_nki.py") and files.search("a.cu") and files.search("a.cuh")
    assert not files.search("README.md") and not files.search("x.cuda")


def _run_hook(args: list[str], files: list[Path], cwd: Path) -> subprocess.CompletedProcess:
    (hook,) = hooks()
    entry = shlex.split(hook["entry"])
    assert entry[0] == "nki-assist"  # the console script pip installs into the hook's env
    cmd = [sys.executable, "-m", "nki_assist", *entry[1:], *hook.get("args", []), *args, *map(str, files)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=120)


def test_hook_fails_on_errors_and_passes_clean_or_other_python(tmp_path):
    for name in ("renamed_apis_new.py", "loop_aliases.fixed.py"):
        shutil.copy(FIXES / name, tmp_path / name)
    (tmp_path / "setup.py").write_text("print('not a kernel')\n")
    # mask= was removed in NKI 0.2: an error at any new-dialect target version
    masked = (FIXES / "renamed_apis_new.py").read_text().replace(
        "nisa.dma_copy(dst=t, src=a[0:128, 0:512])", "t = nl.load(a[0:128, 0:512], mask=None)")
    (tmp_path / "renamed_apis_new.py").write_text(masked)
    bad = _run_hook([], [tmp_path / "renamed_apis_new.py", tmp_path / "setup.py"], tmp_path)
    assert bad.returncode == 1 and "NKI501 [error]" in bad.stdout
    good = _run_hook([], [tmp_path / "loop_aliases.fixed.py", tmp_path / "setup.py"], tmp_path)
    assert good.returncode == 0 and good.stdout == "All checks passed!\n"


def test_hook_with_fix_rewrites_the_file(tmp_path):
    target = tmp_path / "loop_aliases.py"
    shutil.copy(FIXES / "loop_aliases.py", target)
    proc = _run_hook(["--fix"], [target], tmp_path)
    assert proc.returncode == 0 and "Fixed 3 finding(s) in 1 file(s); 0 left." in proc.stderr
    assert target.read_text() == (FIXES / "loop_aliases.fixed.py").read_text()
