"""Facts the CUDA front end extracts: plain data, JSON-ready, no parsing here.

All lines are 1-based source lines of the `.cu` file. Small facts are NamedTuples so they unpack as
the tuples the contract names (e.g. `for intrinsic, line in kernel.fast_math`) and still read by
attribute. dtypes are spelled as in the source (`float`, `__half`, `__nv_bfloat16`, `float4`);
`canonical_dtype()` maps them to one vocabulary (float, half, bfloat16, double, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

# Element sizes in bytes of CUDA scalar/vector types (CUDA C++ Programming Guide, built-in vector
# types; cuda_fp16.h / cuda_bf16.h / cuda_fp8.h).
CUDA_TYPE_BYTES: dict[str, int] = {
    "char": 1, "signed char": 1, "unsigned char": 1, "bool": 1, "int8_t": 1, "uint8_t": 1,
    "__nv_fp8_e4m3": 1, "__nv_fp8_e5m2": 1,
    "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2,
    "half": 2, "__half": 2, "__nv_bfloat16": 2, "nv_bfloat16": 2, "__bfloat16": 2,
    "int": 4, "unsigned": 4, "unsigned int": 4, "int32_t": 4, "uint32_t": 4, "float": 4,
    "half2": 4, "__half2": 4, "__nv_bfloat162": 4, "nv_bfloat162": 4,
    "long": 8, "unsigned long": 8, "long long": 8, "unsigned long long": 8, "int64_t": 8,
    "uint64_t": 8, "size_t": 8, "double": 8, "float2": 8, "int2": 8, "uint2": 8,
    "float3": 12, "int3": 12, "float4": 16, "int4": 16, "uint4": 16, "double2": 16,
    "double4": 32,
}

_CANONICAL = {
    "float": "float", "float2": "float", "float3": "float", "float4": "float", "tf32": "tf32",
    "double": "double", "double2": "double", "double4": "double",
    "half": "half", "__half": "half", "half2": "half", "__half2": "half",
    "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16", "__bfloat16": "bfloat16",
    "__nv_bfloat162": "bfloat16", "nv_bfloat162": "bfloat16", "bfloat16": "bfloat16",
    "__nv_fp8_e4m3": "fp8_e4m3", "__nv_fp8_e5m2": "fp8_e5m2",
}

FLOAT_DTYPES = frozenset({"float", "double", "half", "bfloat16", "tf32", "fp8_e4m3", "fp8_e5m2"})
LOW_PRECISION_DTYPES = frozenset({"half", "bfloat16", "fp8_e4m3", "fp8_e5m2"})


def canonical_dtype(ctype: str | None) -> str | None:
    """`__nv_bfloat16` -> `bfloat16`, `half2` -> `half`, `float4` -> `float`; ints and unknown unchanged."""
    if ctype is None:
        return None
    base = ctype.replace("const ", "").replace("volatile ", "").replace("*", "").strip()
    return _CANONICAL.get(base, base)


class CudaParam(NamedTuple):
    """A kernel parameter. `type` is the base type without qualifiers/pointers (`float`)."""

    name: str
    type: str
    is_pointer: bool
    is_const: bool
    restrict: bool
    line: int


class SharedDecl(NamedTuple):
    """A `__shared__` array. `dims` holds ints where `#define`/constexpr folding succeeded and the
    source text otherwise; `bytes` is None when a dim is unknown or the array is dynamic
    (`extern __shared__ T x[]`, sized at launch)."""

    name: str
    dtype: str
    dims: tuple[int | str, ...]
    bytes: int | None
    line: int
    dynamic: bool = False


class WarpShuffle(NamedTuple):
    op: str  # __shfl_down_sync, __reduce_add_sync, __ballot_sync, shfl_down (cooperative groups)
    line: int


class Atomic(NamedTuple):
    """An atomic RMW. `dtype` of the target element when known (param/shared/local type, else the
    value operand's literal type), else None. `target` is the address expression text."""

    op: str  # add, sub, max, min, exch, cas, and, or, xor, inc, dec
    dtype: str | None
    target: str
    line: int


class FastMath(NamedTuple):
    """Use of a fast/explicitly rounded math intrinsic (see FAST_MATH in parse.cuda for which are
    approximate). `tanhf` is recorded only in a tanh-GELU context (0.044715 / sqrt(2/pi) / gelu)."""

    intrinsic: str
    line: int


class TensorCoreUse(NamedTuple):
    """wmma::mma_sync / PTX mma.sync / wgmma. dtypes normalised as (a, b, accumulator) in the
    canonical vocabulary (half, bfloat16, tf32, float, fp8_e4m3, int8, ...); unknown -> None."""

    api: str  # wmma | mma.sync | wgmma
    op: str  # call name or PTX instruction
    dtypes: tuple[str | None, ...]
    line: int


class Accumulator(NamedTuple):
    """A local variable updated with `+=`/`-=`, `x = x + ...`, fma(a, b, x) or wmma::mma_sync inside a
    loop that does not also declare it. `line` is the first accumulating update."""

    name: str
    dtype: str | None
    line: int


class BoundsGuard(NamedTuple):
    """A condition comparing a thread-derived index (`if (row < M && col < N)`, `if (i >= n) return;`)."""

    expr: str
    line: int


class GridStrideLoop(NamedTuple):
    var: str
    stride: str
    line: int


class ThreadIndexUse(NamedTuple):
    builtin: str  # threadIdx.x, blockIdx.y, blockDim.x, gridDim.x
    line: int


class EpilogueHint(NamedTuple):
    """Work applied to the value stored to global memory: kind bias | scale | activation | residual."""

    kind: str
    detail: str  # e.g. "relu", "gelu", "alpha", "bias"
    line: int


class ScaleUse(NamedTuple):
    """A value multiplied (or divided) by a data-independent scale factor: a local computed from
    rsqrtf/sqrtf of a size (`scale = rsqrtf((float)d)`), a scale/alpha/temperature-named scalar, or an
    inline `* rsqrtf((float)d)`. Rule input (MIG102), not in the JSON contract."""

    factor: str  # the local/param name, or the inline expression text
    origin: str  # initializer text of the local, "parameter", or the inline expression
    factor_line: int  # where the factor is defined
    line: int  # where a value is multiplied/divided by it
    target: str  # what that assignment writes (e.g. `sc[j]`)


class Barrier(NamedTuple):
    kind: str  # block | warp | grid
    name: str
    line: int
    pos: int  # byte offset, for ordering


class SharedAccess(NamedTuple):
    """A read or write of a `__shared__` array element (rule input, not in the JSON contract)."""

    array: str
    kind: str  # read | write | atomic
    index: str  # subscript text without spaces, e.g. "[ty][tx]"
    thread_index: bool  # the index depends on threadIdx (each thread its own element)
    thread_cond: bool  # under a condition on the thread index (e.g. if (tid == 0))
    line: int
    column: int  # 1-based characters
    pos: int  # byte offset of the access
    stmt: int  # byte offset of the enclosing statement
    loops: tuple[int, ...]  # indices into CudaKernel.loops of enclosing loops
    conds: str = ""  # enclosing thread-dependent conditions, joined with &&
    key: str = ""  # index with thread-index aliases resolved (`tx` -> `threadIdx.x`), for comparison
    lead_uniform: bool = False  # 2+ subscripts and the first is the same for all threads (a buffer stage)


class GlobalStore(NamedTuple):
    """A store through a pointer parameter (or a local pointer derived from one)."""

    target: str  # pointer parameter name
    index: str
    line: int
    column: int
    thread_indexed: bool  # index depends on threadIdx
    guarded: bool  # an enclosing if/for/ternary or an earlier early return bounds a thread-derived var


@dataclass
class CudaLoop:
    """A for/while/do loop. `trip` is an expression string (folded to `trip_count` when knowable)."""

    kind: str  # for | while | do | range-for
    line: int
    end_line: int
    var: str | None = None
    init: str | None = None
    cond: str | None = None
    step: str | None = None
    trip: str | None = None
    trip_count: int | None = None
    unroll: int | bool | None = None  # #pragma unroll [N]
    grid_stride: bool = False
    start: int = 0  # byte range of the loop, for rules
    end: int = 0

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in (
            "kind", "line", "end_line", "var", "init", "cond", "step", "trip", "trip_count",
            "unroll", "grid_stride")}


