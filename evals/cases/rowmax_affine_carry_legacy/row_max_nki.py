"""NKI port of row_max.cu (legacy neuronxcc.nki dialect): out[r] = max_j x[r, j], x fp32 [R, L].

128 rows per tile; columns in chunks of 512 (2 KiB per partition), combined into a running max.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

CHUNK = 512


@nki.jit
def row_max(x):
    R, L = x.shape
    assert R % 128 == 0 and L % CHUNK == 0
    out = nl.ndarray((R, 1), dtype=x.dtype, buffer=nl.shared_hbm)

    for t in nl.affine_range(R // 128):
        run = nl.full((128, 1), -3.0e38, dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(L // CHUNK):
            tile = nl.load(x[t * 128:(t + 1) * 128, j * CHUNK:(j + 1) * CHUNK])
            part = nl.max(tile, axis=1, keepdims=True)
            run[...] = nl.maximum(run, part)
        nl.store(out[t * 128:(t + 1) * 128, 0:1], value=run)

    return out
