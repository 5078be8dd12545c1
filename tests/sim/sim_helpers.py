"""Shared helpers for the simulator tests (fixture kernels live in tests/fixtures/sim/).

A plain module with a unique name (not conftest) so `from sim_helpers import ...` never collides
with another directory's conftest when several test directories run together.
"""

from __future__ import annotations

import re
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sim"

def fixture(name: str) -> str:
    return str(FIXTURES / name)

def expected_markers(name: str, first: int = 1, last: int | None = None) -> list[tuple[str, int]]:
    """(rule, line) for every `# expect: SIMxxx` comment in a fixture, optionally within a line range."""
    out = []
    for i, line in enumerate((FIXTURES / name).read_text().splitlines(), 1):
        if i < first or (last is not None and i > last):
            continue
        out += [(m, i) for m in re.findall(r"# expect: (SIM\d+)", line)]
    return sorted(out)


def run_source(tmp_path, text: str, args, target: str = "trn2"):
    """Write a kernel source to tmp_path/k.py and simulate it: (RunResult, source lines)."""
    from nki_assist.api.hardware import get_target
    from nki_assist.sim import run_kernel

    path = tmp_path / "k.py"
    path.write_text(text)
    return run_kernel(str(path), None, args, target=get_target(target)), text.splitlines()
