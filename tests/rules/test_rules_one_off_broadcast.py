"""NKI301/NKI302 on a K=1 ones-matmul: a one-off partition broadcast outside every loop is info; the same
matmul inside a loop is still a warning."""

from __future__ import annotations

from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki.run import run_nki_rules

SRC = '''import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(x, w):
    out = nl.ndarray((256, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    w_row = nl.ndarray((1, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_row, src=w[0:1, 0:512])
    ones = nl.ndarray((1, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=ones, value=1.0)
    w_psum = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
LOOP    nisa.nc_matmul(dst=w_psum, stationary=ones, moving=w_row)
    w_all = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=w_all, src=w_psum)
    for t in range(2):
        xt = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * 128:(t + 1) * 128, 0:512])
        nisa.tensor_tensor(dst=xt, data1=xt, data2=w_all, op=nl.multiply)
        nisa.dma_copy(dst=out[t * 128:(t + 1) * 128, 0:512], src=xt)
    return out
'''


def _sev(src):
    fs = run_nki_rules(parse_nki(src, "k.py"), get_target("trn2"))
    return {f.rule: (f.severity.value, f.line, f.evidence.get("one_off")) for f in fs if f.rule in ("NKI301", "NKI302")}


def test_one_off_broadcast_matmul_is_info():
    got = _sev(SRC.replace("LOOP", ""))
    assert got == {"NKI301": ("info", 14, True), "NKI302": ("info", 14, True)}


def test_broadcast_matmul_inside_a_loop_is_not_one_off():
    src = SRC.replace("LOOP", "    for rep in range(4):\n    ")
    got = _sev(src)
    assert got == {"NKI301": ("info", 15, False), "NKI302": ("info", 15, False)}
