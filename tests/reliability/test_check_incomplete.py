"""`check` never passes what it did not check (issue 31 item 5): a crashed rule, a file over the default
size limit, an unreadable or binary file make the run incomplete: exit 1 whatever --fail-on or
--exit-zero say, an `incomplete:` message on stderr, an `incomplete` list in the JSON. A file the user
asked to skip (excluded, or over a size limit they set) does not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nki_assist.check.read as check_mod
from nki_assist.cli import main
from nki_assist.rules.nki.common import CHECKS as NKI_CHECKS
from nki_assist.rules.cuda.checks import CHECKS as CUDA_CHECKS
from nki_assist.rules.runner import Check

REPO = Path(__file__).resolve().parents[2]
KERNEL = (REPO / "tests" / "fixtures" / "rules" / "NKI103" / "neg_legacy.py").read_text(encoding="utf-8")
CUDA = (REPO / "tests" / "fixtures" / "rules" / "CUDA101" / "neg_double_buffer_and_aliases.cu").read_text(
    encoding="utf-8")


def run(capsys, *argv):
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("k.py").write_text(KERNEL, encoding="utf-8")
    Path("c.cu").write_text(CUDA, encoding="utf-8")
    return tmp_path


def _boom(*_args, **_kwargs):
    raise ZeroDivisionError("rule bug")


def test_a_clean_tree_passes(tree, capsys):
    code, out, err = run(capsys, ".")
    assert code == 0 and "incomplete" not in err


@pytest.mark.parametrize("checks,first", [(NKI_CHECKS, "NKI001"), (CUDA_CHECKS, None)], ids=["nki", "cuda"])
def test_a_crashed_rule_makes_the_run_incomplete(tree, capsys, monkeypatch, checks, first):
    crashing = Check(("NKI001",) if first else (checks.checks[0].rules[0],), _boom)
    monkeypatch.setattr(checks, "checks", [crashing, *checks.checks])
    for flags in ([], ["--fail-on", "never"], ["--exit-zero"]):
        code, _, err = run(capsys, ".", *flags)
        assert code == 1, flags
        assert "nki-assist check: incomplete: 1 file not fully checked, so this run cannot pass" in err
        assert "check(s) crashed:" in err and "_boom; their findings are missing" in err


def test_crash_is_never_served_from_the_cache(tree, capsys, monkeypatch):
    monkeypatch.setattr(NKI_CHECKS, "checks", [Check(("NKI001",), _boom), *NKI_CHECKS.checks])
    assert run(capsys, "k.py")[0] == 1
    assert run(capsys, "k.py")[0] == 1  # a second run checks again (crashes are not cached) ...
    monkeypatch.undo()
    monkeypatch.chdir(tree)
    assert run(capsys, "k.py")[0] == 0  # ... and passes once the rule is fixed


def test_front_end_crash_is_incomplete(tree, capsys, monkeypatch):
    import nki_assist.parse.nki as nki_front

    monkeypatch.setattr(nki_front, "parse_nki", _boom)
    code, _, err = run(capsys, "k.py", "--exit-zero")
    assert code == 1 and "k.py: internal error in the NKI checks (ZeroDivisionError: rule bug)" in err


def test_file_over_the_default_size_limit_is_incomplete(tree, capsys):
    Path("big.py").write_text(KERNEL + "#" * 5_000_001 + "\n", encoding="utf-8")
    code, _, err = run(capsys, ".", "--fail-on", "never")
    assert code == 1
    assert "big.py: larger than max-file-bytes (5,000," in err and "incomplete" in err


def test_a_size_limit_the_user_set_is_asking_to_skip(tree, capsys):
    Path("big.py").write_text(KERNEL + "#" * 20_000 + "\n", encoding="utf-8")
    code, _, err = run(capsys, ".", "--max-file-bytes", "10000")
    assert code == 0 and "not checked" in err and "incomplete" not in err


def test_an_excluded_file_is_asking_to_skip(tree, capsys):
    Path("big.py").write_text(KERNEL + "#" * 5_000_001 + "\n", encoding="utf-8")
    code, _, err = run(capsys, ".", "--extend-exclude", "big.py")
    assert code == 0 and "incomplete" not in err


def test_unreadable_file_is_incomplete(tree, capsys, monkeypatch):
    real = check_mod.read_regular

    def denied(path, limit):
        if path.endswith("k.py"):
            raise PermissionError(13, "Permission denied")
        return real(path, limit)

    monkeypatch.setattr(check_mod, "read_regular", denied)  # root ignores chmod 000
    code, _, err = run(capsys, ".", "--exit-zero")
    assert code == 1 and "k.py: cannot read: Permission denied" in err and "incomplete: 1 file" in err


def test_binary_kernel_file_is_incomplete(tree, capsys):
    Path("blob.py").write_bytes(b"import nki\x00\x01\x02")
    code, _, err = run(capsys, ".")
    assert code == 1 and "blob.py: binary file (NUL bytes); not checked" in err


def test_a_python_file_without_nki_is_not_incomplete(tree, capsys):
    Path("setup.py").write_text("print('not a kernel')\n", encoding="utf-8")
    assert run(capsys, ".")[0] == 0


def test_json_lists_what_was_not_checked(tree, capsys):
    Path("blob.py").write_bytes(b"\x00")
    code, out, _ = run(capsys, ".", "--format", "json")
    data = json.loads(out)
    assert code == 1
    assert data["incomplete"] == ["./blob.py: binary file (NUL bytes); not checked"]
    assert data["summary"]["incomplete"] == 1
    assert [f["incomplete"] for f in data["files"] if f["path"].endswith("blob.py")] == [
        "binary file (NUL bytes); not checked"]


def test_incomplete_with_diff_exits_1(tree, capsys):
    Path("blob.py").write_bytes(b"\x00")
    code, _, err = run(capsys, ".", "--diff")
    assert code == 1 and "Nothing to fix." in err and "incomplete" in err


def test_stdin_crash_is_incomplete(tree, capsys, monkeypatch):
    import io
    import sys

    monkeypatch.setattr(NKI_CHECKS, "checks", [Check(("NKI001",), _boom), *NKI_CHECKS.checks])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(KERNEL.encode())))
    code, _, err = run(capsys, "-", "--stdin-filename", "k.py")
    assert code == 1 and "incomplete" in err


def test_sarif_marks_an_incomplete_run_unsuccessful(tree, capsys):
    code, out, _ = run(capsys, ".", "--format", "sarif")
    assert code == 0 and json.loads(out)["runs"][0]["invocations"][0]["executionSuccessful"] is True
    Path("blob.py").write_bytes(b"\x00")
    code, out, _ = run(capsys, ".", "--format", "sarif")
    invocation = json.loads(out)["runs"][0]["invocations"][0]
    assert code == 1 and invocation["executionSuccessful"] is False
    assert {"level": "error", "message": {"text": "incomplete: ./blob.py: binary file (NUL bytes); not checked"}} \
        in invocation["toolExecutionNotifications"]
