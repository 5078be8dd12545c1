"""Facts the CUDA front end extracts from the sample kernels in tests/fixtures/cuda."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nki_assist.parse.cuda import parse_cuda
from nki_assist.parse.cuda_consts import FunctionMacro, fold
from nki_assist.parse.cuda_model import canonical_dtype

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "cuda"


def load(name: str):
    path = FIX / name
    return parse_cuda(path.read_text(encoding="utf-8"), str(path))


@pytest.fixture(scope="module")
def gemm():
    return load("gemm_bias_relu.cu")


def test_gemm_kernel_signature(gemm):
    assert [k.name for k in gemm.kernels] == ["gemm_bias_relu"]
    k = gemm.kernels[0]
    assert (k.qualifier, k.line, k.end_line, k.launch_bounds) == ("global", 10, 35, 1024)
    a = k.param("A")
    assert (a.type, a.is_pointer, a.is_const, a.restrict, a.line) == ("float", True, True, True, 11)
    c = k.param("C")
    assert (c.is_pointer, c.is_const, c.restrict) == (True, False, True)
    alpha = k.param("alpha")
    assert (alpha.type, alpha.is_pointer) == ("float", False)
    assert [p.name for p in k.params] == ["A", "B", "bias", "C", "M", "N", "K", "alpha"]


def test_gemm_shared_sizes_fold_defines_and_constexpr(gemm):
    k = gemm.kernels[0]
    assert [(s.name, s.dtype, s.dims, s.bytes, s.line) for s in k.shared] == [
        ("As", "float", (8, 33), 8 * 33 * 4, 13),
        ("Bs", "float", (8, 32), 8 * 32 * 4, 14),
    ]
    assert k.shared_bytes == 2080
    assert gemm.defines == {"BM": 32, "BN": 32, "BK": 8, "PAD": 1}


def test_gemm_sync_accumulator_guards_loops(gemm):
    k = gemm.kernels[0]
    assert k.syncthreads == [24, 29]
    assert k.accumulators == [("acc", "float", 27)]  # acc = fmaf(a, b, acc)
    assert ("row < M && col < N", 31) in k.bounds_guards
    outer, inner = k.loops
    assert (outer.var, outer.trip, outer.trip_count, outer.line, outer.end_line) == ("k0", "ceil(K / BK)", None, 19, 30)
    assert (inner.var, inner.trip, inner.trip_count, inner.unroll) == ("kk", "BK", 8, True)
    assert k.grid_stride_loops == []
    [store] = k.global_stores
    assert (store.target, store.index, store.line, store.thread_indexed, store.guarded) == (
        "C", "[row * N + col]", 33, True, True)


def test_gemm_epilogue_and_launch(gemm):
    k = gemm.kernels[0]
    assert [(h.kind, h.detail, h.line) for h in k.epilogue] == [
        ("bias", "bias", 32), ("scale", "alpha", 32), ("activation", "relu", 33)]
    [launch] = k.launches
    assert launch is gemm.launches[0]
    assert (launch.kernel, launch.grid, launch.block, launch.smem, launch.stream, launch.line) == (
        "gemm_bias_relu", "grid", "block", "0", "stream", 41)
    assert launch.block_dims == (32, 32) and launch.block_threads == 1024 and launch.smem_bytes == 0
    assert launch.grid_dims == ("CEIL_DIV(N, BN)", "CEIL_DIV(M, BM)")  # N, M are runtime values


def test_softmax_shuffles_fast_math_grid_stride():
    f = load("softmax_warp.cu")
    by = {k.name: k for k in f.kernels}
    assert [(k.name, k.qualifier) for k in f.kernels] == [
        ("warp_max", "device"), ("warp_sum", "device"), ("softmax_rows", "global"), ("scale_inplace", "global")]
    assert by["warp_max"].warp_shuffles == [("__shfl_xor_sync", 9)]
    assert by["warp_max"].loops[0].trip_count == 5  # off = 16, 8, 4, 2, 1
    sm = by["softmax_rows"]
    assert [(i, ln) for i, ln in sm.fast_math] == [("__expf", 27), ("__fdividef", 29), ("__expf", 30)]
    assert sm.grid_stride_loops == [("r", "gridDim.x * ROWS_PER_BLOCK", 21)]
    assert sm.accumulators == [("s", "float", 27)]
    assert ("activation", "exp", 30) in sm.epilogue
    assert sm.launches[0].block_threads == 128  # threads = WARP * ROWS_PER_BLOCK, host local
    sc = by["scale_inplace"]
    assert sc.grid_stride_loops[0].stride == "blockDim.x * gridDim.x"
    assert sc.global_stores[0].guarded is True
    assert (sc.launches[0].grid_dims, sc.launches[0].block_threads) == ((120,), 256)
    assert f.defines["ROWS_PER_BLOCK"] == 4


def test_tensor_core_wmma_and_ptx_mma():
    f = load("tensor_core_mma.cu")
    wm, mma = f.kernels
    assert wm.tensor_core == [("wmma", "mma_sync", ("half", "half", "float"), 21)]
    assert wm.accumulators == [("fc", "float", 21)]
    [tc] = mma.tensor_core
    assert (tc.api, tc.dtypes, tc.line) == ("mma.sync", ("bfloat16", "bfloat16", "float"), 31)
    assert tc.op.startswith("mma.sync.aligned.m16n8k16")


def test_thread_index_uses_and_atomics():
    src = """
