"""NKI port of row_logsumexp.cu (legacy neuronxcc.nki dialect): lse[r] = log(sum(exp(x[r]))).

Rows go on the partitions: full 128-row tiles in an affine loop, then one statically sized tile for
the R % 128 leftover rows. Each tile takes exp on ScalarE, sums along the free axis and takes the log.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

P = 128


@nki.jit
def row_logsumexp(x):
    R, C = x.shape
    lse = nl.ndarray((R, 1), dtype=nl.float32, buffer=nl.shared_hbm)

    i_f = nl.arange(C)[None, :]
    i_1 = nl.arange(1)[None, :]
    i_p = nl.arange(P)[:, None]

    for t in nl.affine_range(R // P):
        xt = nl.load(x[t * P + i_p, i_f])
        s = nl.sum(nl.exp(xt), axis=1, keepdims=True)
        nl.store(lse[t * P + i_p, i_1], value=nl.log(s))

    rem = R % P
    if rem > 0:
        r0 = R - rem
        i_t = nl.arange(rem)[:, None]
        xt = nl.load(x[r0 + i_t, i_f])
        s = nl.sum(nl.exp(xt), axis=1, keepdims=True)
        nl.store(lse[r0 + i_t, i_1], value=nl.log(s))

    return lse
