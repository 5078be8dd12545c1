"""Idioms of AWS's production kernels (nki-library) that are correct and must not draw a warning, written
here in our own words: a PE broadcast of a bias row through a ones tile, an integer control value fetched
per step next to the same fetch of float data."""

from __future__ import annotations

from nki_assist.findings import Severity
from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki.run import run_nki_rules

HEAD = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n"


def _rules(src: str, rule: str):
    return [f for f in run_nki_rules(parse_nki(HEAD + src, "k.py"), get_target("trn2")) if f.rule == rule]


BROADCAST = """
@nki.jit
def bias_broadcast(bias, H: int):
    out = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.shared_hbm)
    bias_sb = nl.ndarray((1, 2048), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=bias_sb, src=bias)
    ones_sb = nl.ndarray((1, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.memset(dst=ones_sb, value=1.0)
    full = nl.ndarray((128, 2048), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        ps = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=ones_sb, moving=bias_sb[:, i * 512:(i + 1) * 512],
                       is_stationary_onezero=True)
        nisa.tensor_copy(dst=full[:, i * 512:(i + 1) * 512], src=ps)
    nisa.dma_copy(dst=out, src=full)
    return out
"""


def test_a_ones_tile_broadcast_in_a_loop_is_advice():
    found = _rules(BROADCAST, "NKI301")
    assert [(f.severity, f.evidence["K"]) for f in found] == [(Severity.INFO, 1)]
    assert "is_stationary_onezero" in found[0].message
    plain = _rules(BROADCAST.replace(",\n                       is_stationary_onezero=True", ""), "NKI301")
    # without the flag: a K=1 matmul in a loop, no broadcast note (info like every static performance finding)
    assert [f.severity for f in plain] == [Severity.INFO] and "is_stationary_onezero" not in plain[0].message
