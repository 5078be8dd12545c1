"""Numbers and line references in prose, normalised so a faithful quote or paraphrase of a finding matches.

A reply may write a finding's number the way the finding does ("4,096 B", "2.31x", "26.9%") or the way a
careful reviewer would restate it: other units (`2 KiB` for 2,048 B, `1300 ns` for 1.3 us), a fraction
as a percentage (0.454 -> 45.4%), a factor with more or fewer decimals (449x, 449.00x, 2.3x for 2.31),
scientific notation (6.5e-05 = 0.000065), rounding to the precision shown (at least two significant
digits: 83 for 83.2, never 3 for 3.4). `Grounded` is the set of values a text may state and answers
whether one written quantity matches any of them. Structural tokens are not numbers: ordinals (2nd),
dimensionality (2-D, 3D) and list enumerators at the start of a line ("1. ", "2) ").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Iterable

# Unit suffix -> (kind, factor to the base unit: seconds, bytes, percent, factor).
_UNITS: dict[str, tuple[str, tuple[float, ...]]] = {
    "ns": ("s", (1e-9,)), "nanoseconds": ("s", (1e-9,)), "nanosecond": ("s", (1e-9,)),
    "us": ("s", (1e-6,)), "µs": ("s", (1e-6,)), "μs": ("s", (1e-6,)),
    "microseconds": ("s", (1e-6,)), "microsecond": ("s", (1e-6,)),
    "ms": ("s", (1e-3,)), "milliseconds": ("s", (1e-3,)), "millisecond": ("s", (1e-3,)),
    "s": ("s", (1.0,)), "seconds": ("s", (1.0,)), "second": ("s", (1.0,)),
    "B": ("B", (1.0,)), "bytes": ("B", (1.0,)), "byte": ("B", (1.0,)),
    "KiB": ("B", (1024.0,)), "MiB": ("B", (1024.0**2,)), "GiB": ("B", (1024.0**3,)),
    # KB/MB are written for both conventions; either reading counts.
    "KB": ("B", (1000.0, 1024.0)), "kB": ("B", (1000.0, 1024.0)),
    "MB": ("B", (1e6, 1024.0**2)), "GB": ("B", (1e9, 1024.0**3)),
    "%": ("%", (1.0,)), "percent": ("%", (1.0,)),
    "x": ("x", (1.0,)), "×": ("x", (1.0,)),
}
_UNIT_ALT = "|".join(sorted((re.escape(u) for u in _UNITS if u not in ("%", "x", "×")), key=len, reverse=True))

_NUMBER = re.compile(
    r"(?:(?<![A-Za-z0-9_.])|(?<=\d[x×]))"  # not inside an identifier (fp32, F3, trn2); 128x128 is two numbers
    r"(?P<sign>[-+−]?)"
    r"(?P<num>(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\.\d+)"
    r"(?:[eE](?P<exp>[-+]?\d+))?"
    r"(?P<unit>\s?%|[x×](?![A-Za-z0-9])|\s?(?:" + _UNIT_ALT + r")(?![A-Za-z0-9_]))?"
)
# "1. Hoist ..." / "2) Block ..." at the start of a line: list numbering, not a claim.
_ENUMERATOR = re.compile(r"(?:^|\n)[ \t]*\(?(\d{1,2})[.)](?=\s)")

_LINE_REFS = (
    # "lines 20, 22 and 24", "lines 24-30"
    re.compile(r"\blines\s+(\d+(?:\s*(?:,|-|–|to|through|and|or|,\s*and)\s*\d+)*)", re.IGNORECASE),
    # "line 42", "line 24-30", "line 24 to 30"
    re.compile(r"\bline\s+(\d+(?:\s*(?:-|–|to|through)\s*\d+)?)", re.IGNORECASE),
    re.compile(r"\.(?:py|cu|cuh|h|hpp):(\d+(?:-\d+)?)"),
    re.compile(r"(?<![A-Za-z0-9_])L(\d+(?:-L?\d+)?)\b"),
)
_INT = re.compile(r"\d+")


@dataclass(frozen=True)
class Quantity:
    """A number as written: `value` in the unit written (`unit` kind: s, B, %, x or None)."""

    raw: str
    value: float
    decimals: int  # digits shown after the point (of the mantissa, for scientific notation)
    exponent: int  # 10**exponent of scientific notation, else 0
    unit: str | None
    factors: tuple[float, ...]  # value * factor = base unit (seconds, bytes)
    parts: tuple[float, ...] = ()  # "128,128": also readable as the list 128, 128
    span: tuple[int, int] = (0, 0)  # where `raw` (number and unit) is in the text

    @property
    def significant(self) -> int:
        digits = self.raw_digits.lstrip("0")
        return max(len(digits), 1)

    @property
    def raw_digits(self) -> str:
        m = re.match(r"[-+−]?([\d,]*\.?\d*)", self.raw.strip())
        return (m.group(1) if m else "").replace(",", "").replace(".", "")


def quantities(text: str) -> list[Quantity]:
    """Every number in `text` with its unit, skipping identifiers, ordinals, 2-D and list enumerators."""
    skip = {m.start(1) for m in _ENUMERATOR.finditer(text)}
    out: list[Quantity] = []
    for m in _NUMBER.finditer(text):
        end = m.end()
        if m.group("unit") is None and end < len(text):
            nxt = text[end]
            if nxt.isalpha() and nxt not in "x×" or nxt == "_":
                continue  # 2nd, 3D, 8bit, 4th: not a quantity
            if nxt in "x×" and not text[end + 1:end + 2].isdigit():
                continue
            if text[end:end + 2] in ("-D", "-d") and not text[end + 2:end + 3].isalpha():
                continue  # 2-D, 3-d
        if m.start("num") in skip:
            continue
        num = m.group("num")
        decimals = len(num.split(".")[1]) if "." in num else 0
        exponent = int(m.group("exp")) if m.group("exp") else 0
        mantissa = float(num.replace(",", ""))
        unit_raw = (m.group("unit") or "").strip()
        kind, factors = _UNITS.get(unit_raw, (None, (1.0,)))
        parts: tuple[float, ...] = ()
        listed = text[m.start() - 1:m.start()] in ("[", "(") or text[end:end + 1] in ("]", ")")
        if "," in num and "." not in num and listed:  # [128,512]: a list, not 128,512
            parts = tuple(float(p) for p in num.split(","))
        out.append(Quantity(raw=m.group(0).strip(), value=abs(mantissa * 10.0**exponent), decimals=decimals,
                            exponent=exponent, unit=kind, factors=factors, parts=parts, span=(m.start(), end)))
    return out


def line_refs(text: str) -> list[int]:
    """Line numbers a text points at ("line 42", "lines 20, 22", "file.py:42", "L42"); ranges by their ends."""
    refs: list[int] = []
    for pat in _LINE_REFS:
        for m in pat.finditer(text):
            refs.extend(int(n) for n in _INT.findall(m.group(1)))
    return refs


def _unit_from_key(key: str) -> tuple[str, float] | None:
    """The unit an evidence key's name gives its number (dma_time_us -> 1e-6 s)."""
    k = key.lower()
    for suffix, unit in (("_ns", ("s", 1e-9)), ("_us", ("s", 1e-6)), ("_ms", ("s", 1e-3)),
                         ("_s", ("s", 1.0)), ("_seconds", ("s", 1.0))):
        if k.endswith(suffix):
            return unit
    if "bytes" in k or k.endswith("_b"):
        return ("B", 1.0)
    if "percent" in k:
        return ("%", 1.0)
    if "speedup" in k:
        return ("x", 1.0)
    return None