@dataclass
class Launch:
    """`kernel<<<grid, block, smem, stream>>>(...)` in host code. Dims folded where constant."""

    kernel: str
    grid: str
    block: str
    smem: str | None
    stream: str | None
    line: int
    grid_dims: tuple[int | str, ...] = ()
    block_dims: tuple[int | str, ...] = ()
    block_threads: int | None = None
    smem_bytes: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "grid": self.grid, "block": self.block, "smem": self.smem,
                "stream": self.stream, "line": self.line, "grid_dims": list(self.grid_dims),
                "block_dims": list(self.block_dims), "block_threads": self.block_threads,
                "smem_bytes": self.smem_bytes}


@dataclass
class CudaKernel:
    """One `__global__` or `__device__` function and the facts found in its body."""

    name: str
    line: int
    end_line: int
    qualifier: str  # global | device
    params: list[CudaParam] = field(default_factory=list)
    template_params: list[str] = field(default_factory=list)
    launch_bounds: int | None = None
    shared: list[SharedDecl] = field(default_factory=list)
    syncthreads: list[int] = field(default_factory=list)  # lines of block-level barriers
    barriers: list[Barrier] = field(default_factory=list)  # all barriers incl. __syncwarp
    warp_shuffles: list[WarpShuffle] = field(default_factory=list)
    atomics: list[Atomic] = field(default_factory=list)
    fast_math: list[FastMath] = field(default_factory=list)
    tensor_core: list[TensorCoreUse] = field(default_factory=list)
    accumulators: list[Accumulator] = field(default_factory=list)
    bounds_guards: list[BoundsGuard] = field(default_factory=list)
    grid_stride_loops: list[GridStrideLoop] = field(default_factory=list)
    loops: list[CudaLoop] = field(default_factory=list)
    thread_index_uses: list[ThreadIndexUse] = field(default_factory=list)
    epilogue: list[EpilogueHint] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    global_stores: list[GlobalStore] = field(default_factory=list)
    shared_accesses: list[SharedAccess] = field(default_factory=list)
    locals: dict[str, str] = field(default_factory=dict)  # local variable -> declared type
    constants: dict[str, int | float] = field(default_factory=dict)  # kernel-local constexpr/const
    calls: list[tuple[str, int]] = field(default_factory=list)  # (__device__ function of this file, line)
    scale_uses: list[ScaleUse] = field(default_factory=list)  # values scaled by a factor (not in JSON)
    # ptxas facts (registers, shared_bytes, spills, stack, const) once toolchain.nvcc.annotate ran
    resources: dict[str, Any] | None = None

    @property
    def shared_bytes(self) -> int | None:
        """Static shared memory in bytes (None if some static size is unknown)."""
        total = 0
        for s in self.shared:
            if s.dynamic:
                continue
            if s.bytes is None:
                return None
            total += s.bytes
        return total

    def param(self, name: str) -> CudaParam | None:
        return next((p for p in self.params if p.name == name), None)

    def to_json(self) -> dict[str, Any]:
        def rows(items):
            return [t._asdict() for t in items]

        return {
            "name": self.name, "line": self.line, "end_line": self.end_line,
            "qualifier": self.qualifier, "params": rows(self.params),
            "template_params": list(self.template_params), "launch_bounds": self.launch_bounds,
            "shared": [dict(s._asdict(), dims=list(s.dims)) for s in self.shared],
            "shared_bytes": self.shared_bytes,
            "syncthreads": list(self.syncthreads),
            "barriers": [{"kind": b.kind, "name": b.name, "line": b.line} for b in self.barriers],
            "warp_shuffles": rows(self.warp_shuffles), "atomics": rows(self.atomics),
            "fast_math": rows(self.fast_math),
            "tensor_core": [dict(t._asdict(), dtypes=list(t.dtypes)) for t in self.tensor_core],
            "accumulators": rows(self.accumulators), "bounds_guards": rows(self.bounds_guards),
            "grid_stride_loops": rows(self.grid_stride_loops),
            "loops": [lp.to_json() for lp in self.loops],
            "thread_index_uses": rows(self.thread_index_uses),
            "epilogue": rows(self.epilogue),
            "launches": [la.to_json() for la in self.launches],
            "global_stores": rows(self.global_stores),
            "calls": [{"name": n, "line": ln} for n, ln in self.calls],
            "resources": self.resources,
        }


