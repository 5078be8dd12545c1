"""Template mode grades an assignment (issue 43): the Stanford CS149 asst4-trainium part 2 kernel (fused conv2d
+ maxpool), five submissions we wrote against our own spec and NumPy reference, and the course's own starter
file where a copy of the course repository is at hand. The table ranks them as a grader would: the correct
submission, then the correct but slow one, then the defective ones, the unimplemented starter last."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from batch_helpers import ASST4, cli, rows

# Where a checkout of github.com/stanford-cs149/asst4-trainium may be (read in place, never copied into the
# project): $NKI_ASSIST_ASST4_REPO, or the mirror these machines fetch public repositories into.
COURSE = [Path(p) for p in (os.environ.get("NKI_ASSIST_ASST4_REPO", ""),
                            "/work/.mirror/stanford-cs149+asst4-trainium/repo") if p]


def _starter() -> str | None:
    for repo in COURSE:
        if (repo / "part2" / "conv2d.py").is_file():
            return (repo / "part2" / "conv2d.py").read_text()
        if (repo / "HEAD").is_file():  # a bare mirror
            done = subprocess.run(["git", "--git-dir", str(repo), "show", "HEAD:part2/conv2d.py"],
                                  capture_output=True, text=True)
            if done.returncode == 0:
                return done.stdout
    return None


def _grade(tmp_path: Path, with_starter: str | None) -> dict[str, dict]:
    subs = tmp_path / "subs"
    shutil.copytree(ASST4 / "subs", subs)
    if with_starter is not None:
        (subs / "starter").mkdir()
        (subs / "starter" / "kernel.py").write_text(with_starter)
    out = tmp_path / "out"
    done = cli(["review", "-o", str(out), "--template", str(ASST4 / "spec.toml"), "--submissions",
                str(subs / "*" / "kernel.py"), "--jobs", "2"])
    assert done.returncode == 1, done.stderr[-2000:]  # defective submissions block
    return {r["id"]: r for r in rows(out)}


def _check_variants(by_id: dict[str, dict]) -> None:
    rank = {i: r["rank"] for i, r in by_id.items()}
    assert rank["correct"] == 1 and rank["too_slow"] == 2, rank
    assert {rank[i] for i in ("wrong_pool_slice", "low_precision_psum", "partition_overflow")} == {3, 4, 5}
    assert by_id["correct"]["correct"] and by_id["too_slow"]["correct"]
    assert by_id["too_slow"]["est_time_us"] > 3 * by_id["correct"]["est_time_us"]
    assert by_id["wrong_pool_slice"]["numerics.c128"] == "fail" and not by_id["wrong_pool_slice"]["correct"]
    assert by_id["low_precision_psum"]["numerics.c256"] == "fail"
    assert by_id["partition_overflow"]["top_rule"] == "SIM101" and by_id["partition_overflow"]["errors"] >= 1
    assert all(r["status"] == "ok" for r in by_id.values())


def test_template_ranks_our_submissions_as_a_grader_would(tmp_path):
    by_id = _grade(tmp_path, None)
    assert sorted(by_id) == ["correct", "low_precision_psum", "partition_overflow", "too_slow", "wrong_pool_slice"]
    _check_variants(by_id)


def test_course_starter_ranks_last(tmp_path):
    starter = _starter()
    if starter is None:
        pytest.skip("no copy of stanford-cs149/asst4-trainium here (set NKI_ASSIST_ASST4_REPO to a checkout)")
    by_id = _grade(tmp_path, starter)
    _check_variants(by_id)
    row = by_id["starter"]
    assert row["rank"] == 6 and row["verdict"] == "block"
    assert row["numerics.c128"] == row["numerics.c256"] == "error"  # it raises "Please fill your implementation"
    assert "Please fill your implementation" in row["top_message"]
