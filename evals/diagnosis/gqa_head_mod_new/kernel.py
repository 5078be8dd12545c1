"""Per-head q * k products with grouped KV heads; the kv head is taken as h % KV."""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


@nki.jit
def gqa_mul(q, k):
    H, S, D = q.shape
    KV = k.shape[0]
    G = H // KV
    out = nl.ndarray((H, S, D), dtype=nl.float32, buffer=nl.shared_hbm)
    for h in range(H):
        kvh = h % KV
        qt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        kt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=qt[0:S, 0:D], src=q[h, 0:S, 0:D])
        nisa.dma_copy(dst=kt[0:S, 0:D], src=k[kvh, 0:S, 0:D])
        prod = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=prod[0:S, 0:D], data1=qt[0:S, 0:D], data2=kt[0:S, 0:D], op=nl.multiply)
        nisa.dma_copy(dst=out[h, 0:S, 0:D], src=prod[0:S, 0:D])
    return out
