"""One way to register and run checks, for every family (NKI, CUDA, migration, cost model).

A check is a function decorated with its family's `register(*rule_ids)`; the family runs its checks in
registration order, and a check that raises becomes one internal-error finding (built by the family's
`on_crash`) while the other checks still report. A family may run a check in parts (NKI: one part per
kernel, so a kernel the parse cache reused keeps its findings); the parts' findings are concatenated in
order, and a part that raises counts as the whole check raising.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ..findings import Finding

log = logging.getLogger(__name__)

CheckResult = Iterable[Finding] | Finding | None


@dataclass(frozen=True)
class Check:
    rules: tuple[str, ...]  # the rule ids the check can report (the first names it in crash findings)
    fn: Callable[..., CheckResult]
    # its findings for one kernel depend on that kernel and the file's dialect only, so it may be run
    # per kernel (tests/rules/test_check_scope.py checks the shape of every such check)
    per_kernel: bool = False

    @property
    def name(self) -> str:
        return getattr(self.fn, "__name__", repr(self.fn))


class CheckSet:
    """The registered checks of one family."""

    def __init__(self, family: str):
        self.family = family
        self.checks: list[Check] = []

    def register(self, *rule_ids: str, per_kernel: bool = False) -> Callable[[Callable], Callable]:
        def deco(fn: Callable) -> Callable:
            self.checks.append(Check(tuple(rule_ids), fn, per_kernel))
            return fn

        return deco

    def rule_ids(self) -> set[str]:
        return {r for c in self.checks for r in c.rules}

    def run(self, *args: Any, on_crash: Callable[[Check, Exception], Finding | None],
            parts: Callable[[Check], list[Callable[[], list[Finding]]] | None] | None = None) -> list[Finding]:
        """Every check's findings. `parts(check)`, when given and not None, is the check split into parts
        whose findings are concatenated in order; otherwise the check runs once with `args`."""
        out: list[Finding] = []
        for check in self.checks:
            try:
                split = parts(check) if parts is not None else None
                if split is None:
                    found = findings_of(check.fn(*args))
                else:
                    found = [f for part in split for f in part()]
            except Exception as exc:  # one broken check must not lose the others' findings
                log.warning("%s check %s crashed: %r", self.family, check.name, exc)
                crash = on_crash(check, exc)
                if crash is not None:
                    out.append(crash)
                continue
            out.extend(found)
        return out


def findings_of(result: CheckResult) -> list[Finding]:
    """A check's result as a list; a generator check raises here, while it is consumed."""
    return [result] if isinstance(result, Finding) else list(result or ())


def crash_message(check: Check, exc: Exception) -> str:
    return (f"Internal error in check {check.name} ({', '.join(check.rules)}; {type(exc).__name__}: {exc}); its "
            "findings are missing, the other checks ran.")


def load_family(checks: CheckSet, package: str, skip: tuple[str, ...]) -> None:
    """Import every module of a rule family's package once (each registers its checks when imported, so a new
    module is picked up without being named anywhere) and run the checks in one order, whatever the import
    order: by their first rule id."""
    for mod in sorted(pkgutil.iter_modules(importlib.import_module(package).__path__), key=lambda m: m.name):
        if mod.name not in skip:
            importlib.import_module(f"{package}.{mod.name}")
    checks.checks.sort(key=lambda c: min(c.rules))
