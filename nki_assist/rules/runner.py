"""One way to register and run checks, for every family (NKI, CUDA, migration, cost model).

A check is a function decorated with its family's `register(*rule_ids)`; the family runs its checks in
registration order, and a check that raises becomes one internal-error finding (built by the family's
`on_crash`) while the other checks still report.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ..findings import Finding

log = logging.getLogger(__name__)

CheckResult = Iterable[Finding] | Finding | None


@dataclass(frozen=True)
class Check:
    rules: tuple[str, ...]  # the rule ids the check can report (the first names it in crash findings)
    fn: Callable[..., CheckResult]

    @property
    def name(self) -> str:
        return getattr(self.fn, "__name__", repr(self.fn))


class CheckSet:
    """The registered checks of one family."""

    def __init__(self, family: str):
        self.family = family
        self.checks: list[Check] = []

    def register(self, *rule_ids: str) -> Callable[[Callable], Callable]:
        def deco(fn: Callable) -> Callable:
            self.checks.append(Check(tuple(rule_ids), fn))
            return fn

        return deco

    def rule_ids(self) -> set[str]:
        return {r for c in self.checks for r in c.rules}

    def run(self, *args: Any, on_crash: Callable[[Check, Exception], Finding | None]) -> list[Finding]:
        out: list[Finding] = []
        for check in self.checks:
            try:
                result = check.fn(*args)
                # A generator check raises while it is consumed: consume it here, inside the isolation.
                found = [result] if isinstance(result, Finding) else list(result or ())
            except Exception as exc:  # one broken check must not lose the others' findings
                log.warning("%s check %s crashed: %r", self.family, check.name, exc)
                crash = on_crash(check, exc)
                if crash is not None:
                    out.append(crash)
                continue
            out.extend(found)
        return out


def crash_message(check: Check, exc: Exception) -> str:
    return (f"Internal error in check {check.name} ({', '.join(check.rules)}; {type(exc).__name__}: {exc}); its "
            "findings are missing, the other checks ran.")
