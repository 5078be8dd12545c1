"""Shared helpers of the batch tests: small generated batches, the CLI in its own process, tables compared
without their timings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "reliability"))
sys.path.insert(0, str(REPO / "tests" / "fakes"))

from benchmarks.batch_bench import generate  # noqa: E402
from reliability_helpers import child_env, make_port  # noqa: E402,F401  (re-exported: hostile ports)

ASST4 = REPO / "tests" / "fixtures" / "batch" / "asst4_part2"


def small_batch(root: Path, n: int = 6) -> Path:
    """n unchanged copies of the first eval cases and their manifest.jsonl; the manifest's path."""
    generate(root, limit=n)
    return root / "manifest.jsonl"


def cli(args: list[str], *, timeout: float = 300, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nki_assist", *args], capture_output=True, text=True,
                          timeout=timeout, env=child_env(**env), cwd=REPO)


def popen(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "nki_assist", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=child_env(), cwd=REPO, start_new_session=True)


def rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def table(folder: Path) -> list[dict]:
    """The results table without what differs run to run (wall time) or names the folder (spec path)."""
    drop = {"wall_s", "spec"}
    return sorted(({k: v for k, v in r.items() if k not in drop} for r in rows(folder)), key=lambda r: r["id"])


def counts(stderr: str) -> tuple[int, int]:
    """(reviewed, skipped) from the batch's closing line."""
    line = next(ln for ln in stderr.splitlines() if " reviewed, " in ln)
    reviewed = int(line.split(" reviewed,")[0].rsplit(" ", 1)[1])
    skipped = int(line.split(" unchanged")[0].rsplit(" ", 1)[1])
    return reviewed, skipped


def mtimes(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in (folder / "reviews").iterdir()}


def env_without(*names: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in names}
