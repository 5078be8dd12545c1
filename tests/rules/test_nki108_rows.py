"""NKI108 on a single-row DMA says what the row is: an output row stored, or a bias/scale row loaded (issue 29)."""

from __future__ import annotations

from nki_assist.check import CheckOptions, check_source

SRC = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def col_sums(x, b):
    R, N = x.shape
    out = nl.ndarray((1, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for n in nl.affine_range(N // 512):
        bias = nl.load(b[0:1, n * 512:(n + 1) * 512])
        t = nl.load(x[0:128, n * 512:(n + 1) * 512])
        s = nl.add(nl.copy(t[0:1, 0:512]), bias)
        nl.store(out[0:1, n * 512:(n + 1) * 512], value=s)
    return out
"""


def test_a_stored_output_row_is_not_called_a_bias_row():
    by_line = {f.line: f for f in check_source("k.py", SRC, CheckOptions(select=["NKI108"]))}
    store, bias = by_line.get(13), by_line.get(10)
    assert store is not None and "writes a single output row per DMA" in store.message
    assert "bias or scale row" not in store.message
    assert bias is not None and "a bias or scale row to broadcast" in bias.message
