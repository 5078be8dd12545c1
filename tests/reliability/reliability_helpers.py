"""Shared helpers of the reliability suite: hostile ports built from one honest fixture, the CLI in
a separate process (so a kernel that kills its parent cannot take pytest down), process checks."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
ROWSUM = REPO / "tests" / "fixtures" / "ports" / "rev_rowsum_fp32"
FAKE_KEY = "sk-test-NKIASSIST-reliability-0123456789SECRET"
FAKE_TOKEN = "tok-reliability-ABCDEFGHIJKLMNOP"

PORT_TOML = """[port]
name = "row_sum"
nki = "row_sum_nki.py"
reference = "reference.py:{ref}"

[inputs]
x = {{ shape = [128, "L"], dtype = "bfloat16" }}

[[sizes]]
name = "L512"
L = {L}

[tolerance]
rtol = 2e-2
atol = 2e-2
"""


def make_port(root: Path, inject: str = "", *, ref: str = "row_sum_ref", ref_extra: str = "", L: int = 512) -> Path:
    """A one-size row-sum port in `root` whose kernel runs `inject` (Python lines) first."""
    root.mkdir(parents=True, exist_ok=True)
    kernel = (ROWSUM / "row_sum_nki.py").read_text()
    anchor = "    P, L = x.shape\n"
    body = "".join(f"    {line}\n" for line in inject.splitlines())
    (root / "row_sum_nki.py").write_text(kernel.replace(anchor, anchor + body, 1))
    (root / "reference.py").write_text((ROWSUM / "reference.py").read_text() + ref_extra)
    (root / "port.toml").write_text(PORT_TOML.format(ref=ref, L=L))
    return root / "port.toml"


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    for var in ("NKI_ASSIST_SIM_RUNNER", "NKI_ASSIST_SANDBOX", "NKI_ASSIST_CHILD_ENV"):
        env.pop(var, None)
    env.update(extra)
    return env


def run_cli(args: list[str], *, timeout: float = 180, memory_gb: float | None = None,
            **env: str) -> subprocess.CompletedProcess:
    """`python -m nki_assist ARGS` in its own process (optionally under an address-space limit)."""

    def limit() -> None:
        if memory_gb:
            cap = int(memory_gb * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    return subprocess.run([sys.executable, "-m", "nki_assist", *args], capture_output=True, text=True,
                          timeout=timeout, env=child_env(**env), preexec_fn=limit if memory_gb else None)


def run_json(args: list[str], **kw) -> tuple[int, dict | None, str]:
    done = run_cli([*args, "--format", "json"], **kw)
    try:
        doc = json.loads(done.stdout)
    except ValueError:
        doc = None
    return done.returncode, doc, done.stderr


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def rules(doc: dict) -> list[tuple[str, str]]:
    return [(f["rule"], f["severity"]) for f in doc["findings"]]
