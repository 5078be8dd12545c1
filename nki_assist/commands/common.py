"""Options shared by several subcommands."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..infra.atomic import write_atomic  # noqa: F401  (re-exported: review/check -o)
from ..api.hardware import DEFAULT_TARGET, TARGETS
from .exits import UsageError


def add_target(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", choices=sorted(TARGETS), default=None,
                   help=f"hardware target (default: config or {DEFAULT_TARGET})")


def add_nki_version(p: argparse.ArgumentParser) -> None:
    p.add_argument("--nki-version", default=None, metavar="VERSION",
                   help="target NKI version (0.3) or Neuron SDK release (2.29) whose API facts apply "
                        "(default: config nki-version, else the project's nki pin, the installed nki, else "
                        "the newest the API table covers, assumed: then version-dependent findings are warnings "
                        "at most and --fix keeps fixes that need a newer NKI unsafe)")


def add_format(p: argparse.ArgumentParser, choices: list[str], default: str) -> None:
    p.add_argument("--format", choices=choices, default=default, help=f"output format (default: {default})")


def add_fail_on(p: argparse.ArgumentParser, default: str = "error") -> None:
    p.add_argument("--fail-on", choices=["error", "warning", "info", "never"], default=default,
                   help=f"exit 1 when a finding at or above this severity is reported (default: {default})")


# feedback/llm_modes.CHOICES, spelled out: importing the feedback package here would slow every command's start
LLM_MODES = ("auto", "json_schema", "json_object", "guided_json", "ollama_format", "json_prompt")


def add_llm_mode(p: argparse.ArgumentParser) -> None:
    p.add_argument("--llm-mode", choices=LLM_MODES, default="auto",
                   help="with --llm openai: how the server is asked for structured output. auto (default) tries "
                        "OpenAI json_schema, then llama.cpp json_object+schema, vLLM guided_json, Ollama format, "
                        "then JSON mode with the schema in the prompt, and remembers what the server took; a "
                        "mode forces that one (docs/llm-servers.md)")
    p.add_argument("--llm-timeout", type=float, default=60.0, metavar="S",
                   help="with --llm openai: seconds per LLM request (default 60; a small local model on a CPU "
                        "may need more)")


def add_limits(p: argparse.ArgumentParser, *, timeout_s: float, timeout_what: str, memory_what: str) -> None:
    """`--timeout` and `--memory-mb`: the sandbox's wall-time and address-space limits."""
    p.add_argument("--timeout", type=float, default=timeout_s, metavar="S",
                   help=f"wall-time limit {timeout_what} in seconds (default: {timeout_s:g})")
    p.add_argument("--memory-mb", type=int, default=4096, metavar="MB",
                   help=f"address-space limit of {memory_what} (default: 4096)")


def exit_code(findings, fail_on: str) -> int:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..severity import Severity

    if fail_on == "never":
        return 0
    level = Severity(fail_on)
    return 1 if any(f.severity.at_least(level) for f in findings) else 0


def add_sandbox(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sandbox", choices=["basic", "strong"], default=None,
                   help="how kernels are contained (default: NKI_ASSIST_SANDBOX or basic); strong adds PID/"
                        "network namespaces via bwrap or unshare and fails when neither works "
                        "(docs/toolchain.md 'Sandbox')")


def apply_sandbox(args: argparse.Namespace) -> None:
    """Select the sandbox mode before anything runs; a mode this machine cannot give is a usage error."""
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..toolchain.isolation import SandboxUnavailable, configure

    try:
        configure(getattr(args, "sandbox", None))
    except (SandboxUnavailable, ValueError) as exc:
        raise UsageError(str(exc)) from None


def check_output(path: str | None) -> None:
    """`-o FILE` checked before any work: its folder exists and is writable, FILE is not a folder."""
    if not path:
        return
    out = Path(path)
    folder = out.parent if str(out.parent) else Path(".")
    if out.is_dir():
        raise UsageError(f"{path}: is a folder, not a file")
    if not folder.is_dir():
        raise UsageError(f"{path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{path}: folder {folder} is not writable")


