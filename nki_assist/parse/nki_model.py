"""Facts the NKI front end extracts. Lines are 1-based, columns 1-based in characters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

Shape = tuple  # of int | str (symbol text)

# calls that move data between HBM and on-chip memory
DMA_APIS = frozenset({"nl.load", "nl.store", "nisa.dma_copy", "nl.load_transpose2d", "nisa.dma_transpose"})
MATMUL_APIS = frozenset({"nl.matmul", "nisa.nc_matmul"})
ALLOC_APIS = frozenset({
    "nl.ndarray", "nl.zeros", "nl.ones", "nl.full", "nl.empty", "nl.rand", "nl.random",
    "nl.zeros_like", "nl.ones_like", "nl.full_like", "nl.empty_like",
})


@dataclass
class Param:
    name: str
    line: int
    col: int
    splat: bool = False  # `*args` / `**kwargs`


@dataclass
class Loop:
    var: str | None
    kind: str  # affine_range | sequential_range | static_range | range | dynamic_range | fori_loop | iter
    trip_count: int | None
    trip_expr: str
    line: int
    col: int
    end_line: int
    id: int = 0
    start_byte: int = 0  # byte offsets from the kernel's `def` (order within the kernel, not file positions)
    end_byte: int = 0
    # `num // den` parts of the trip expression whose numerator is symbolic or not divisible
    floor_divs: list[tuple[str, Any, int, bool]] = field(default_factory=list)  # (num, num_value, den, proven)


@dataclass
class Allocation:
    name: str | None
    line: int
    col: int
    end_line: int
    end_col: int
    api: str
    shape: Shape | None
    dtype: str | None
    buffer: str
    partition_dim: int | None
    block_dims: Shape
    bytes_per_partition: int | None
    loop_depth: int
    loops: list[Loop]
    partitions: int | str | None = None  # size of the partition dim
    free_bytes: int | None = None  # bytes per partition of one block
    blocks: int | None = None  # product of block dims
    implicit: bool = False  # result tile of a call (nl.load, nl.matmul) rather than an explicit allocation


@dataclass
class Operand:
    role: str  # dst, src, stationary, moving, data, x, ...
    text: str
    name: str | None  # base variable
    shape: Shape | None  # shape of the accessed region when known
    dtype: str | None
    buffer: str | None  # sbuf | psum | hbm | ... ; "hbm" for kernel inputs
    is_param: bool = False

    @property
    def partitions(self) -> int | None:
        if self.shape and isinstance(self.shape[0], int) and self.buffer not in ("hbm", "shared_hbm", "private_hbm"):
            return self.shape[0]
        if self.shape and isinstance(self.shape[0], int):
            return self.shape[0]
        return None

    @property
    def free_elems(self) -> int | None:
        if not self.shape or len(self.shape) < 2:
            return 1 if self.shape and len(self.shape) == 1 else None
        n = 1
        for d in self.shape[1:]:
            if not isinstance(d, int):
                return None
            n *= d
        return n


@dataclass
class Call:
    api: str  # normalised: nl.load, nisa.nc_matmul, nki.jit, ...
    args: list[str]
    kwargs: dict[str, str]
    line: int
    col: int
    end_line: int
    end_col: int
    loops: list[Loop]
    target: str | None = None  # name the result is bound to
    names: frozenset[str] = frozenset()  # identifiers read by the call
    dep_loops: frozenset[int] = frozenset()  # ids of enclosing loops the arguments depend on
    operands: list[Operand] = field(default_factory=list)
    dst_style: bool = False  # new-NKI `dst=` first argument instead of a returned tile
    op: str | None = None  # op=/op0= argument, normalised (nl.exp, nl.add, ...)

    def operand(self, *roles: str) -> Operand | None:
        for r in roles:
            for o in self.operands:
                if o.role == r:
                    return o
        return None


@dataclass
class Matmul:
    call: Call
    stationary: Operand | None
    moving: Operand | None
    dst: Operand | None
    K: int | None
    M: int | None
    N: int | None
    transpose_x: bool = True


@dataclass
class Assert:
    text: str
    line: int
    col: int


@dataclass
class Assignment:
    """A write: `x = ...`, `x[...] = ...`, `x += ...`, or a dst-style ISA call writing `dst`."""

    name: str
    line: int
    col: int
    end_line: int
    end_col: int
    loops: list[Loop]
    op: str  # "=", "+=", ..., "call"
    subscript: bool
    reads: frozenset[str]  # names read by the value (and index)
    index_dep_loops: frozenset[int]  # loops the written index depends on
    value_kind: str | None  # add | sub | mul | matmul | alloc | load | other
    value_api: str | None
    value_text: str
    start_byte: int = 0  # from the kernel's `def`, like Loop.start_byte
    scalar: bool = False  # a trace-time Python value (an address counter, an index predicate), not a tensor


@dataclass
class Subtraction:
    """`a - b` (or nl.subtract / tensor_tensor(op=subtract)) with tags for the variance pattern."""

    line: int
    col: int
    end_line: int
    end_col: int
    left_tag: str | None
    right_tag: str | None
    dtypes: tuple[str | None, ...]
    text: str


@dataclass
class ApiRef:
    api: str  # normalised dotted name (nl.arange, nl.tile_size.psum_fmax, nki.simulate_kernel)
    line: int
    col: int
    end_line: int
    end_col: int
    kwarg: str | None = None  # set when the reference is a keyword argument of a call (mask=)


@dataclass
class Return:
    names: list[str]
    line: int
    col: int
    end_col: int


@dataclass
class ShapeBranch:
    """`if R == 256 and D == 1024:` — a branch on shape values equal to literals, and what the path taken
    for every other shape does (rule NKI206)."""

    line: int
    col: int
    end_line: int
    end_col: int  # of the `if` header (the condition)
    test: str
    literals: list[tuple[str, int | tuple]]  # (shape expression, literal it must equal)
    matched_computes: bool  # the path for the literal shape calls NKI ops
    other_computes: bool  # the path for any other shape calls NKI ops or a helper
    other_raises: bool  # ... raises or asserts (an explicit "unsupported shape")
    other_returns: str | None  # name it returns (when it returns)
    other_returns_input: bool  # that name is a kernel parameter
    other_line: int  # where the other path returns / ends


@dataclass
class NkiKernel:
    name: str
    line: int
    end_line: int
    decorator: str | None
    params: list[Param] = field(default_factory=list)
    allocations: list[Allocation] = field(default_factory=list)
    loops: list[Loop] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    matmuls: list[Matmul] = field(default_factory=list)
    asserts: list[Assert] = field(default_factory=list)
    assignments: list[Assignment] = field(default_factory=list)
    subtractions: list[Subtraction] = field(default_factory=list)
    api_refs: list[ApiRef] = field(default_factory=list)
    returns: list[Return] = field(default_factory=list)
    shape_branches: list[ShapeBranch] = field(default_factory=list)
    used_names: set[str] = field(default_factory=set)
    called_functions: set[str] = field(default_factory=set)
    # calls of plain-named Python functions (helpers): (name, line, names its arguments read)
    local_calls: list[tuple[str, int, frozenset[str]]] = field(default_factory=list)
    helper: bool = False  # called by another function of the file: its parameters are tiles, not HBM inputs
    docstring: str = ""  # the function's docstring (preconditions it states, e.g. "M is a multiple of 128")
    col: int = 1
    name_end_col: int = 1
    # assert-derived facts: symbol -> divisors / upper bound
    divisors: dict[str, set[int]] = field(default_factory=dict)
    upper_bounds: dict[str, int] = field(default_factory=dict)
    guarded_names: set[str] = field(default_factory=set)  # names used in min()/if/assert guards
    guard_lines: set[int] = field(default_factory=set)  # lines with min()/max(), mask= or an if test
    # from the project model (nki_assist/project): entry | sub-kernel | helper | function, and its
    # FunctionContext (call-site facts, caller guards); None when checked without one
    role: str | None = None
    context: Any = field(default=None, repr=False, compare=False)

    def loop_by_id(self, loop_id: int) -> Loop | None:
        for lp in self.loops:
            if lp.id == loop_id:
                return lp
        return None

    def memo(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """`make()`, computed once per kernel. For values derived from this kernel's extracted facts
        (`helper`/`decorator`, which the file sets, and anything else from outside the kernel must be
        in `key`): facts do not change after extraction, and a kernel the parse cache reuses keeps its
        derived values between edits. Callers must not mutate what it returns."""
        memo = self.__dict__.setdefault("_memo", {})
        try:
            return memo[key]
        except KeyError:
            value = memo[key] = make()
            return value


@dataclass
class NkiFile:
    path: str
    dialect: str  # legacy | new | transitional | unknown
    kernels: list[NkiKernel] = field(default_factory=list)
    imports: dict[str, str] = field(default_factory=dict)  # alias -> module
    syntax_errors: list[tuple[int, int, str]] = field(default_factory=list)
    import_lines: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # alias -> (line, col, end_col)
    imports_full: list[str] = field(default_factory=list)  # `import neuronxcc.nki.language` module paths
    line_count: int = 0
    lines: list[str] = field(default_factory=list, repr=False)  # source lines (rules that read the text)
    # parsed with a parse cache: kernels may be reused from the previous version, and their per-kernel
    # rule findings with them (rules/nki/run.py)
    from_cache: bool = field(default=False, repr=False, compare=False)
    # where CPython stops on the file (line, column, message); None when it compiles
    python_syntax_error: tuple[int, int, str] | None = None
    project: Any = field(default=None, repr=False, compare=False)  # project.ModuleContext

    def kernel(self, name: str) -> NkiKernel | None:
        return next((k for k in self.kernels if k.name == name), None)
