"""NKI port of row_sum.cu (legacy neuronxcc.nki dialect): out[r] = sum_j x[r, j], x bf16 [R, L].

128 rows on the partitions; the columns are read in chunks of 1024 (2 KiB of bf16 per partition) and
each chunk's partial sum is added to a running total that lives in SBUF.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

CHUNK = 1024


@nki.jit
def row_sum(x):
    R, L = x.shape
    assert R % 128 == 0 and L % CHUNK == 0
    out = nl.ndarray((R, 1), dtype=nl.float32, buffer=nl.shared_hbm)

    for t in nl.affine_range(R // 128):
        acc = nl.zeros((128, 1), dtype=nl.bfloat16, buffer=nl.sbuf)
        for j in nl.sequential_range(L // CHUNK):
            tile = nl.load(x[t * 128:(t + 1) * 128, j * CHUNK:(j + 1) * CHUNK])
            part = nl.sum(tile, axis=1, keepdims=True, dtype=nl.bfloat16)
            acc = nl.add(acc, part, dtype=nl.bfloat16)
        nl.store(out[t * 128:(t + 1) * 128, 0:1], value=nl.copy(acc, dtype=nl.float32))

    return out
