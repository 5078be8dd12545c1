"""Synthetic traces with the exact instruction mix of the public matmul tutorial kernels.

Used for calibration at the tutorial size (4096x8192x8192 bf16: 32,768 matmuls, too slow to simulate
numerically in a test) and by tests. Each generator emits what the simulator traces for the same loop
nest: DMA loads/stores with their HBM boxes, nc_matmul with k/m/n, PSUM evictions on VectorE.
Line numbers are those of the fixture kernels in tests/fixtures/perf/ (symbolic only).
"""

from __future__ import annotations

from ..contracts.runs import Operand, RunResult, TraceEntry
from ..api.hardware import DTYPE_BYTES


class TraceBuilder:
    def __init__(self, file: str = "kernel.py") -> None:
        self.file = file
        self.trace: list[TraceEntry] = []

    def _add(self, **kw) -> None:
        kw.setdefault("file", self.file)
        self.trace.append(TraceEntry(seq=len(self.trace), **kw))

    @staticmethod
    def _geometry(box: tuple[tuple[int, int], ...], partitions: int | None) -> tuple[tuple[int, ...], int, int, int]:
        """(shape, partitions, free elements per partition, elements) of an HBM box moved to SBUF."""
        shape = tuple(b - a for a, b in box)
        p = partitions if partitions is not None else shape[0]
        elems = 1
        for s in shape:
            elems *= s
        return shape, p, elems // max(p, 1), elems

    def load(self, line: int, tensor: str, box: tuple[tuple[int, int], ...], dtype: str = "bfloat16",
             *, partitions: int | None = None, dst: str = "tile", transpose: bool = False) -> None:
        """HBM box -> SBUF, first dim on partitions (or `partitions` rows when given)."""
        shape, p, free, elems = self._geometry(box, partitions)
        nbytes = elems * DTYPE_BYTES[dtype]
        transfers = elems if transpose else p
        self._add(engine="dma", op="dma_transpose" if transpose else "dma_load", line=line,
                  dst=Operand((p, free), dtype, "sbuf", p, dst),
                  srcs=[Operand(shape, dtype, "hbm", 1, tensor)], partitions=p, free_elems=free, bytes=nbytes,
                  transfers=transfers, hbm_tensor=tensor, hbm_box=box, direction="load")

    def store(self, line: int, tensor: str, box: tuple[tuple[int, int], ...], dtype: str = "bfloat16",
              *, partitions: int | None = None, src: str = "res") -> None:
        shape, p, free, elems = self._geometry(box, partitions)
        self._add(engine="dma", op="dma_store", line=line, dst=Operand(shape, dtype, "hbm", 1, tensor),
                  srcs=[Operand((p, free), dtype, "sbuf", p, src)], partitions=p, free_elems=free,
                  bytes=elems * DTYPE_BYTES[dtype], transfers=p, hbm_tensor=tensor, hbm_box=box, direction="store")

    def matmul(self, line: int, k: int, m: int, n: int, dtype: str = "bfloat16", *, transpose: bool = False) -> None:
        self._add(engine="tensor", op="nc_transpose" if transpose else "nc_matmul", line=line,
                  dst=Operand((m, n), "float32", "psum", m, "psum"),
                  srcs=[Operand((k, m), dtype, "sbuf", k, "stationary"), Operand((k, n), dtype, "sbuf", k, "moving")],
                  partitions=m, free_elems=n, extra={"k": k, "m": m, "n": n, "is_transpose": transpose})

    def compute(self, line: int, engine: str, op: str, partitions: int, free: int, dtype: str = "float32",
                srcs: tuple[tuple[str, str], ...] = (("float32", "sbuf"),), **extra) -> None:
        self._add(engine=engine, op=op, line=line, dst=Operand((partitions, free), dtype, "sbuf", partitions),
                  srcs=[Operand((partitions, free), d, b, partitions) for d, b in srcs],
                  partitions=partitions, free_elems=free, extra=extra)

    def evict(self, line: int, m: int, n: int, out_dtype: str = "bfloat16", engine: str = "vector") -> None:
        self.compute(line, engine, "tensor_copy", m, n, out_dtype, (("float32", "psum"),))

    def run(self, status: str = "ok") -> RunResult:
        return RunResult(backend="synthetic", status=status, trace=list(self.trace))


def _b(a: int, size: int) -> tuple[int, int]:
    return (a * size, (a + 1) * size)


