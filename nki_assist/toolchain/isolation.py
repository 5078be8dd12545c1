"""Sandbox modes: `basic` (default, portable) and the opt-in `strong` mode (Linux namespaces).

`strong` wraps the child in bubblewrap (`bwrap`: new PID, network, IPC and UTS namespaces, the
file system read-only except the run's own directory) or, without bwrap, util-linux `unshare`
(new PID, network, IPC and UTS namespaces; the file system stays writable). Nothing depends on
either tool: asking for `strong` where neither works is a clear error, never a silent downgrade.
Choose with `--sandbox` or NKI_ASSIST_SANDBOX=basic|strong.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from functools import cache

MODES = ("basic", "strong")
ENV = "NKI_ASSIST_SANDBOX"
PROBE_TIMEOUT_S = 20.0

_chosen: str | None = None


class SandboxUnavailable(RuntimeError):
    """`strong` was asked for but this machine cannot provide it."""


def current_mode() -> str:
    mode = _chosen or os.environ.get(ENV, "").strip().lower() or "basic"
    return mode if mode in MODES else "basic"


def configure(mode: str | None) -> str:
    """Select the mode for this process (None: from NKI_ASSIST_SANDBOX). Raises SandboxUnavailable
    for `strong` when no namespace tool works here, ValueError for an unknown mode."""
    global _chosen
    raw = (mode or os.environ.get(ENV, "") or "basic").strip().lower()
    if raw not in MODES:
        raise ValueError(f"unknown sandbox mode {raw!r}; choose one of {', '.join(MODES)}")
    if raw == "strong":
        tool, why = strong_tool()
        if tool is None:
            raise SandboxUnavailable(f"sandbox 'strong' is not available here: {why}")
    _chosen = raw
    return raw


def _bwrap(job: str, work: str) -> list[str]:
    return ["bwrap", "--die-with-parent", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", job, job, "--chdir", work]


def _unshare(job: str, work: str) -> list[str]:
    cmd = ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", "--net", "--ipc", "--uts"]
    return cmd + (["--map-root-user"] if os.geteuid() != 0 else [])


_TOOLS = {"bwrap": _bwrap, "unshare": _unshare}


@cache
def strong_tool() -> tuple[str | None, str]:
    """(tool name, "") for the first namespace tool that runs Python here, else (None, why not)."""
    if not sys.platform.startswith("linux"):
        return None, f"namespaces need Linux (this is {sys.platform})"
    problems = []
    for name, build in _TOOLS.items():
        if shutil.which(name) is None:
            problems.append(f"{name} not installed")
            continue
        probe = build("/tmp", "/tmp") + [sys.executable, "-c", "import os; print(os.getpid())"]
        try:
            done = subprocess.run(probe, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            problems.append(f"{name} failed ({type(exc).__name__})")
            continue
        if done.returncode == 0 and done.stdout.strip() in ("1", "2"):  # pid 1 (or 2 under bwrap's init)
            return name, ""
        err = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        problems.append(f"{name}: {err[:200]}")
    return None, "; ".join(problems)


def wrap(command: list[str], job: str, work: str) -> tuple[list[str], str]:
    """The command to start (prefixed in strong mode) and the mode actually used."""
    if current_mode() != "strong":
        return command, "basic"
    tool, why = strong_tool()
    if tool is None:
        raise SandboxUnavailable(f"sandbox 'strong' is not available here: {why}")
    return _TOOLS[tool](job, work) + command, f"strong ({tool})"
