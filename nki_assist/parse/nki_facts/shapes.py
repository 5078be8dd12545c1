"""Shapes: tile shapes, regions of subscripts and slices, `nl.arange`/`nl.mgrid` index grids and their extents.

A collector: functions of the walker (`ex`, parse/nki_extract.py) that record one kind of fact.
"""

from __future__ import annotations

from typing import Any

from .. import consts
from ..consts import Lin
from ..nki_model import ALLOC_APIS, MATMUL_APIS
from .common import _DATA_ROLES, Tile, _Ctx, _int


def is_api(ex, node, api: str) -> bool:
    d = ex.folder.dotted(node) if node is not None else None
    return bool(d) and ex.api_of(d) == api


def arange_size(ex, node, ctx: _Ctx) -> Any:
    if node.type == "subscript":
        node = node.child_by_field_name("value")
    if node.type != "call" or ex._call_api(node) != "nl.arange":
        return None
    pos = ex._call_args(node)[0]
    if len(pos) == 1:
        return ex.folder.fold(pos[0], ctx.env)
    if len(pos) >= 2:
        return consts.add(ex.folder.fold(pos[1], ctx.env), ex.folder.fold(pos[0], ctx.env), -1)
    return None


def arange_place(ex, node, ctx: _Ctx) -> tuple[int, int, Any] | None:
    """(axis, axes, extent) of `nl.arange(n)[:, None]`-style placements (extent None when not a constant)."""
    call = node.child_by_field_name("value") if node.type == "subscript" else node
    if call is None or call.type != "call" or ex._call_api(call) != "nl.arange":
        return None
    pos = ex._call_args(call)[0]
    ext = None
    if len(pos) == 1:
        ext = ex.folder.fold(pos[0], ctx.env)
    elif len(pos) >= 2:
        ext = consts.add(ex.folder.fold(pos[1], ctx.env), ex.folder.fold(pos[0], ctx.env), -1)
    if node.type != "subscript":
        return 0, 1, ext
    items = [c for c in node.children_by_field_name("subscript")]
    slots = [i for i, c in enumerate(items) if c.type == "slice"]
    if len(slots) != 1:
        return None
    return slots[0], len(items), ext


def grid_refs(ex, node, ctx: _Ctx) -> list[tuple[int, int, Any]]:
    """The index grids an index expression uses (`t * P + i_p`, `i.p`, `nl.arange(n)[None, :]`)."""
    out: list[tuple[int, int, Any]] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "identifier" and ex.text(n) in ctx.grids:
            out += ctx.grids[ex.text(n)]
            continue
        if n.type == "attribute":
            obj, attr = n.child_by_field_name("object"), n.child_by_field_name("attribute")
            if obj is not None and obj.type == "identifier" and ex.text(obj) in ctx.mgrids:
                ext = ctx.mgrids[ex.text(obj)]
                axis = "pxyz".find(ex.text(attr)) if attr is not None else -1
                if 0 <= axis < len(ext):
                    out.append((axis, len(ext), ext[axis]))
                continue
        if n.type in ("subscript", "call"):
            place = arange_place(ex, n, ctx)
            if place is not None:
                out.append(place)
                continue
        stack.extend(n.named_children)
    return out


def grid_shape(ex, idx: list, ctx: _Ctx) -> tuple | None:
    """Shape of an index-grid access: the broadcast of the grids it uses, one axis per grid axis (the
    extent along an axis no index uses is 1). None when the index is not a pure index-grid access."""
    if not ctx.grids and not ctx.mgrids and not any(arange_place(ex, s, ctx) for s in idx):
        return None
    refs: list[tuple[int, int, Any]] = []
    for s in idx:
        if s.type in ("slice", "ellipsis") or (s.type == "call" and ex._call_api(s) == "nl.ds"):
            return None
        refs += grid_refs(ex, s, ctx)
    if not refs or len({nd for _, nd, _ in refs}) != 1:
        return None
    dims: list[Any] = [1] * refs[0][1]
    seen: set[int] = set()
    for axis, _nd, ext in refs:
        if axis in seen:
            continue  # `i * 128 + i_p` and `i_p` again: the same axis
        seen.add(axis)
        dims[axis] = _int(ext) if _int(ext) is not None else (ext if isinstance(ext, Lin) else None)
    return tuple(dims)


def shape_of(ex, node, ctx: _Ctx) -> tuple | None:
    if node.type == "identifier":
        t = ctx.tiles.get(ex.text(node))
        return t.shape if t else None
    return None


