"""Line endings are read as CPython reads them: `\r\n`, a lone `\r` and any mix of the three give the
findings, lines and columns of the same file with `\n` (issue 31 item 4).

Before: a valid kernel saved with `\r` endings was "skipped" (0 findings, vs 5 with `\n`), and mixed
endings gave bogus NKI001 syntax errors with shifted lines. The variants are written from one `\n`
fixture here, so git's own line-ending handling cannot change what is tested.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nki_assist.check import CheckOptions, check_paths, check_text
from nki_assist.parse.nki import parse_nki
from nki_assist.parse.source import normalize_newlines

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NKI = (FIXTURES / "check" / "line_endings" / "kernel_lf.py").read_text(encoding="utf-8")
CUDA = (FIXTURES / "rules" / "CUDA101" / "pos_block_sum_no_barrier.cu").read_text(encoding="utf-8")


def _mixed(text: str) -> str:
    # a lone \r is always followed by \r\n, never by \n (`\r` + `\n` would be one line end, \r\n)
    assert text.endswith("\n")
    return "".join(line + ("\r\n", "\n", "\r")[i % 3] for i, line in enumerate(text.split("\n")[:-1]))


STYLES = {
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "cr": lambda t: t.replace("\n", "\r"),
    "mixed": _mixed,
}


def _places(findings) -> list[tuple[str, int, int, str]]:
    return [(f.rule, f.line, f.column, f.message) for f in findings]


def test_the_fixture_has_findings_on_known_lines():
    found = check_text("k.py", NKI, CheckOptions())
    assert found.status == "checked"
    assert [(f.rule, f.line) for f in found.findings] == [
        ("NKI202", 10), ("NKI103", 12), ("NKI108", 14), ("NKI105", 16), ("NA100", 18)]


@pytest.mark.parametrize("style", sorted(STYLES))
def test_nki_findings_do_not_depend_on_line_endings(style):
    text = STYLES[style](NKI)
    assert "\r" in text
    expected = check_text("k.py", NKI, CheckOptions())
    got = check_text("k.py", text, CheckOptions())
    assert got.status == "checked"
    assert _places(got.findings) == _places(expected.findings)
    assert not any(f.rule == "NKI001" for f in got.findings)  # no bogus syntax errors
    assert [f.rule for f in got.suppressed] == [f.rule for f in expected.suppressed]


@pytest.mark.parametrize("style", sorted(STYLES))
def test_cuda_findings_do_not_depend_on_line_endings(style):
    expected = check_text("k.cu", CUDA, CheckOptions())
    assert expected.findings
    got = check_text("k.cu", STYLES[style](CUDA), CheckOptions())
    assert _places(got.findings) == _places(expected.findings)


@pytest.mark.parametrize("style", sorted(STYLES))
def test_files_on_disk_through_the_cli_path(tmp_path, style):
    (tmp_path / "lf.py").write_bytes(NKI.encode())
    (tmp_path / f"{style}.py").write_bytes(STYLES[style](NKI).encode())
    report = check_paths([str(tmp_path / "lf.py"), str(tmp_path / f"{style}.py")], CheckOptions())
    by_file: dict[str, list] = {}
    for f in report.findings:
        by_file.setdefault(Path(f.file).name, []).append((f.rule, f.line, f.column))
    assert report.files_checked == 2
    assert by_file[f"{style}.py"] == by_file["lf.py"]


@pytest.mark.parametrize("style", sorted(STYLES))
def test_parse_facts_keep_line_numbers(style):
    lf = parse_nki(NKI, "k.py")
    other = parse_nki(STYLES[style](NKI), "k.py")
    assert [(k.name, k.line) for k in other.kernels] == [(k.name, k.line) for k in lf.kernels] == [("wide_psum", 10)]
    assert other.syntax_errors == []


@pytest.mark.parametrize("style", sorted(STYLES))
def test_language_server_path_reads_the_same(style):
    from lsp_server import engine
    from lsp_server.settings import Settings

    lf = engine.analyze("file:///w/k.py", "/w/k.py", "python", 1, NKI, Settings())
    other = engine.analyze("file:///w/k2.py", "/w/k2.py", "python", 1, STYLES[style](NKI), Settings())
    assert other.error is None
    assert [(f.rule, f.line, f.column) for f in other.findings] == [(f.rule, f.line, f.column) for f in lf.findings]
    assert len(other.findings) == 5


def test_normalize_newlines_keeps_line_count_and_columns():
    assert normalize_newlines("a\r\nb\rc\nd") == "a\nb\nc\nd"
    assert normalize_newlines("\r\r\n\n") == "\n\n\n"  # \r then \r\n then \n: three line ends
    text = "x = 1\n"
    assert normalize_newlines(text) is text