class Grounded:
    """The values a text may state, by kind: plain numbers as written, and base-unit values (s, B)."""

    ALWAYS = frozenset({0.0, 1.0})

    def __init__(self) -> None:
        self.plain: set[float] = set()  # every value as written
        self.bare: set[float] = set()  # values with no time or size unit (a reply may add one: 640 -> 640 B)
        self.base: dict[str, set[float]] = {"s": set(), "B": set()}
        self.factors: set[float] = set()  # "x" values: also quotable as "(f - 1) * 100 % faster"
        self.percents: set[float] = set()  # stated percentages: "25% used" may be quoted as "75% idle"

    def copy(self) -> "Grounded":
        g = Grounded()
        g.update(self)
        return g

    def update(self, other: "Grounded") -> None:
        self.plain |= other.plain
        self.bare |= other.bare
        self.factors |= other.factors
        self.percents |= other.percents
        for k, v in other.base.items():
            self.base[k] |= v

    # -- collecting ---------------------------------------------------------------------------
    def add_number(self, x: float, unit: tuple[str, float] | None = None) -> None:
        if isinstance(x, bool) or not math.isfinite(x):
            return
        x = abs(float(x))
        self.plain.add(x)
        kind, factor = unit or (None, 1.0)
        if kind in self.base:
            self.base[kind].add(x * factor)
            return
        self.bare.add(x)
        if kind == "x":
            self.factors.add(x)
        elif kind == "%":
            self.percents.add(x)

    def add_text(self, text: str) -> None:
        for q in quantities(text):
            self.plain.add(q.value)
            self.plain.update(q.parts)
            if q.unit in self.base:
                self.base[q.unit].update(q.value * f for f in q.factors)
                continue
            self.bare.add(q.value)
            self.bare.update(q.parts)
            if q.unit == "x":
                self.factors.add(q.value)
            elif q.unit == "%":
                self.percents.add(q.value)

    def add(self, value: Any, key: str = "") -> None:
        """Numbers anywhere in a JSON-like value: numbers (unit from the key name), strings, dict keys."""
        if value is None or isinstance(value, bool):
            return
        if isinstance(value, (int, float)):
            self.add_number(value, _unit_from_key(key))
        elif isinstance(value, str):
            self.add_text(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                self.add_text(str(k))
                self.add(v, str(k))
        elif isinstance(value, (list, tuple, set)):
            for v in value:
                self.add(v, key)

    # -- matching -----------------------------------------------------------------------------
    def __contains__(self, q: Quantity) -> bool:
        if q.unit is None and q.value in self.ALWAYS:
            return True
        if self._matches(q):
            return True
        return bool(q.parts) and all(p in self.ALWAYS or _close_any(p, self.plain) for p in q.parts)

    def _matches(self, q: Quantity) -> bool:
        if q.unit in self.base:  # 2 KiB = 2,048 B; 1300 ns = 1.3 us; never 83 ms for 83.2 us
            return _any_shown(q, self.bare) or any(_any_shown(q, {b / f for b in self.base[q.unit]})
                                                   for f in q.factors)
        if _any_shown(q, self.plain):
            return True
        if q.unit == "%":  # 45.4% of a 0.454 fraction; "80% faster" for 1.8x; "75% idle" for 25% used
            return (_any_shown(q, {p * 100 for p in self.plain})
                    or _any_shown(q, {(f - 1) * 100 for f in self.factors if f > 1})
                    or _any_shown(q, {100 - p for p in self.percents if 0 <= p <= 100}))
        return False


def _close_any(x: float, values: Iterable[float]) -> bool:
    return any(abs(x - v) <= 1e-9 * max(1.0, abs(v)) for v in values)


def _any_shown(q: Quantity, values: set[float]) -> bool:
    """`q` equals one of `values`, or is one of them rounded to the precision `q` shows (>= 2 digits)."""
    if _close_any(q.value, values):
        return True
    if q.significant < 2:
        return False
    unit = 10.0 ** (q.exponent - q.decimals)  # one step in the last digit shown
    half = unit / 2 * (1 + 1e-9)
    return any(abs(v - q.value) <= half for v in values)