def tile_of(ex, node, ctx: _Ctx) -> Tile | None:
    """The tile a right-hand side evaluates to, when it is a tile."""
    while node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    if node.type in ("identifier", "subscript"):
        name, shape, dtype, buf, param = region(ex, node, ctx)
        if name is None or (shape is None and dtype is None and buf is None):
            return None
        return Tile(shape, dtype, "sbuf" if param else buf, False) if node.type == "subscript" and param else \
            Tile(shape, dtype, buf, param if node.type == "identifier" else False)
    if node.type == "binary_operator":
        for side in ("left", "right"):
            t = tile_of(ex, node.child_by_field_name(side), ctx)
            if t is not None:
                return Tile(t.shape, t.dtype, "sbuf")
        return None
    if node.type != "call":
        return None
    api = ex._call_api(node)
    if api is None:
        return None
    call = ex._calls_by_node.get(node.start_byte)
    if call is None:
        return None
    if api in ALLOC_APIS:
        a = call._alloc  # type: ignore[attr-defined]
        return Tile(a._shape_vals, a.dtype, a.buffer) if a is not None else None  # type: ignore[attr-defined]
    if api in MATMUL_APIS and not call.dst_style:
        mm = ctx.kernel.matmuls[-1] if ctx.kernel.matmuls and ctx.kernel.matmuls[-1].call is call else None
        if mm is not None and mm.M is not None and mm.N is not None:
            return Tile((mm.M, mm.N), "float32", "psum")
        return Tile(None, "float32", "psum")
    if api in ("nl.load", "nl.load_transpose2d") and not call.dst_style:
        src = call.operand("src")
        dt = call._kw_dtype  # type: ignore[attr-defined]
        shape = call._src_shape_vals  # type: ignore[attr-defined]
        if api == "nl.load_transpose2d" and shape:
            shape = tuple(reversed(shape))
        return Tile(shape, dt or (src.dtype if src else None), "sbuf")
    if call.dst_style:
        return None
    # compute call returning a tile: same shape as its first tile operand
    first = next((o for o in call.operands if o.role in _DATA_ROLES + ("y", "data2")), None)
    if first is None:
        return None
    dt = call._kw_dtype or first.dtype  # type: ignore[attr-defined]
    shape = call._first_shape_vals  # type: ignore[attr-defined]
    if api in ("nl.transpose", "nisa.nc_transpose") and shape:
        shape = tuple(reversed(shape))
    if api in ("nl.max", "nl.min", "nl.sum", "nl.mean") or api == "nisa.tensor_reduce":
        shape = (shape[0], 1) if shape else None
    return Tile(shape, dt, "sbuf")


def region(ex, node, ctx: _Ctx):
    """(name, shape values, dtype, buffer, is_param) for `x` or `x[...]`."""
    if node.type == "identifier":
        name = ex.text(node)
        t = ctx.tiles.get(name)
        if t is None:
            return name, None, None, None, False
        return name, t.shape, t.dtype, t.buffer, t.param
    if node.type == "subscript":
        base = node.child_by_field_name("value")
        if base.type != "identifier":
            return None, None, None, None, False
        name = ex.text(base)
        t = ctx.tiles.get(name)
        if t is None:
            return name, None, None, None, False
        idx = node.children_by_field_name("subscript")
        return name, slice_shape(ex, t.shape, idx, ctx), t.dtype, t.buffer, t.param
    if node.type == "call":  # x.ap(...), x.reshape(...), x.view(...)
        fn = node.child_by_field_name("function")
        if fn is not None and fn.type == "attribute":
            obj = fn.child_by_field_name("object")
            name, _, dtype, buf, param = region(ex, obj, ctx)
            if name in ctx.tiles:
                return name, None, dtype, buf, param
    return None, None, None, None, False


def slice_shape(ex, base: tuple | None, idx: list, ctx: _Ctx) -> tuple | None:
    grid = grid_shape(ex, idx, ctx)
    if grid is not None:
        return grid
    out: list[Any] = []
    dims = list(base) if base is not None else None
    di = 0
    n_real = sum(1 for s in idx if s.type != "ellipsis")
    for s in idx:
        if s.type == "ellipsis":
            if dims is None:
                return None
            take = len(dims) - n_real
            out += dims[di:di + take]
            di += take
            continue
        d = dims[di] if dims is not None and di < len(dims) else None
        di += 1
        if s.type == "slice":
            out.append(slice_extent(ex, s, d, ctx))
            continue
        size = index_extent(ex, s, ctx)
        if size is not None:
            out.append(size)
        # plain integer/scalar index: dimension dropped
    if dims is not None:
        out += dims[di:]
    elif not out:
        return None
    elif len(idx) < 2:
        out.append(None)  # `x[a:b]` of a tensor of unknown rank: trailing dims may follow (free size unknown)
    return tuple(out)


def slice_extent(ex, s, dim: Any, ctx: _Ctx) -> Any:
    parts: list[Any] = [None, None, None]
    i = 0
    for c in s.children:
        if c.type == ":":
            i += 1
        elif c.is_named and i < 3:
            parts[i] = c
    f = ex.folder.fold
    start = f(parts[0], ctx.env) if parts[0] is not None else 0
    stop = f(parts[1], ctx.env) if parts[1] is not None else dim
    step = f(parts[2], ctx.env) if parts[2] is not None else 1
    if stop is None or start is None:
        return None
    ext = consts.add(stop, start, -1)
    st = consts.as_int(step)
    if st and st != 1 and consts.is_num(ext):
        return -(-ext // st)
    return ext


def index_extent(ex, s, ctx: _Ctx) -> Any:
    """Extent of a non-slice index: nl.ds(start, size), an arange expression, or None (scalar)."""
    if s.type == "call" and ex._call_api(s) == "nl.ds":
        pos = ex._call_args(s)[0]
        if len(pos) >= 2:
            return ex.folder.fold(pos[1], ctx.env)
        return None
    sz = arange_size(ex, s, ctx)
    if sz is not None:
        return sz
    if not ctx.aranges:
        return None
    stack = [s]
    while stack:
        n = stack.pop()
        if n.type == "identifier" and ex.text(n) in ctx.aranges:
            return ctx.aranges[ex.text(n)]
        stack.extend(n.named_children)
    return None
