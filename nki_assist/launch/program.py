"""The task the sandboxed child runs for `nki-assist run`: the program, its output into two files.

Runs in the sandbox's worker (toolchain/child.py) after the limits are armed, so the program and every
process it starts inherit them (address space, CPU time, file size, processes) and are killed with the
run when the wall-time limit passes. Returns the program's exit status.
"""

from __future__ import annotations

import os
import shutil
import subprocess


def resolve_command(argv: list[str], python: str) -> list[str]:
    """`python`/`python3` is the interpreter nki-assist runs on (the one that has it installed); any other
    name is looked up on PATH, then beside that interpreter (a virtualenv's `pytest`)."""
    first = argv[0]
    if first in ("python", "python3"):
        return [python] + argv[1:]
    if os.sep in first:
        return argv
    here = os.path.dirname(python)
    found = shutil.which(first, path=os.pathsep.join([here, os.environ.get("PATH", "")]))
    return [found] + argv[1:] if found else argv


def run_program(argv: list[str], cwd: str, python: str, stdout_path: str, stderr_path: str) -> dict:
    cmd = resolve_command(argv, python)
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        try:
            proc = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, check=False)
        except OSError as exc:
            return {"returncode": 127, "error": f"cannot start {argv[0]}: {exc.strerror or exc}"}
    return {"returncode": proc.returncode, "command": cmd}