def matmul_tiled(M: int, K: int, N: int, dtype: str = "bfloat16") -> TraceBuilder:
    """Tutorial `nki_matmul_tiled_`: both tiles loaded inside the k loop."""
    tb = TraceBuilder("matmul_tiled.py")
    for m in range(M // 128):
        for n in range(N // 512):
            for k in range(K // 128):
                tb.load(14, "lhsT", (_b(k, 128), _b(m, 128)), dtype)
                tb.load(15, "rhs", (_b(k, 128), _b(n, 512)), dtype)
                tb.matmul(16, 128, 128, 512, dtype)
            tb.evict(17, 128, 512, dtype)
            tb.store(18, "result", (_b(m, 128), _b(n, 512)), dtype)
    return tb


def matmul_hoisted(M: int, K: int, N: int, dtype: str = "bfloat16") -> TraceBuilder:
    """Tutorial `nki_matmul_hoist_load_`: a column of lhsT tiles loaded once per m."""
    tb = TraceBuilder("matmul_hoisted.py")
    for m in range(M // 128):
        for k in range(K // 128):
            tb.load(13, "lhsT", (_b(k, 128), _b(m, 128)), dtype)
        for n in range(N // 512):
            for k in range(K // 128):
                tb.load(16, "rhs", (_b(k, 128), _b(n, 512)), dtype)
            for k in range(K // 128):
                tb.matmul(18, 128, 128, 512, dtype)
            tb.evict(19, 128, 512, dtype)
            tb.store(20, "result", (_b(m, 128), _b(n, 512)), dtype)
    return tb


def matmul_block_free(M: int, K: int, N: int, dtype: str = "bfloat16", bm_tiles: int = 2,
                      bn_tiles: int = 2) -> TraceBuilder:
    """Tutorial `nki_matmul_block_free_dimension_`: M and N blocked, K whole."""
    tb = TraceBuilder("matmul_block_free.py")
    for m in range(M // (128 * bm_tiles)):
        for bm in range(bm_tiles):
            for k in range(K // 128):
                tb.load(15, "lhsT", (_b(k, 128), _b(m * bm_tiles + bm, 128)), dtype)
        for n in range(N // (512 * bn_tiles)):
            for bn in range(bn_tiles):
                for k in range(K // 128):
                    tb.load(19, "rhs", (_b(k, 128), _b(n * bn_tiles + bn, 512)), dtype)
            for bm in range(bm_tiles):
                for bn in range(bn_tiles):
                    for k in range(K // 128):
                        tb.matmul(23, 128, 128, 512, dtype)
                    tb.evict(24, 128, 512, dtype)
                    tb.store(25, "result", (_b(m * bm_tiles + bm, 128), _b(n * bn_tiles + bn, 512)), dtype)
    return tb


def matmul_fully_optimized(M: int, K: int, N: int, dtype: str = "bfloat16", bm_tiles: int = 16, bn_tiles: int = 2,
                           bk_tiles: int = 8) -> TraceBuilder:
    """Tutorial `nki_matmul_fully_optimized_`: all dimensions blocked, SBUF accumulation across K blocks."""
    tb = TraceBuilder("matmul_fully_optimized.py")
    BM, BN, BK = 128 * bm_tiles, 512 * bn_tiles, 128 * bk_tiles
    for n in range(N // BN):
        # result_tiles = zeros(...) in SBUF
        for _ in range((M // BM) * bm_tiles * bn_tiles):
            tb.compute(20, "gpsimd", "memset", 128, 512, dtype, (), value=0)
        for kb in range(K // BK):
            for bk in range(bk_tiles):
                tb.load(25, "rhs", (_b(kb * bk_tiles + bk, 128), _b(n, BN)), dtype)
            for m in range(M // BM):
                for bk in range(bk_tiles):
                    tb.load(29, "lhsT", (_b(kb * bk_tiles + bk, 128), _b(m, BM)), dtype)
                for bn in range(bn_tiles):
                    for bm in range(bm_tiles):
                        for bk in range(bk_tiles):
                            tb.matmul(34, 128, 128, 512, dtype)
                        # result_tiles[m, bm, bn] += res_tile  (PSUM + SBUF -> SBUF)
                        tb.compute(35, "vector", "tensor_tensor", 128, 512, dtype,
                                   (("float32", "psum"), (dtype, "sbuf")), alu_op="add")
        for m in range(M // BM):
            for bm in range(bm_tiles):
                for bn in range(bn_tiles):
                    tb.compute(40, "vector", "tensor_copy", 128, 512, dtype, ((dtype, "sbuf"),))
                tb.store(42, "result", (_b(m * bm_tiles + bm, 128), _b(n, BN)), dtype)
    return tb


def row_at_a_time(rows: int, cols: int, dtype: str = "float32") -> TraceBuilder:
    """Row softmax one row per instruction, on a single partition (tests/fixtures/perf/rows_softmax.py)."""
    tb = TraceBuilder("rows_softmax.py")
    for r in range(rows):
        tb.load(14, "x", ((r, r + 1), (0, cols)), dtype)
        tb.compute(15, "vector", "tensor_reduce", 1, 1, dtype, alu_op="max", in_free_elems=cols)
        tb.compute(16, "scalar", "activation", 1, cols, dtype)
        tb.compute(17, "vector", "tensor_reduce", 1, 1, dtype, alu_op="add", in_free_elems=cols)
        tb.compute(18, "vector", "reciprocal", 1, 1, dtype)
        tb.compute(19, "vector", "tensor_scalar", 1, cols, dtype)
        tb.store(20, "out", ((r, r + 1), (0, cols)), dtype)
    return tb


def rows_packed(rows: int, cols: int, dtype: str = "float32") -> TraceBuilder:
    """The same softmax with 128 rows per instruction."""
    tb = TraceBuilder("rows_softmax_packed.py")
    for t in range(rows // 128):
        tb.load(14, "x", ((t * 128, (t + 1) * 128), (0, cols)), dtype)
        tb.compute(15, "vector", "tensor_reduce", 128, 1, dtype, alu_op="max", in_free_elems=cols)
        tb.compute(16, "scalar", "activation", 128, cols, dtype)
        tb.compute(17, "vector", "tensor_reduce", 128, 1, dtype, alu_op="add", in_free_elems=cols)
        tb.compute(18, "vector", "reciprocal", 128, 1, dtype)
        tb.compute(19, "vector", "tensor_scalar", 128, cols, dtype)
        tb.store(20, "out", ((t * 128, (t + 1) * 128), (0, cols)), dtype)
    return tb
