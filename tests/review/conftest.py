"""One review per port fixture, shared by every test (reviews spawn child processes and take seconds)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from nki_assist.review import ReviewOptions, review_port

PORTS = Path(__file__).resolve().parents[1] / "fixtures" / "ports"
NAMES = ["rev_gemm_nobias", "rev_gemm_offset", "rev_bias_ragged", "rev_softmax_nomax", "rev_variance_bf16",
         "rev_rowsum_bf16", "rev_rowsum_fp32"]


@pytest.fixture(scope="session")
def reviews():
    def one(name):
        return name, review_port(str(PORTS / name / "port.toml"), ReviewOptions(plots=False))

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, NAMES))


def line_of(port: str, filename: str, needle: str) -> int:
    """1-based line of the first line containing `needle` (fixtures mark planted defects this way)."""
    for i, text in enumerate((PORTS / port / filename).read_text().splitlines(), 1):
        if needle in text:
            return i
    raise AssertionError(f"{needle!r} not in {port}/{filename}")
