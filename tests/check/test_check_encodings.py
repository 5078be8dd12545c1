"""Source encodings as CPython reads them (issue 44, case 4): PEP 263 cookies and the BOM decide the text, and a
file CPython cannot decode is NKI001, never clean."""

from __future__ import annotations

import pytest

from nki_assist.check import CheckOptions, check_paths, decode_source

HEAD = "import nki\nimport nki.language as nl\n"


def _check(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    report = check_paths([str(path)], CheckOptions())
    return [(f.rule, f.line, f.severity.value) for f in report.findings], report


def test_utf7_code_is_read_as_python_runs_it(tmp_path):
    """`+AAo-` is a newline in UTF-7: what looks like a comment is a statement (here one Python cannot parse)."""
    data = b"# coding: utf-7\n" + HEAD.encode() + b"# harmless +AAo-def broken(:\n"
    assert decode_source(data).text.splitlines()[-1] == "def broken(:"
    found, _ = _check(tmp_path, "u7.py", data)
    assert ("NKI001", 5, "error") in found  # before: clean, exit 0 (the line was read as a comment)


@pytest.mark.parametrize("name, data, message", [
    ("rot.py", b"# coding: rot_13\n" + HEAD.encode() + b"x = 1\n", "not a text encoding"),
    ("unknown.py", b"# -*- coding: klingon -*-\n" + HEAD.encode() + b"x = 1\n", "unknown encoding: klingon"),
    ("bom.py", b"\xef\xbb\xbf# coding: latin-1\n" + HEAD.encode() + b"x = 1\n", "with BOM"),
    ("bad.py", HEAD.encode() + b"s = '\xe9'\n", "can't decode byte 0xe9"),
])
def test_a_file_python_cannot_decode_is_nki001(tmp_path, name, data, message):
    with pytest.raises(SyntaxError):
        compile(data, name, "exec")
    found, report = _check(tmp_path, name, data)
    assert [f for f in found if f[0] == "NKI001"], found  # before: no finding at all
    (f,) = [f for f in report.findings if f.rule == "NKI001"]
    assert message in f.message and f.severity.value == "error" and "cannot be imported" in f.message


def test_a_latin1_cookie_decodes_as_latin1_and_is_clean(tmp_path):
    data = b"# -*- coding: latin-1 -*-\n" + HEAD.encode() + "s = 'caf\xe9'\n".encode("latin-1")
    compile(data, "lat.py", "exec")
    d = decode_source(data)
    assert d.error is None and d.note is None and d.encoding == "iso-8859-1" and "café" in d.text
    found, report = _check(tmp_path, "lat.py", data)
    assert not [f for f in found if f[0] == "NKI001"] and report.notes == []  # before: "not valid UTF-8" note


def test_utf8_with_bom_and_plain_utf8_are_unchanged():
    assert decode_source(b"\xef\xbb\xbfx = 1\n") == ("x = 1\n", None, None, "utf-8-sig")
    assert decode_source("s = 'é'\n".encode()) == ("s = 'é'\n", None, None, "utf-8-sig")
