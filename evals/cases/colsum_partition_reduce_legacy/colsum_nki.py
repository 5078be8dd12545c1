"""NKI port of colsum.cu (legacy neuronxcc.nki dialect): column sums of an [R, N] matrix.

Rows go on partitions 128 at a time; the CUDA block's tree reduction becomes one reduction over the rows of
each tile, accumulated across row tiles in an fp32 SBUF tile.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def colsum(a):
    R, N = a.shape
    assert R % 128 == 0 and N <= 512
    out = nl.ndarray((1, N), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((1, N), dtype=nl.float32, buffer=nl.sbuf)
    for r in nl.sequential_range(R // 128):
        t = nl.load(a[r * 128:(r + 1) * 128, 0:N])
        acc[...] = nl.add(acc, nl.sum(t, axis=0, keepdims=True))
    nl.store(out[0:1, 0:N], value=acc)
    return out
