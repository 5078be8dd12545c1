"""A CPU stand-in for the GPU launcher of `nki-assist golden`: runs the example's sgemm_bias_relu
block by block in NumPy, honouring the launch grid (a grid too small leaves C's tail unwritten, as on
a GPU). `JITTER` perturbs every second launch like float atomics would (run-to-run spread)."""

from __future__ import annotations

import numpy as np

TILE = 64
JITTER = 0.0


class CpuLauncher:
    name = "cpu-stand-in"
    launches = 0

    def device(self):
        return {"name": "CPU stand-in", "compute_capability": "0.0", "driver": "0.0", "cuda": "0.0"}

    def arch(self):
        return "sm_80"

    def load(self, compiled, kernel):
        assert kernel == "sgemm_bias_relu", kernel
        return kernel

    def launch(self, handle, plan, args):
        A, B, bias, C, M, N, K = args
        assert A.flags.c_contiguous and A.dtype == np.float32 and A.shape == (int(M), int(K))
        assert B.shape == (int(K), int(N)) and C.shape == (int(M), int(N))
        assert plan.block[:2] == (16, 16)
        full = np.maximum(A.astype(np.float64) @ B.astype(np.float64) + bias.reshape(-1), 0.0).astype(np.float32)
        CpuLauncher.launches += 1
        if JITTER and CpuLauncher.launches % 2 == 0:
            full = (full * np.float32(1 + JITTER)).astype(np.float32)
        out = C.copy()
        gx, gy, _ = plan.grid
        for by in range(gy):
            for bx in range(gx):
                rs, cs = slice(by * TILE, min((by + 1) * TILE, int(M))), slice(bx * TILE, min((bx + 1) * TILE, int(N)))
                out[rs, cs] = full[rs, cs]
        return [out]


def make():
    return CpuLauncher()