__global__ void hist(const float* x, float* out, int* cnt, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&out[i % 8], x[i]);
        atomicAdd(cnt, 1);
        atomicMax_block(cnt + 1, 3);
    }
}
"""
    k = parse_cuda(src, "h.cu").kernels[0]
    assert [u.builtin for u in k.thread_index_uses] == ["blockIdx.x", "blockDim.x", "threadIdx.x"]
    assert k.atomics == [("add", "float", "&out[i % 8]", 5), ("add", "int", "cnt", 6), ("max", "int", "cnt + 1", 7)]
    assert k.bounds_guards == [("i < n", 4)]


def test_template_params_dynamic_shared_and_symbolic_dims():
    src = """
#define SZ(n) ((n) * sizeof(float))
template <int BS, typename T>
__global__ void tk(T* x) {
    __shared__ T tile[BS][BS + 1];
    extern __shared__ float dyn[];
    __shared__ double pad[SZ(4)];
    constexpr int LOCAL = 3 * 4;
    float reg[LOCAL];
}
"""
    f = parse_cuda(src, "t.cu")
    k = f.kernels[0]
    assert k.template_params == ["BS", "T"]
    tile, dyn, pad = k.shared
    assert (tile.dims, tile.bytes, tile.dynamic) == (("BS", "BS + 1"), None, False)
    assert (dyn.dims, dyn.bytes, dyn.dynamic) == ((), None, True)
    assert (pad.dims, pad.bytes) == ((16,), 128)
    assert k.constants == {"LOCAL": 12}
    assert k.shared_bytes is None  # tile size depends on a template parameter


def test_half_accumulators_and_epilogue_through_locals():
    src = """
