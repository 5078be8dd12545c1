"""NKI port of layernorm.cu: y = (x - mean) * rsqrt(var + eps) * gamma + beta, rows on partitions.

The variance is computed in one pass as E[x^2] - E[x]^2 from two free-axis sums.
"""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


@nki.jit
def layernorm(x, gamma, beta, eps):
    R, D = x.shape
    assert R % P == 0
    y = nl.ndarray((R, D), dtype=x.dtype, buffer=nl.shared_hbm)

    g_row = nl.ndarray((1, D), dtype=nl.float32, buffer=nl.sbuf)
    b_row = nl.ndarray((1, D), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=g_row, src=gamma[0:1, 0:D])
    nisa.dma_copy(dst=b_row, src=beta[0:1, 0:D])
    g_all = nl.broadcast_to(g_row, (P, D))
    b_all = nl.broadcast_to(b_row, (P, D))

    for t in range(R // P):
        xt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * P:(t + 1) * P, 0:D])

        s1 = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=s1, op=nl.add, data=xt, axis=1)
        sq = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        s2 = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(dst=sq, op=nl.square, data=xt, reduce_op=nl.add, reduce_res=s2)

        mean = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=mean, data=s1, op0=nl.multiply, operand0=1.0 / D)
        ex2 = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=ex2, data=s2, op0=nl.multiply, operand0=1.0 / D)
        mean_sq = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=mean_sq, data1=mean, data2=mean, op=nl.multiply)
        var = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=var, data1=ex2, data2=mean_sq, op=nl.subtract)

        rstd = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=rstd, data=var, op0=nl.add, operand0=eps)
        nisa.activation(dst=rstd, op=nl.rsqrt, data=rstd)

        xc = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=xc, data=xt, op0=nl.subtract, operand0=mean, op1=nl.multiply, operand1=rstd)
        yt = nl.ndarray((P, D), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=yt, data1=xc, data2=g_all, op=nl.multiply)
        nisa.tensor_tensor(dst=yt, data1=yt, data2=b_all, op=nl.add)
        nisa.dma_copy(dst=y[t * P:(t + 1) * P, 0:D], src=yt)

    return y
