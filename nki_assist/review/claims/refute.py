"""A claim that a numerics finding names as the cause of a failure is confirmed only when the run's own numbers
support it. These read the numbers a claim check left in the finding's evidence and return the refuting
statement (with the number) or None; `reconcile._link_causes` then demotes the claim instead of confirming it."""

from __future__ import annotations

from ...findings import Finding


def _g(x: float) -> str:
    return f"{x:.1f}" if abs(x) < 1e4 else f"{x:.3g}"


def exp_margin(f: Finding) -> tuple[str, list[str]] | None:
    """NKI402 named as the cause while its argument stayed below the overflow on every size that ran (and a
    running sum's projection to 2x stays below it too): the margin refutes it."""
    rows = f.evidence.get("run_range")
    if f.rule != "NKI402" or not isinstance(rows, dict) or not rows:
        return None
    rec = (f.evidence.get("reconciled") or {}).get("status")
    if rec in ("confirmed", "overflows-at-2x"):
        return None
    measured = {k: r for k, r in rows.items() if not k.startswith("2x:")}
    if not measured or any(r.get("max_arg") is None or r.get("nonfinite_args") for r in measured.values()):
        return None  # no finite argument, or NaN/Inf arriving: the margin says nothing about this exp
    if any((r.get("margin_out_dtype") or 0) <= 0 for r in measured.values()):
        return None
    parts = [f"on size `{s}` its argument reached {_g(r['max_arg'])}, {_g(r['margin_out_dtype'])} below the "
             f"{_g(r['max_arg'] + r['margin_out_dtype'])} overflow of {r.get('out_dtype') or 'float32'}"
             for s, r in measured.items()]
    text = "; ".join(parts) + ": no exp overflowed, so the failure has another cause"
    return text, list(measured)


REFUTERS = (exp_margin,)


def refuted_cause(f: Finding) -> tuple[str, list[str]] | None:
    for refuter in REFUTERS:
        hit = refuter(f)
        if hit is not None:
            return hit
    return None

