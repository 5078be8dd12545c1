"""Hand-built Reviews that look like the pipeline's: realistic findings of several rules/categories."""

from __future__ import annotations

from nki_assist.findings import Finding, RelatedLocation, prioritize
from nki_assist.schema import Numerics, Performance, PortInfo, Review

NKI = "kernels/gemm_bias_relu_nki.py"
CUDA = "kernels/sgemm_bias_relu.cu"

NKI_SOURCE = '''\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

BN = 1024  # block of N columns per PSUM accumulator


@nki.jit
def gemm_bias_relu(lhsT, rhs, bias):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    for n in nl.affine_range(N // BN):
        acc_sb = nl.zeros((128, BN), dtype=nl.bfloat16, buffer=nl.sbuf)
        acc = nl.zeros((128, BN), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(K // 128):
            a = nl.load(lhsT[k * 128:(k + 1) * 128, 0:128])
            b = nl.load(rhs[k * 128:(k + 1) * 128, n * BN:(n + 1) * BN])
            acc += nl.matmul(a, b, transpose_x=True)
        res = nl.copy(acc, dtype=nl.bfloat16)
        nl.store(out[0:128, n * BN:(n + 1) * BN], value=res)
    return out
'''

CUDA_SOURCE = '''\
__global__ void sgemm_bias_relu(const float* A, const float* B, const float* bias, float* C,
                                int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        acc += bias[col];
        C[row * N + col] = acc > 0.0f ? acc : 0.0f;
    }
}
'''


def f(**kw) -> Finding:
    kw.setdefault("file", NKI)
    return Finding(**kw)


def realistic_findings() -> list[Finding]:
    """psum-bank-overflow + matmul-tile-limit from one constant, missing epilogue, small DMA,
    low-precision accumulation, info accumulation order (unordered; ids assigned by prioritize)."""
    return [
        f(rule="PERF101", name="dma-below-2kib", category="small-dma", severity="warning",
          source="cost-model", line=16,
          message="nl.load of lhsT moves 256 B per partition per transfer (minimum efficient 2048 B).",
          evidence={"bytes_per_partition": 256, "transfers": 64, "dma_time_us": 83.2},
          fix="Load the whole [128, 512] lhsT block once per k-tile outside the n loop.",
          est_speedup=1.8),
        f(rule="NKI203", name="psum-tile-exceeds-bank", category="psum-bank-overflow", severity="error",
          line=14,
          message="PSUM tile [128, 1024] float32 needs 4096 B per partition; a PSUM bank holds 2048 B.",
          evidence={"bytes_per_partition": 4096, "bank_bytes": 2048, "shape": [128, 1024], "constant": "BN"},
          fix="Split the N dimension into 512-wide blocks, one PSUM bank each."),
        f(rule="NKI210", name="matmul-moving-too-wide", category="matmul-tile-limit", severity="error",
          line=18,
          message="nl.matmul moving free size 1024 exceeds gemm_moving_fmax 512 on trn2.",
          evidence={"moving_free": 1024, "limit": 512, "constant": "BN"}),
        f(rule="MIG102", name="epilogue-dropped", category="missing-epilogue", severity="warning",
          source="migration", line=19,
          message="CUDA adds bias[col] and applies ReLU before the store; the port stores the raw accumulator.",
          evidence={"cuda_ops": ["bias-add", "relu"], "nki_ops": []},
          related=[RelatedLocation(file=CUDA, line=8, message="bias add and ReLU")]),
        f(rule="NUM103", name="bf16-partial-sums", category="low-precision-accumulation", severity="warning",
          source="numerics", line=13,
          message="acc_sb accumulates partial sums in bfloat16; relative error grows from 0.004 at K=256 to 0.031 at K=4096.",
          evidence={"rel_err": {"256": 0.004, "4096": 0.031}, "dtype": "bfloat16", "growth_exponent": 0.74}),
        f(rule="NUM110", name="reduction-order-differs", category="accumulation-order", severity="info",
          source="numerics", line=18,
          message="Sequential PSUM accumulation differs from the CUDA per-thread loop at rounding level (max ulp 2).",
          evidence={"max_ulp": 2}),
    ]


def review(findings: list[Finding] | None = None, *, numerics: bool = True, perf: bool = True,
           target: str = "trn2") -> Review:
    fs = prioritize(realistic_findings() if findings is None else findings)
    return Review(
        port=PortInfo(name="gemm_bias_relu", target=target, cuda=CUDA, nki=NKI),
        findings=fs,
        numerics=Numerics(sizes=[{"name": "aligned", "M": 128, "K": 256, "N": 1024}],
                          scenarios=["normal", "large-magnitude"],
                          matrix=[{"size": "aligned", "scenario": "normal", "max_abs_err": 0.031,
                                   "within_tolerance": False}]) if numerics else None,
        performance=Performance(estimated_time_us=812.5, bottleneck="dma-overhead",
                                mfu_estimated_percent=23.1, hbm_read_bytes=4194304,
                                hbm_write_bytes=262144) if perf else None,
        notes=[] if numerics else ["numerics: no port spec, kernel not run"],
    )


def sources() -> dict[str, str]:
    return {NKI: NKI_SOURCE, CUDA: CUDA_SOURCE}