class CudaSyntaxError(NamedTuple):
    line: int
    column: int  # 1-based characters
    message: str


@dataclass
class CudaFile:
    """A parsed `.cu`/`.cuh` file. Never raised from: bad input shows up in syntax_errors/notes."""

    path: str
    kernels: list[CudaKernel] = field(default_factory=list)
    defines: dict[str, int | float] = field(default_factory=dict)  # folded #define/constexpr/const
    syntax_errors: list[CudaSyntaxError] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)  # every launch in host code
    notes: list[str] = field(default_factory=list)  # e.g. "file too large; not parsed"
    lines: list[str] = field(default_factory=list, repr=False)  # source lines (not in JSON)

    def kernel(self, name: str) -> CudaKernel | None:
        return next((k for k in self.kernels if k.name == name), None)

    def callees(self, kernel: CudaKernel) -> list[CudaKernel]:
        """`__device__` functions of this file that `kernel` calls, directly or indirectly (each once).

        Facts such as warp shuffles or fast-math calls often live in these helpers; a check that asks
        "does this kernel use X" should look at `[kernel, *cuda_file.callees(kernel)]`."""
        by_name: dict[str, CudaKernel] = {}
        for k in self.kernels:
            if k.qualifier == "device":
                by_name.setdefault(k.name, k)
        seen: dict[str, CudaKernel] = {}
        todo = [name for name, _ in kernel.calls]
        while todo:
            name = todo.pop(0)
            if name in seen or name not in by_name or by_name[name] is kernel:
                continue
            seen[name] = by_name[name]
            todo.extend(n for n, _ in by_name[name].calls)
        return list(seen.values())

    @property
    def global_kernels(self) -> list[CudaKernel]:
        return [k for k in self.kernels if k.qualifier == "global"]

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path, "language": "cuda",
            "kernels": [k.to_json() for k in self.kernels],
            "defines": dict(self.defines),
            "launches": [la.to_json() for la in self.launches],
            "syntax_errors": [e._asdict() for e in self.syntax_errors],
            "notes": list(self.notes),
        }
