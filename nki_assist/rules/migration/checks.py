"""Entry point of the pair-level migration checks (MIG1xx): what the CUDA kernel does that the NKI port does
not. `run_migration_rules` imports every check module of this package once (each registers its checks
and lists its RULES) and runs them on the chosen kernel pair."""

from __future__ import annotations

from functools import cache

from ...api.hardware import Target
from ...findings import Finding, Severity
from ...parse.cuda_model import CudaFile
from ...parse.nki_model import NkiFile
from ..registry import get
from ..runner import Check, crash_message, load_family
from .common import CHECKS, Ctx
from .pair import pick_cuda_kernel, pick_nki_kernel


@cache
def load_checks() -> None:
    """Import every rule module of this package once: each registers its checks (and lists its RULES)."""
    load_family(CHECKS, __name__.rpartition(".")[0], skip=("checks", "common"))


def run_migration_rules(cuda_file: CudaFile, nki_file: NkiFile, target: Target, *,
                        cuda_kernel: str | None = None, nki_kernel: str | None = None,
                        nki_source: str | None = None) -> list[Finding]:
    """MIG1xx findings for the CUDA kernel and its NKI port (empty when either kernel cannot be chosen).
    `nki_source` (the port's text) lets CUDA scalars pair with literals written in the kernel body."""
    load_checks()
    ck = pick_cuda_kernel(cuda_file, cuda_kernel)
    nk = pick_nki_kernel(nki_file, nki_kernel)
    if ck is None or nk is None:
        return []
    ctx = Ctx(cuda_file, nki_file, ck, nk, target, nki_source)

    def crashed(check: Check, exc: Exception) -> Finding:
        return get(check.rules[0]).finding(
            crash_message(check, exc), severity=Severity.INFO, file=nki_file.path, line=nk.line, confidence="low",
            evidence={"internal_error": f"{type(exc).__name__}: {exc}", "check": check.name})

    return CHECKS.run(ctx, on_crash=crashed)


load_checks()  # importing the entry point loads the family: CHECKS is complete for whoever reads it
