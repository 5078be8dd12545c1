"""Helpers shared by the review tests (a uniquely named module: `conftest` is ambiguous across test dirs)."""

from __future__ import annotations

from pathlib import Path

PORTS = Path(__file__).resolve().parents[1] / "fixtures" / "ports"


def line_of(port: str, filename: str, needle: str) -> int:
    """1-based line of the first line containing `needle` (fixtures mark planted defects this way)."""
    for i, text in enumerate((PORTS / port / filename).read_text().splitlines(), 1):
        if needle in text:
            return i
    raise AssertionError(f"{needle!r} not in {port}/{filename}")