#include <cuda_fp16.h>
__device__ float gelu(float v) { return v; }
__global__ void k(const __half* a, float* y, const float* bias, float beta, int n) {
    __half acc = __float2half(0.f);
    float s = 0.f;
    for (int i = 0; i < n; ++i) { acc = __hadd(acc, a[i]); s = s + 1.0f; }
    int t = threadIdx.x;
    float v = __half2float(acc) + bias[t];
    float w = gelu(v);
    if (t < n) y[t] = w + beta * y[t];
}
"""
    k = parse_cuda(src, "e.cu").kernel("k")
    assert k.accumulators == [("acc", "__half", 7), ("s", "float", 7)]
    assert canonical_dtype(k.accumulators[0].dtype) == "half"
    kinds = {(h.kind, h.detail) for h in k.epilogue}
    assert kinds == {("bias", "bias"), ("activation", "gelu"), ("scale", "beta"), ("accumulate", "y")}


def test_columns_are_characters_not_bytes():
    src = '__global__ void k(float* y) {\n    /* λ→µ */ y[threadIdx.x] = 0.0f;\n}\n'
    [store] = parse_cuda(src, "u.cu").kernels[0].global_stores
    assert store.column == src.splitlines()[1].index("y[") + 1  # 15, while the byte column is 19


def test_to_json_is_serialisable_and_complete(gemm):
    data = json.loads(json.dumps(gemm.to_json()))
    assert data["language"] == "cuda" and data["path"].endswith("gemm_bias_relu.cu")
    k = data["kernels"][0]
    for key in ("name", "line", "end_line", "qualifier", "params", "shared", "syncthreads", "warp_shuffles",
                "atomics", "fast_math", "tensor_core", "accumulators", "bounds_guards", "grid_stride_loops",
                "loops", "thread_index_uses", "epilogue", "launches"):
        assert key in k, key
    assert k["shared"][0] == {"name": "As", "dtype": "float", "dims": [8, 33], "bytes": 1056, "line": 13,
                              "dynamic": False}
    assert k["accumulators"] == [{"name": "acc", "dtype": "float", "line": 27}]
    assert k["launches"][0]["block_threads"] == 1024


@pytest.mark.parametrize("text,value", [
    ("TILE + PAD", 17), ("(TILE * 3) / 2", 24), ("-7 / 2", -3), ("-7 % 2", -1), ("0x20 >> 1", 16),
    ("sizeof(float) * TILE", 64), ("CEIL(33, TILE)", 3), ("1.5f * 2", 3.0), ("max(TILE, 4)", 16),
    ("TILE > 8 && PAD", 1), ("UNKNOWN * 2", None), ("a ? b : c", None), ("", None),
])
def test_constant_folding(text, value):
    env = {"TILE": 16, "PAD": 1}
    assert fold(text, env, {"CEIL": FunctionMacro(["a", "b"], "((a) + (b) - 1) / (b)")}) == value


def test_modern_cpp_kernels():
    f = load("modern_cpp_kernels.cu")
    assert f.syntax_errors == [] and f.notes == []
    by = {k.name: k for k in f.kernels}
    assert set(by) == {"operator()", "apply", "proto"}
    apply = by["apply"]
    assert apply.template_params == ["T", "TILE", "Op"]  # defaults (`= Relu`) are not names
    assert apply.shared == [("buf", "T", ("TILE",), None, 13, False)]
    assert apply.syncthreads == [16]  # block.sync()
    [store] = apply.global_stores  # i = blockIdx.x * TILE + block.thread_rank()
    assert (store.line, store.thread_indexed, store.guarded) == (20, True, True)
    proto = by["proto"]
    assert proto.grid_stride_loops == [("i", "blockDim.x * gridDim.x", 25)]
    assert proto.loops[0].grid_stride and proto.loops[0].kind == "while"
    launches = {la.kernel: la for la in f.launches}
    assert (launches["apply"].grid_dims, launches["apply"].block_threads, launches["apply"].smem_bytes) == (
        (16,), 64, 256)  # host constexpr T = 64 folds (1000 + T - 1) / T and T * sizeof(float)
    assert [la.line for la in by["apply"].launches] == [30] and by["proto"].launches[0].block_threads == 256


def test_calls_and_callees_reach_device_helpers():
    f = load("softmax_warp.cu")
    sm = f.kernel("softmax_rows")
    assert sm.calls == [("warp_max", 25), ("warp_sum", 28)]
    helpers = f.callees(sm)
    assert [h.name for h in helpers] == ["warp_max", "warp_sum"]
    assert [w.op for h in helpers for w in h.warp_shuffles] == ["__shfl_xor_sync", "__shfl_xor_sync"]
    assert f.callees(f.kernel("scale_inplace")) == []
    assert f.to_json()["kernels"][2]["calls"] == [{"name": "warp_max", "line": 25}, {"name": "warp_sum", "line": 28}]


@pytest.mark.parametrize("header,trip,count", [
    ("for (unsigned s = BLOCK / 2; s > 32; s >>= 1)", "ceil(log2((BLOCK / 2) / 32))", 2),  # 128, 64
    ("for (int s = 64; s > 0; s >>= 1)", "floor(log2(64)) + 1", 7),
    ("for (int w = 1; w < 32; w <<= 1)", "ceil(log2(32 / 1))", 5),
    ("for (int w = 3; w < 32; w *= 2)", "ceil(log2(32 / 3))", 4),  # 3, 6, 12, 24
    ("for (int i = 2; i <= BLOCK; i += 4)", "ceil((BLOCK - 2 + 1) / 4)", 64),
    ("for (int i = BLOCK; i > 0; i -= 3)", "ceil((BLOCK - 0) / 3)", 86),
    ("for (int i = 0; i < n; ++i)", "n", None),
])
def test_loop_trip_counts(header, trip, count):
    src = f"#define BLOCK 256\n__global__ void k(float* x, int n) {{\n    {header} x[0] += 1.0f;\n}}\n"
    [loop] = parse_cuda(src, "t.cu").kernels[0].loops
    assert (loop.trip, loop.trip_count, loop.line) == (trip, count, 3)


def test_register_tile_gemm_with_pragmas_between_loops():
    src = """#define TM 4
__global__ void mm(const float* A, const float* bias, float* C, int M, int N) {
    float acc[TM][TM];
    int row0 = blockIdx.y * 64 + threadIdx.y * TM, col0 = blockIdx.x * 64 + threadIdx.x * TM;
    for (int k = 0; k < 64; ++k) {
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll 2
            for (int j = 0; j < TM; ++j) acc[i][j] = fmaf(A[k], A[k + j], acc[i][j]);
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TM; ++j) {
            int row = row0 + i, col = col0 + j;
            float v = acc[i][j] + bias[col];
            if (row < M && col < N) C[row * N + col] = v > 0.0f ? v : 0.0f;
        }
}
"""
    f = parse_cuda(src, "mm.cu")
    assert f.syntax_errors == []  # `#pragma unroll` between a loop header and its body
    k = f.kernels[0]
    assert [(lp.line, lp.unroll) for lp in k.loops] == [(5, None), (7, True), (9, 2), (11, None), (12, None)]
    assert k.accumulators == [("acc", "float", 9)]  # acc[i][j] = fmaf(a, b, acc[i][j])
    assert [(h.kind, h.detail) for h in k.epilogue] == [("bias", "bias"), ("activation", "relu")]
    assert k.bounds_guards == [("row < M && col < N", 15)]  # `v > 0.0f` compares data, not an index
