"""Paths shared by the toolchain tests (a uniquely named module: `conftest` is ambiguous across test dirs)."""

from pathlib import Path

HERE = Path(__file__).resolve().parent
PORTS = HERE.parent / "fixtures" / "ports"
