"""Tasks of test_child_output.py, run in the sandbox (imported by name in the child)."""

from __future__ import annotations

import os
import signal
import time


def flood(mb: int) -> int:
    """Print `mb` MiB to stderr, as a kernel gone wild would."""
    chunk = b"x" * (1 << 20)
    for _ in range(mb):
        os.write(2, chunk)
    return mb


def raise_big(chars: int) -> None:
    raise RuntimeError("y" * chars)


def stop_zygote() -> int:
    """SIGSTOP the supervisor's parent when it is the warm zygote, then return normally."""
    with open(f"/proc/{os.getppid()}/stat") as fh:
        grand = int(fh.read().rsplit(")", 1)[1].split()[1])
    with open(f"/proc/{grand}/cmdline", "rb") as fh:
        if b"nki_assist.toolchain.zygote" not in fh.read():
            return 0
    os.kill(grand, signal.SIGSTOP)
    time.sleep(0.2)
    return grand
