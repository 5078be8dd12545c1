"""NKI port of colmax.cu (new `import nki` dialect): max pooling over the sequence, out[d] = max_s x[s, d].

Tokens go on the partitions, 128 per tile; each tile's max over its tokens is folded into a running
[1, D] max, the CUDA thread's loop over rows done a tile at a time.
"""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128  # tokens per tile


@nki.jit
def colmax(x):
    S, D = x.shape
    assert S % P == 0 and D <= 512
    out = nl.ndarray((1, D), dtype=nl.float32, buffer=nl.shared_hbm)
    run = nl.ndarray((1, D), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=run, value=-3.0e38)
    for t in range(S // P):
        xt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * P:(t + 1) * P, 0:D])
        tmax = nl.ndarray((1, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=tmax, op=nl.maximum, data=xt, axis=0, keepdims=True)
        nisa.tensor_tensor(dst=run, data1=run, data2=tmax, op=nl.maximum)
    nisa.dma_copy(dst=out[0:1, 0:D], src=run)
    return out
