"""Shared fixtures for toolchain tests: the stand-in runner and the fixture ports."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolchain_paths import HERE, PORTS  # noqa: F401  (re-exported for fixtures)

FAKE_RUNNER = "toolchain_fakesim:run_kernel"


@pytest.fixture
def fake_runner(monkeypatch):
    """Make the stand-in runner importable here and in child processes (they inherit sys.path)."""
    monkeypatch.syspath_prepend(str(HERE / "fake_sim"))
    return FAKE_RUNNER


@pytest.fixture
def axpy_port():
    return PORTS / "numpy_axpy" / "port.toml"
