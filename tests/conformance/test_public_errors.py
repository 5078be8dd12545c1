"""`check` on every NKI file of AWS's public nki-samples (both snapshots): the error-severity findings are
exactly the reviewed ones below. A new error on this code is either a real defect (add it here with the
reason) or a false accusation (fix the rule). Kernels are read from the local snapshot at run time (never
copied here); skipped when there is none (CI)."""

from __future__ import annotations

import subprocess

import pytest
from nki_samples_corpus import HEAD, LEGACY, repo_path

from nki_assist.check import CheckOptions, check_text
from nki_assist.parse.nki import is_nki_source

# (file, rule, line) -> why the error stands
REVIEWED = {
    ("contributed/neuron-team-kernels/transpose.py", "NKI504", 17):
        "imports legacy `neuronxcc.nki` and `nki.language.constants` in one file",
}


def _errors(repo: str) -> dict[tuple[str, str, int], str]:
    found = {}
    for commit in (LEGACY, HEAD):
        names = subprocess.run(["git", "--git-dir", repo, "ls-tree", "-r", "--name-only", commit],
                               capture_output=True, text=True, check=True).stdout.split()
        for name in names:
            if not name.endswith(".py"):
                continue
            text = subprocess.run(["git", "--git-dir", repo, "show", f"{commit}:{name}"],
                                  capture_output=True, text=True, check=True).stdout
            if not is_nki_source(text):
                continue
            for f in check_text(name, text, CheckOptions()).findings:
                if f.severity.value == "error":
                    found[(name, f.rule, f.line)] = f.message
    return found


def test_errors_on_public_kernels_are_the_reviewed_ones():
    repo = repo_path()
    if repo is None:
        pytest.skip("no nki-samples snapshot (NKI_SAMPLES_REPO)")
    found = _errors(repo)
    assert set(found) == set(REVIEWED), {k: found.get(k, "missing") for k in set(found) ^ set(REVIEWED)}
