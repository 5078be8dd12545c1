"""NKI port of rmsnorm.cu: y = x * rsqrt(mean(x^2) + eps) * gamma, fp32.

The CUDA launch used 64 rows per block (blockDim = 32 x 64), so the port walks the rows 64 at a time.
"""

import nki
import nki.isa as nisa
import nki.language as nl

ROWS = 64  # rows per block in the CUDA launch


@nki.jit
def rmsnorm(x, gamma, eps):
    R, D = x.shape
    assert R % ROWS == 0
    y = nl.ndarray((R, D), dtype=x.dtype, buffer=nl.shared_hbm)

    for t in range(R // ROWS):
        xt = nl.ndarray((ROWS, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * ROWS:(t + 1) * ROWS, 0:D])
        g_row = nl.ndarray((1, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=g_row, src=gamma[0:1, 0:D])

        sq = nl.ndarray((ROWS, D), dtype=nl.float32, buffer=nl.sbuf)
        ss = nl.ndarray((ROWS, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=sq, op=nl.square, data=xt, reduce_op=nl.add, reduce_res=ss)
        rstd = nl.ndarray((ROWS, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rstd, data=ss, op0=nl.multiply, operand0=1.0 / D, op1=nl.add, operand1=eps)
        nisa.activation(dst=rstd, op=nl.rsqrt, data=rstd)

        yt = nl.ndarray((ROWS, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=yt, data=xt, op0=nl.multiply, operand0=rstd)
        nisa.tensor_tensor(dst=yt, data1=yt, data2=nl.broadcast_to(g_row, (ROWS, D)), op=nl.multiply)
        nisa.dma_copy(dst=y[t * ROWS:(t + 1) * ROWS, 0:D], src=yt)

    return y
