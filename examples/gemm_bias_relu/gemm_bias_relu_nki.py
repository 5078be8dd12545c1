"""NKI port of sgemm_bias_relu.cu: out[M, N] = relu(lhsT.T @ rhs + bias).

A first port: correct on shapes that divide the tiles, but it keeps the CUDA kernel's 64-wide K
tile, walks the N/M tiles outside the K loop so every operand tile is reloaded from HBM for each
output tile, and has no tail handling for N (or M) that is not a multiple of the tile.
Inputs: lhsT [K, M] (A transposed on the host, bf16), rhs [K, N] (bf16), bias [1, N] (fp32).
"""

import nki
import nki.isa as nisa
import nki.language as nl

TILE_M = 128  # output rows per tile = stationary free size (nc_matmul limit)
TILE_N = 512  # output columns per tile = one fp32 PSUM bank
TILE_K = 64  # contraction per matmul, kept from the CUDA shared-memory tile


@nki.jit
def gemm_bias_relu(lhsT, rhs, bias):
    K, M = lhsT.shape
    K_, N = rhs.shape
    assert K == K_, "lhsT and rhs must share the contraction dimension"

    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)

    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)

            for k in nl.affine_range(K // TILE_K):
                lhsT_tile = nl.ndarray((TILE_K, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=lhsT_tile,
                              src=lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
                rhs_tile = nl.ndarray((TILE_K, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=rhs_tile,
                              src=rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                nisa.nc_matmul(dst=acc, stationary=lhsT_tile, moving=rhs_tile)

            # Epilogue: bias row broadcast over the 128 output partitions, add, ReLU.
            bias_row = nl.ndarray((1, TILE_N), dtype=bias.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=bias_row, src=bias[0:1, n * TILE_N:(n + 1) * TILE_N])
            bias_tile = nl.broadcast_to(bias_row, (TILE_M, TILE_N))

            biased = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=biased, data1=acc, data2=bias_tile, op=nl.add)
            result = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=result, op=nl.relu, data=biased)

            nisa.dma_copy(dst=out[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], src=result)

    return out
