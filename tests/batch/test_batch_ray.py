"""`--ray` (issue 43): the same tasks on a local Ray instance give the same results table as the local pool, and
the sandbox's limits hold inside Ray workers. Needs the `ray` extra (in requirements-dev.lock, so `make test`
runs it); skipped with the reason where Ray is not installed."""

from __future__ import annotations

import json

import pytest
from batch_helpers import cli, counts, make_port, rows, small_batch, table

pytest.importorskip("ray", reason="Ray is not installed (pip install 'nki-assist[ray]'; requirements-dev.lock has it)")


def test_ray_table_equals_local_pool_and_limits_hold(tmp_path):
    manifest = small_batch(tmp_path / "b", 5)
    hog = make_port(tmp_path / "b" / "subs" / "hog", "import numpy\nblob = numpy.ones(2**31)")
    with manifest.open("a") as fh:
        fh.write(json.dumps({"id": "hog", "spec": str(hog.relative_to(manifest.parent))}) + "\n")
    args = ["review", str(manifest), "--memory-mb", "768", "--timeout", "30", "--fail-on", "never"]
    local = cli([*args, "-o", str(tmp_path / "local"), "--jobs", "2"])
    assert local.returncode == 0, local.stderr[-2000:]
    ray = cli([*args, "-o", str(tmp_path / "ray"), "--ray"], RAY_DISABLE_USAGE_STATS="1")
    assert ray.returncode == 0, ray.stderr[-3000:]
    assert counts(ray.stderr) == (6, 0)
    assert table(tmp_path / "ray") == table(tmp_path / "local")
    hog_row = next(r for r in rows(tmp_path / "ray") if r["id"] == "hog")
    assert hog_row["status"] == "ok" and hog_row["numerics.L512"] == "error"
    review = json.loads((tmp_path / "ray" / hog_row["review"]).read_text())
    notes = " ".join(m.get("note") or "" for m in review["numerics"]["matrix"])
    assert "out-of-memory" in notes or "MemoryError" in notes, notes  # the 768 MB limit held in the Ray worker
