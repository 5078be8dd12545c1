"""What every NKI fact collector shares: the tile and walk-context types, the API vocabulary and the
small value helpers. The walker core is parse/nki_extract.py."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ...api import catalogue as nki_api
from ...api.hardware import DTYPE_BYTES
from .. import consts
from ..consts import Env
from ..nki_model import (
    Allocation,
    Loop,
    NkiKernel,
)

KERNEL_DECORATORS = {
    "nki.jit": "nki.jit", "torch_neuronx.nki_jit": "nki_jit", "nki_jit": "nki_jit",
    "nki.baremetal": "nki.baremetal", "nki.benchmark": "nki.benchmark", "nki.profile": "nki.profile",
    "nki.simulate_kernel": "nki.simulate_kernel", "jax_neuronx.nki_call": "nki_call",
}
LOOP_KINDS = {
    "nl.affine_range": "affine_range", "nl.sequential_range": "sequential_range",
    "nl.static_range": "static_range", "nl.dynamic_range": "dynamic_range", "range": "range",
}
# argument roles: (returns-style, dst-style), from the API catalogue
ROLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = nki_api.roles()
_DEFAULT_ROLES = (("x", "y", "z"), ("dst", "data", "data2"))
_REDUCE_APIS = {"nl.mean", "nl.sum", "nl.average"}
_DATA_ROLES = ("data", "x", "src", "data1")
_STMT_TYPES = {
    "expression_statement", "for_statement", "while_statement", "if_statement", "with_statement",
    "try_statement", "function_definition", "decorated_definition", "return_statement",
    "assert_statement", "block",
}
_TAG_HINT = re.compile(rb"mean|sum|square|\*|reduce|power|multiply|average")
_LIGHT_APIS = frozenset({
    "nl.par_dim", "nl.affine_range", "nl.sequential_range", "nl.static_range", "nl.dynamic_range", "nl.ds",
    "nl.arange", "nl.mgrid", "nki.jit",
})
_CHECKED_KWARGS = frozenset({"mask", "dst_rmw_op", "platform_target", "accumulate"})
_SCAN_LEAVES = frozenset({"integer", "float", "string", "true", "false", "none", "comment"})
_RANK = {"float32": 4, "tfloat32": 3, "float16": 2, "bfloat16": 2}


@lru_cache(maxsize=4096)
def canonical_api(full: str) -> str:
    if full.startswith("neuronxcc."):
        full = full[len("neuronxcc."):]
    for pre, rep in (("nki.language.", "nl."), ("nki.isa.", "nisa."), ("nki.typing.", "nt.")):
        if full.startswith(pre):
            return rep + full[len(pre):]
    if full == "nki.language":
        return "nl"
    if full == "nki.isa":
        return "nisa"
    return full


def is_nki_api(api: str) -> bool:
    return api.startswith(("nl.", "nisa.", "nki.", "nt.")) or api in ("nki_jit", "torch_neuronx.nki_jit")


@dataclass
class Tile:
    shape: tuple | None  # folded values (int | Lin | None)
    dtype: str | None
    buffer: str | None
    param: bool = False


@dataclass
class _Ctx:
    kernel: NkiKernel
    env: Env
    loops: list[Loop] = field(default_factory=list)
    tiles: dict[str, Tile] = field(default_factory=dict)
    assigns: dict[str, list[int]] = field(default_factory=dict)
    multi: set[str] = field(default_factory=set)
    tags: dict[str, str] = field(default_factory=dict)
    aranges: dict[str, Any] = field(default_factory=dict)
    # index grids: name -> (axis, axes of its space, extent or None); mgrid bound to one name -> extents
    grids: dict[str, list[tuple[int, int, Any]]] = field(default_factory=dict)
    mgrids: dict[str, list] = field(default_factory=dict)
    loop_names: dict[int, set[str]] = field(default_factory=dict)
    nested: int = 0  # depth of nested function definitions (closures, loop bodies) being walked


def inner_data_names(bound: dict, ex) -> set[str]:  # ex: the walker (parse/nki_extract.Extractor)
    """Names read by the non-destination operands of a dst-style call."""
    out: set[str] = set()
    for r, n in bound.items():
        if r != "dst" and n is not None:
            ex._scan_names(n, out)
    return out


_DIRECT_ALLOC = re.compile(r"^[\w.]*?\b(psum|sbuf)\.(?:mod_alloc|alloc)\s*\(")


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _disp(shape: tuple | None) -> tuple | None:
    if shape is None:
        return None
    display = consts.display
    return tuple([display(d) for d in shape])


def _square_of(tag: str | None) -> str:
    return "sq_mean" if tag == "mean" else "square"


def _mean_of(tag: str | None) -> str:
    return "mean_sq" if tag == "square" else "mean"


def _make_alloc(name, line, col, end_line, end_col, api, shape_vals, dtype, buffer, pdim, ctx: _Ctx,
                implicit: bool = False) -> Allocation:
    shape = _disp(shape_vals)
    elem = DTYPE_BYTES.get(dtype) if dtype else None
    partitions = None
    blocks = free = bpp = None
    block_dims: tuple = ()
    if shape is not None and pdim is not None and pdim < len(shape):
        partitions = shape[pdim]
        block_dims = shape[:pdim]
        blocks = _prod(block_dims)
        fe = _prod(shape[pdim + 1:]) if len(shape) > pdim + 1 else 1
        if fe is not None and elem is not None:
            free = fe * elem
        if free is not None and blocks is not None:
            bpp = blocks * free
    a = Allocation(name=name, line=line, col=col, end_line=end_line, end_col=end_col, api=api, shape=shape,
                   dtype=dtype, buffer=buffer, partition_dim=pdim, block_dims=block_dims,
                   bytes_per_partition=bpp if buffer in ("sbuf", "psum", "unknown") else None,
                   loop_depth=len(ctx.loops), loops=list(ctx.loops), partitions=partitions,
                   free_bytes=free, blocks=blocks, implicit=implicit)
    a._shape_vals = shape_vals  # type: ignore[attr-defined]
    return a


def _prod(dims) -> int | None:
    n = 1
    for d in dims:
        if not isinstance(d, int):
            return None
        n *= d
    return n
