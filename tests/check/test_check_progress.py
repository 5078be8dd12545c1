"""Progress on one long file (issue 44, case 8): with --verbose (or a terminal on stderr) a file that takes long
says so on stderr with its phase; piped and without --verbose nothing is printed."""

from __future__ import annotations

import nki_assist.check.progress as progress
from nki_assist.cli import main

ROW = "x_{i} = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)\n"


def _long(tmp_path):
    path = tmp_path / "long.py"
    path.write_text("import nki\nimport nki.language as nl\n" + "".join(ROW.format(i=i) for i in range(3000)),
                    encoding="utf-8")
    return path


def test_a_long_file_reports_its_progress_with_verbose(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(progress, "AFTER_S", 0.0)
    monkeypatch.setattr(progress, "EVERY_S", 0.05)
    monkeypatch.setattr(progress, "_ENABLED", [False])  # the CLI's switch is process state: restored after
    main(["check", "--no-cache", "--verbose", "--format", "json", str(_long(tmp_path))])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "(3,003 lines)" in line]
    assert lines and lines[0].startswith("nki-assist check: ") and "long.py" in lines[0]  # before: silence
    assert any(p in err for p in ("parsing", "running the rules"))


def test_no_progress_when_piped_without_verbose(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(progress, "AFTER_S", 0.0)
    monkeypatch.setattr(progress, "EVERY_S", 0.05)
    monkeypatch.setattr(progress, "_ENABLED", [False])  # the CLI's switch is process state: restored after
    main(["check", "--no-cache", "--format", "json", str(_long(tmp_path))])
    assert "lines):" not in capsys.readouterr().err
