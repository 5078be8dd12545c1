"""Running `nki-assist run` on the fixtures of tests/fixtures/run (our own kernels and harnesses)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "run"
CORPORA = REPO.parent / "shared" / "corpora"


def run_cli(*args: str, cwd: Path = FIXTURES, timeout: float = 300,
            env: dict[str, str] | None = None) -> tuple[int, dict | str, str]:
    """(exit code, the parsed JSON report when --format json else stdout, stderr); `env` is added to ours."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", **(env or {}))
    proc = subprocess.run([sys.executable, "-m", "nki_assist", "run", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=env, check=False)
    out: dict | str = proc.stdout
    if "--format" in args and args[args.index("--format") + 1] == "json":
        out = json.loads(proc.stdout)
    return proc.returncode, out, proc.stderr


def planted() -> dict[tuple[str, int], str]:
    """(rule, line) of every `# PLANTED: RULE` marker in planted_kernels.py -> the kernel's name."""
    out, kernel = {}, None
    for n, line in enumerate((FIXTURES / "planted_kernels.py").read_text().splitlines(), 1):
        m = re.match(r"def (\w+)", line)
        if m:
            kernel = m.group(1)
        m = re.search(r"# PLANTED: (SIM\d+)", line)
        if m:
            out[(m.group(1), n)] = kernel
    return out
