"""One kernel under NKI 0.2, 0.3, 0.4 and 0.6: what the version-dependent rules say follows the table
(removed at or before the target = error, deprecated at or before = warning, later = silent), and no fix
names an API the target does not have. Also the nki-version setting: config, flag, pins, default."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from nki_assist.api import version as api_version
from nki_assist.api.table import latest
from nki_assist.config import parse_table
from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki.run import run_nki_rules

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "api" / "versioned_kernel.py"
# lines of the fixture
PSUM_FMAX, TOTAL_SBUF, DYN_RANGE, COPY_DYN, FORI = 9, 10, 14, 15, 16


def _findings(version: str):
    target = dataclasses.replace(get_target("trn2"), nki_version=version)
    return [f for f in run_nki_rules(parse_nki(FIXTURE.read_text(), str(FIXTURE)), target)
            if f.rule in ("NKI501", "NKI510")]


def _by_line(version: str) -> dict[int, tuple[str, str]]:
    return {f.line: (f.rule, f.severity.value) for f in _findings(version)}


def test_nki_0_2():
    got = _by_line("0.2")
    # psum_fmax, total_available_sbuf_size, tensor_copy_dynamic_src: valid at 0.2, nothing deprecated yet
    assert PSUM_FMAX not in got and TOTAL_SBUF not in got and COPY_DYN not in got
    # the nl stubs at 0.2 list only ALU ops (incomplete): a name they lack is unknown, not absent, so no
    # finding, for fori_loop (new in 0.6) too (issue 41: AWS's 0.2 code uses names those stubs lack)
    assert DYN_RANGE not in got and FORI not in got


def test_nki_0_3_is_what_nki_library_targets():
    got = _by_line("0.3")
    assert PSUM_FMAX not in got and TOTAL_SBUF not in got and DYN_RANGE not in got
    assert got[COPY_DYN] == ("NKI501", "warning")  # deprecated in 0.3, removed in 0.4
    assert got[FORI] == ("NKI510", "error")


def test_nki_0_4():
    got = _by_line("0.4")
    assert got[PSUM_FMAX] == ("NKI501", "warning") and got[TOTAL_SBUF] == ("NKI501", "warning")
    assert got[COPY_DYN] == ("NKI501", "error")  # removed in 0.4
    assert DYN_RANGE not in got and got[FORI] == ("NKI510", "error")


def test_nki_0_6():
    got = _by_line("0.6")
    assert got[PSUM_FMAX] == ("NKI501", "warning") and got[COPY_DYN] == ("NKI501", "error")
    assert got[DYN_RANGE] == ("NKI501", "warning")  # deprecated in 0.6, still works
    assert FORI not in got


@pytest.mark.parametrize("version", ["0.2", "0.3", "0.4", "0.6"])
def test_no_fix_names_an_api_the_target_lacks(version):
    for f in _findings(version):
        if f.fix and "psum_bank_fmax" in f.fix:
            assert version >= "0.4", f"{version}: fix proposes psum_bank_fmax (new in 0.4): {f.fix}"


def test_config_key_and_sdk_release():
    assert parse_table({"nki-version": "0.3"}).nki_version == "0.3"
    assert parse_table({"nki-version": "2.29"}).nki_version == "0.3"  # SDK 2.29 ships NKI 0.3
    assert parse_table({"nki-version": "0.3.0"}).nki_version == "0.3"
    bad = parse_table({"nki-version": "banana"})
    assert bad.nki_version is None and "nki-version" in bad.problems[0]


def test_inferred_from_pins_then_default(tmp_path):
    api_version._infer_in.cache_clear()
    proj = tmp_path / "proj"
    (proj / "pkg").mkdir(parents=True)
    (proj / ".git").mkdir()
    (proj / "requirements.txt").write_text("numpy>=1.26\nnki==0.3.0\n")
    assert api_version.resolve_nki_version(None, proj / "pkg" / "k.py") == \
        api_version.VersionChoice("0.3", f"{proj / 'requirements.txt'}: nki==0.3.0", oldest="0.3", newest="0.3",
                                  spec="==0.3.0")
    other = tmp_path / "other"
    other.mkdir()
    (other / ".git").mkdir()
    (other / "pyproject.toml").write_text('[project]\nname="x"\ndependencies=["neuronx-cc==2.21.*"]\n')
    choice = api_version.resolve_nki_version(None, other / "k.py")
    assert choice.version == latest() == "0.6" and choice.source == "default" and "neuronx-cc" in choice.note
    assert api_version.resolve_nki_version("2.30", other).version == "0.4"
    with pytest.raises(ValueError):
        api_version.resolve_nki_version("9.9.9x", other)


def test_cli_flag_changes_the_verdict(tmp_path):
    (tmp_path / ".git").mkdir()
    k = tmp_path / "k.py"
    k.write_text(FIXTURE.read_text())

    def run(*extra):
        out = subprocess.run([sys.executable, "-m", "nki_assist", "check", str(k), "--format", "json",
                              "--select", "NKI501", *extra], capture_output=True, text=True)
        return sorted((f["line"], f["severity"]) for f in json.loads(out.stdout)["findings"])

    assert run("--nki-version", "0.3") == [(COPY_DYN, "warning")]
    assert run("--nki-version", "0.4") == [(PSUM_FMAX, "warning"), (TOTAL_SBUF, "warning"), (COPY_DYN, "error")]
    (tmp_path / "pyproject.toml").write_text('[tool.nki-assist]\nnki-version = "0.3"\n')
    assert run() == [(COPY_DYN, "warning")]
    bad = subprocess.run([sys.executable, "-m", "nki_assist", "check", str(k), "--nki-version", "7"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--nki-version" in bad.stderr


def test_review_reads_the_version_too():
    from nki_assist.review import ReviewOptions, review_files

    def nki501(version):
        res = review_files(str(FIXTURE), options=ReviewOptions(nki_version=version, run=False))
        return sorted((f.line, f.severity.value) for f in res.review.findings if f.rule == "NKI501")

    assert nki501("0.3") == [(COPY_DYN, "warning")]
    assert nki501("0.4") == [(PSUM_FMAX, "warning"), (TOTAL_SBUF, "warning"), (COPY_DYN, "error")]


@pytest.mark.parametrize("spec, lo, hi", [(">=0.3,<0.5", "0.3", "0.4"), ("==0.3.0", "0.3", "0.3"),
                                          ("~=0.3.0", "0.3", "0.3"), ("~=0.3", "0.3", None), (">=0.3", "0.3", None),
                                          ("<0.5", None, "0.4"), ("<=0.4", None, "0.4"), (">=0.0.0a0", None, None),
                                          ("==2.29", "0.3", "0.3")])
def test_pin_ranges(spec, lo, hi):
    assert api_version.pin_range(spec) == (lo, hi)


def test_a_range_pin_admits_both_ends_and_a_wide_pin_is_a_guess(tmp_path):
    api_version._infer_in.cache_clear()
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("nki>=0.3,<0.5\n")
    c = api_version.resolve_nki_version(None, tmp_path / "k.py")
    assert (c.version, c.oldest_admitted(), c.other_end(), c.guessed) == ("0.3", "0.3", "0.4", False)
    api_version._infer_in.cache_clear()
    (tmp_path / "requirements.txt").write_text("nki>=0.0.0a0\n")  # nki-library's pin
    c = api_version.resolve_nki_version(None, tmp_path / "k.py")
    assert (c.version, c.oldest_admitted(), c.guessed) == (latest(), "0.2", True)
    assert "admits every NKI release" in api_version.describe(c) and "--nki-version" in api_version.describe(c)
    api_version._infer_in.cache_clear()
