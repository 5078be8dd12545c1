"""NKI108 on a Tensor Engine operand tile is advice (info); on other small DMAs it stays a warning."""

from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki.run import run_nki_rules

KERNEL = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def gemm(lhsT, rhs, scale):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for n in range(N // 512):
        ps = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        for k in range(K // 128):
            st = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.dma_copy(dst=st, src=lhsT[k * 128:(k + 1) * 128, 0:128])
            mv = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.dma_copy(dst=mv, src=rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
            nisa.nc_matmul(dst=ps, stationary=st, moving=mv)
        sc = nl.ndarray((64, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=sc, src=scale[0:64, n * 512:(n + 1) * 512])
        res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=ps)
        nisa.dma_copy(dst=out[0:128, n * 512:(n + 1) * 512], src=res)
    return out
"""


def test_operand_tile_is_advice_other_small_dma_is_not():
    fs = [f for f in run_nki_rules(parse_nki(KERNEL, "g_nki.py"), get_target("trn2")) if f.rule == "NKI108"]
    lines = KERNEL.splitlines()
    by_line = {lines[f.line - 1].strip().split("(")[1].split(",")[0]: f for f in fs}
    assert by_line["dst=st"].severity.value == "info" and by_line["dst=st"].evidence["matmul_operand_tile"]
    assert "one Tensor Engine operand tile" in by_line["dst=st"].message
    sc = by_line["dst=sc"]  # 64 partitions: a real small DMA (info: static performance findings are info)
    assert sc.severity.value == "info" and not sc.evidence.get("matmul_operand_tile")
    assert "one Tensor Engine operand tile" not in sc.message
