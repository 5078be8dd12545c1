"""CLI habits (issue 44, case 9): reports are written with the user's umask, the eval table keeps whole case
names when piped."""

from __future__ import annotations

import os
import stat

from nki_assist.commands import eval as eval_cmd
from nki_assist.infra.atomic import write_atomic


def test_a_new_report_gets_the_users_umask(tmp_path):
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "review.md", "# review\n")
        os.umask(0o027)
        write_atomic(tmp_path / "other.md", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "review.md").stat().st_mode) == 0o644  # before: 0600 (mkstemp's mode)
    assert stat.S_IMODE((tmp_path / "other.md").stat().st_mode) == 0o640


def test_a_rewritten_report_keeps_its_mode(tmp_path):
    path = tmp_path / "review.md"
    path.write_text("old", encoding="utf-8")
    path.chmod(0o664)
    write_atomic(path, "new")
    assert path.read_text(encoding="utf-8") == "new" and stat.S_IMODE(path.stat().st_mode) == 0o664


def test_the_eval_table_is_not_cut_when_piped(capsys):
    name = "adv_" + "very_long_case_name_" * 6 + "end"
    case = {"case": name, "gold": 3, "emitted": 4, "matched_gold": 3, "precision": 0.75, "recall": 1.0,
            "critical_matched": 1, "critical": 1, "clean_false_positives": 0, "verdict": "block", "seconds": 1.5}
    eval_cmd._table({"per_case": [case], "llm": "none"})
    out = capsys.readouterr().out
    assert name in out and "…" not in out  # before: rich's 80 columns cut it to `adv_very_long_…`
