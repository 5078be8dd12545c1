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
