"""The backend interface: run one kernel on concrete inputs and return a `RunResult`."""

from __future__ import annotations

import ast
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from ..contracts.runs import RunResult
from ..api.hardware import Target, get_target
from ..rules import registry
from .sandbox import DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S, ChildOutcome

__all__ = ["Backend", "DEFAULT_TIMEOUT_S", "DEFAULT_MEMORY_MB", "kernel_def_line", "outcome_result",
           "as_target", "relabel"]


class Backend(ABC):
    name: str = ""

    @classmethod
    def available(cls) -> bool:
        return True

    @classmethod
    def why_unavailable(cls) -> str | None:
        return None

    @abstractmethod
    def run(self, kernel_path: str, kernel_name: str | None, args: list[Any], kwargs: dict | None = None, *,
            target: Target | str | None = None, precise: bool = True, stochastic_rounding: bool = False,
            timeout_s: float = DEFAULT_TIMEOUT_S, memory_mb: int = DEFAULT_MEMORY_MB, seed: int = 0,
            grid: tuple[int, ...] | None = None, trace: bool = True, max_trace: int = 2_000_000,
            lenient: bool = True) -> RunResult:
        """Run `kernel_name` from `kernel_path` on `args`; never raises for anything the kernel does."""


def as_target(target: Target | str | None) -> Target:
    return target if isinstance(target, Target) else get_target(target)


def kernel_def_line(path: str, name: str | None) -> int | None:
    """Line of `def name` in the kernel file (the fallback anchor when no better line is known)."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (name is None or node.name == name):
            return node.lineno
    return None


def outcome_result(backend: str, out: ChildOutcome, kernel_path: str, kernel_name: str | None,
                   timeout_s: float, memory_mb: int) -> RunResult:
    """A RunResult (with its TC finding) for a child that did not return a result of its own."""
    line = out.line or kernel_def_line(kernel_path, kernel_name)
    ev: dict[str, Any] = {"backend": backend, "elapsed_s": round(out.elapsed_s, 3)}
    if out.status == "timeout":
        ev["timeout_s"] = timeout_s
        where = f" while executing line {out.line}" if out.line else ""
        f = registry.get("TC101").finding(
            f"The kernel ran past the {timeout_s:g} s wall-time limit{where} and was stopped.",
            file=kernel_path, line=line, evidence=ev, confidence="high" if out.line else "medium")
        status = "timeout"
    elif out.status == "out-of-memory":
        ev["memory_limit_mb"] = memory_mb
        f = registry.get("TC102").finding(
            f"Running the kernel needed more than the {memory_mb} MiB memory limit ({out.error}).",
            file=kernel_path, line=line, evidence=ev)
        status = "out-of-memory"
    elif out.status == "crashed" and out.in_user_code:
        ev["process"] = out.error
        if out.stderr:
            ev["stderr_tail"] = out.stderr[-800:]
        where = f" at line {out.line}" if out.line else ""
        f = registry.get("TC110").finding(
            f"The kernel's process ended without a result{where}: {out.error}.", file=kernel_path, line=line,
            evidence=ev, confidence="high" if out.line else "medium")
        status = "kernel-error"
    elif out.status == "error" and out.line is not None:
        ev["exception"] = out.error
        f = registry.get("TC106").finding(f"The kernel raised {out.error}", file=kernel_path, line=line,
                                          evidence=ev)
        status = "kernel-error"
    else:
        ev["error"] = out.error
        if out.stderr:
            ev["stderr_tail"] = out.stderr[-800:]
        f = registry.get("TC103").finding(f"The {backend} backend failed: {out.error}", file=kernel_path,
                                          line=line, evidence=ev, confidence="medium")
        status = "backend-error"
    return RunResult(backend=backend, status=status, findings=[f], elapsed_s=out.elapsed_s,
                     error=out.error, error_line=out.line,
                     notes=[f"{backend}: {status}: {out.error}"])


def relabel(result: RunResult, actual: str, given: str) -> RunResult:
    """Name the kernel file as the caller gave it: the child saw an absolute path (it runs in a
    temporary directory), findings and trace entries should carry the caller's spelling."""
    if actual == given:
        return result
    result.findings = [f.model_copy(update={"file": given}) if f.file == actual else f for f in result.findings]
    for e in result.trace:
        if e.file == actual:
            e.file = given
    return result
