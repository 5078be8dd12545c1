"""`review` exit codes: a `block` verdict (an error finding) exits 1 by default; --fail-on moves the bar."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nki_assist.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ERRORS = FIXTURES / "rules" / "NKI501" / "pos_new.py"  # NKI501 errors: verdict block
NITS = FIXTURES / "fixes" / "loop_aliases.py"  # only NKI502 info: approve-with-nits


@pytest.mark.parametrize("path,argv,code,verdict", [
    (ERRORS, [], 1, "block"),
    (ERRORS, ["--fail-on", "never"], 0, "block"),
    (NITS, [], 0, "approve-with-nits"),
    (NITS, ["--fail-on", "info"], 1, "approve-with-nits"),
])
def test_exit_code_follows_fail_on(capsys, path, argv, code, verdict):
    # the version stated: on a guessed one the removed-API errors are warnings (issue 41)
    assert main(["review", "--nki", str(path), "--format", "json", "-q", "--nki-version", "0.6", *argv]) == code
    assert json.loads(capsys.readouterr().out)["assessment"]["verdict"] == verdict


def test_a_guessed_version_does_not_block(capsys, tmp_path):
    """value_copy_kernel binds nisa.tensor_copy's result: errors at a stated 0.6, warnings on a guessed
    version (issue 41). NKI501's removed-in-0.2 APIs stay errors either way (true at every version)."""
    kernel = tmp_path / "k.py"
    kernel.write_text((FIXTURES / "api" / "value_copy_kernel.py").read_text())
    (tmp_path / ".git").mkdir()
    assert main(["review", "--nki", str(kernel), "--format", "json", "-q", "--nki-version", "0.6"]) == 1
    capsys.readouterr()
    assert main(["review", "--nki", str(kernel), "--format", "json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["assessment"]["verdict"] != "block"
    assert {f["rule"] for f in out["findings"] if f["severity"] == "warning"} >= {"NKI512", "NKI513"}
