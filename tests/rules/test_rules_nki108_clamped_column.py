"""NKI108: a per-row statistic stored from a tail-clamped tile ([min(128, R - 128*t), 1]) is the same
one-value-per-partition column as a full [128, 1] tile: advice (info), not a warning."""

from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki.run import run_nki_rules

SRC = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def row_sum(x):
    R, C = x.shape
    out = nl.ndarray((R, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    for t in range((R + 127) // 128):
        rows = min(128, R - t * 128)
        xt = nl.ndarray((128, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[0:rows, 0:C], src=x[t * 128:t * 128 + rows, 0:C])
        s = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=s[0:rows, 0:1], op=nl.add, data=xt[0:rows, 0:C], axis=1)
        nisa.dma_copy(dst=out[t * 128:t * 128 + rows, 0:1], src=s[0:rows, 0:1])
    return out
"""


def test_clamped_column_store_is_info_with_the_column_advice():
    fs = [f for f in run_nki_rules(parse_nki(SRC, "k_nki.py"), get_target("trn2")) if f.rule == "NKI108"]
    (f,) = [f for f in fs if f.line == 16]
    assert f.severity.value == "info" and f.evidence["column_vector"] is True
    assert "one value per partition per tile" in f.message


def test_a_narrow_clamped_tile_that_is_not_a_column_is_still_reported():
    src = SRC.replace("out[t * 128:t * 128 + rows, 0:1], src=s[0:rows, 0:1]",
                      "out[t * 128:t * 128 + rows, 0:1], src=s[0:rows, 0:1])\n        nisa.dma_copy(dst=x[t * 128:t * "
                      "128 + rows, 0:64], src=xt[0:rows, 0:64]")
    fs = [f for f in run_nki_rules(parse_nki(src, "k_nki.py"), get_target("trn2")) if f.rule == "NKI108"]
    # reported (info: the severity policy makes static performance findings info), without the column note
    assert any(f.line == 17 and f.severity.value == "info" and "one value per partition" not in f.message for f in fs)
