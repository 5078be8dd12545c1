"""Rewrite every number of a text in another faithful format, as a paraphrasing model would
(used by the grounding property tests and by the fake server's paraphrasing behaviour)."""

from __future__ import annotations

from nki_assist.feedback.numbers import quantities


def reformat(q) -> str:
    """Another faithful way to write the quantity `q` (what a paraphrasing model does)."""
    if q.unit == "B":
        b = q.value * q.factors[0]
        return f"{b / 1024:g} KiB" if b >= 1024 and b % 1024 == 0 else f"{b:.0f} bytes"
    if q.unit == "s":
        return f"{q.value * q.factors[0] * 1e9:.6g} ns"
    if q.unit == "%":
        return f"{q.value:g} percent"
    if q.unit == "x":
        return f"{q.value:.2f}x" if q.decimals == 0 else f"{q.value:.{max(1, q.decimals - 1)}f}x"
    if q.parts:
        return q.raw
    if q.exponent:
        return f"{q.value:.10f}".rstrip("0")
    if q.value >= 1000 and q.value == int(q.value):
        return f"{int(q.value):,}" if "," not in q.raw else str(int(q.value))
    if 0 < q.value < 1 and q.decimals >= 3:
        return f"{q.value:.3g}"
    return q.raw


def rewrite(text: str) -> str:
    out, last = [], 0
    for q in quantities(text):
        out.append(text[last:q.span[0]])
        out.append(reformat(q))
        last = q.span[1]
    return "".join(out) + text[last:]
