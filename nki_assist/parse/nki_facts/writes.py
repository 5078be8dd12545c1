"""Writes and bindings: assignments, augmented assignments and the tensor writes they make, with the loops
they depend on; what each bound name is (tile, shape, index grid, tag).

A collector: functions of the walker (`ex`, parse/nki_extract.py) that record one kind of fact.
"""

from __future__ import annotations

from typing import Any

from .. import consts
from ..consts import Lin
from ..nki_model import ALLOC_APIS, MATMUL_APIS, Assignment
from . import shapes, tags
from .common import _Ctx


def assign(ex, node, ctx: _Ctx) -> None:
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if right is not None and right.type == "assignment":  # a = b = value
        assign(ex, right, ctx)
        inner = right
        while inner.child_by_field_name("right") is not None and inner.child_by_field_name("right").type == "assignment":
            inner = inner.child_by_field_name("right")
        right = inner.child_by_field_name("right")
    if left is None or right is None:
        return
    target = ex.text(left) if left.type == "identifier" else None
    reads = ex._scan_stmt_expr(right, ctx, target)
    idx_names = index_names(ex, left, ctx)
    reads |= idx_names
    bind(ex, left, right, ctx)
    record_write(ex, left, right, "=", reads, idx_names, node, ctx)


def augassign(ex, node, ctx: _Ctx) -> None:
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if left is None or right is None:
        return
    reads = ex._scan_stmt_expr(right, ctx)
    idx_names = index_names(ex, left, ctx)
    base = ex._base_name(left)
    reads |= idx_names | ({base} if base else set())
    ctx.kernel.used_names |= {base} if base else set()
    op = ex.text(node.child_by_field_name("operator"))
    if left.type == "identifier" and base:
        ctx.env.values[base] = Lin.sym(base)
    record_write(ex, left, right, op, reads, idx_names, node, ctx)


def index_names(ex, left, ctx: _Ctx) -> set[str]:
    names: set[str] = set()
    node = left
    while node.type in ("subscript", "attribute"):
        if node.type == "subscript":
            for s in node.children_by_field_name("subscript"):
                ex._scan(s, ctx, names, None)
            node = node.child_by_field_name("value")
        else:
            node = node.child_by_field_name("object")
    ctx.kernel.used_names |= names
    return names


def record_write(ex, left, right, op: str, reads: set[str], idx_names: set[str], node, ctx: _Ctx) -> None:
    base = ex._base_name(left)
    if base is None:
        for n in ex._target_names(left):
            add_write(ex, n, node, op, False, reads, frozenset(), right, ctx)
        return
    add_write(ex, base, node, op, left.type != "identifier", reads, ex._dep_loops(idx_names, ctx), right, ctx)


def add_write(ex, name, node, op, subscript, reads, dep, right, ctx: _Ctx, value_kind=None, api=None) -> None:
    line, col, end_line, end_col = ex.pos(node)
    if value_kind is None:
        value_kind, api = value_kind_of(ex, right, ctx)
    # a Python number the kernel computes at trace time (an address counter), not a tensor
    scalar = (not subscript and op != "call" and name not in ctx.tiles and api is None
              and right is not None and shapes.tile_of(ex, right, ctx) is None
              and not any(n in ctx.tiles for n in reads if n != name))
    # `mask = (nl.arange(P)[:, None] + P * i < N) & mask`: a predicate over indices and sizes the tracer builds,
    # not a tensor, also when `mask` and the sizes are parameters (which makes them look like input tiles)
    scalar = scalar or (not subscript and op == "=" and api is None and right is not None and _predicate(right)
                        and not any(n in ctx.tiles and not ctx.tiles[n].param for n in reads | {name}))
    ctx.kernel.assignments.append(Assignment(
        name=name, line=line, col=col, end_line=end_line, end_col=end_col, loops=list(ctx.loops),
        op=op, subscript=subscript, reads=frozenset(reads), index_dep_loops=dep, value_kind=value_kind,
        value_api=api, value_text=ex.text(right)[:200] if right is not None else "",
        start_byte=node.start_byte, scalar=scalar))


def _predicate(node) -> bool:
    """A comparison, or comparisons (and names) joined by `&`/`|`/`and`/`or`, maybe chosen by `x if c else y`."""
    t = node.type
    if t == "comparison_operator":
        return True
    if t == "parenthesized_expression":
        return bool(node.named_children) and _predicate(node.named_children[0])
    if t == "conditional_expression":
        parts = node.named_children
        return len(parts) == 3 and _predicate(parts[0]) and _predicate(parts[2])
    if t in ("binary_operator", "boolean_operator"):
        sides = [node.child_by_field_name("left"), node.child_by_field_name("right")]
        op = node.child_by_field_name("operator")
        if op is None or op.type not in ("&", "|", "and", "or") or None in sides:
            return False
        return any(_predicate(s) for s in sides) and all(_predicate(s) or s.type == "identifier" for s in sides)
    return False


def value_kind_of(ex, node, ctx: _Ctx) -> tuple[str | None, str | None]:
    if node is None:
        return None, None
    while node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    if node.type == "binary_operator":
        op = ex.text(node.child_by_field_name("operator"))
        return {"+": "add", "-": "sub", "*": "mul", "@": "matmul"}.get(op, "other"), None
    if node.type == "call":
        rec = ex._calls_by_node.get(node.start_byte)
        api = rec.api if rec is not None else None
        if api is None:
            return "other", None
        if api in MATMUL_APIS:
            return "matmul", api
        if api in ALLOC_APIS:
            return "alloc", api
        if api in ("nl.load", "nisa.dma_copy"):
            return "load", api
        if api in ("nl.add",):
            return "add", api
        if api == "nisa.tensor_tensor":
            return ("add" if rec.op == "nl.add" else "other"), api
        return "other", api
    return "other", None


def bind(ex, left, right, ctx: _Ctx) -> None:
    """Constant, tile, tag and arange bindings for `left = right`."""
    env, folder = ctx.env, ex.folder
    if left.type == "identifier":
        name = ex.text(left)
        tag = tags.tag_of(ex, right, ctx)
        if tag:
            ctx.tags[name] = tag
        else:
            ctx.tags.pop(name, None)
        # nl.arange(n)[:, None] / nl.arange(n)
        ar = shapes.arange_size(ex, right, ctx)
        if ar is None and right.type == "call" and ex._call_api(right) == "nl.ds":
            ds_args = ex._call_args(right)[0]  # `sl = nl.ds(start, size)`: indexing with sl spans `size`
            ar = ex.folder.fold(ds_args[1], ctx.env) if len(ds_args) >= 2 else None
        if ar is not None:
            ctx.aranges[name] = ar
        refs = shapes.grid_refs(ex, right, ctx) if (ctx.grids or ctx.mgrids or "arange" in ex.text(right)) else []
        if refs:  # `ix = offset + nl.arange(128)[:, None]` is an index grid too
            ctx.grids[name] = refs
        else:
            ctx.grids.pop(name, None)
        if right.type == "subscript" and shapes.is_api(ex, right.child_by_field_name("value"), "nl.mgrid"):
            ctx.mgrids[name] = [shapes.slice_extent(ex, sl, None, ctx)
                                for sl in right.children_by_field_name("subscript")]
        else:
            ctx.mgrids.pop(name, None)
        tile = shapes.tile_of(ex, right, ctx)
        if tile is not None:
            ctx.tiles[name] = tile
        if name in ctx.multi:
            env.values[name] = Lin.sym(name)
            return
        if right.type == "subscript":
            val = right.child_by_field_name("value")
            if val.type == "attribute" and ex.text(val.child_by_field_name("attribute")) == "shape":
                shape = shapes.shape_of(ex, val.child_by_field_name("object"), ctx)
                i = consts.as_int(folder.fold(right.child_by_field_name("subscript"), env))
                if shape is not None and i is not None and -len(shape) <= i < len(shape) and shape[i] is not None:
                    env.values[name] = shape[i]
                else:
                    env.values[name] = Lin.sym(name)
                return
        if right.type == "call" and right.start_byte in ex._calls_by_node:
            env.values[name] = Lin.sym(name)  # a tile, not a number
            return
        v = folder.fold(right, env)
        env.values[name] = v if v is not None else Lin.sym(name)
        return
    if left.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple"):
        targets = left.named_children
        names = [ex.text(t) if t.type == "identifier" else None for t in targets]
        vals: list[Any] = [None] * len(targets)
        if right.type == "attribute" and ex.text(right.child_by_field_name("attribute")) == "shape":
            obj = right.child_by_field_name("object")
            shape = shapes.shape_of(ex, obj, ctx)
            if shape is not None and len(shape) == len(targets):
                vals = list(shape)
            elif obj.type == "identifier" and ctx.tiles.get(ex.text(obj)) is not None:
                # K, N = a.shape: the tensor's shape is now (K, N) in symbols
                tile = ctx.tiles[ex.text(obj)]
                syms = tuple(Lin.sym(n) if n else None for n in names)
                if tile.shape is None:
                    tile.shape = syms
        elif right.type in ("tuple", "expression_list", "list") and len(right.named_children) == len(targets):
            vals = [folder.fold(c, env) for c in right.named_children]
        elif right.type == "subscript" and shapes.is_api(ex, right.child_by_field_name("value"), "nl.mgrid"):
            slices = right.children_by_field_name("subscript")
            for i, s in enumerate(slices):
                if i < len(names) and names[i]:
                    ctx.aranges[names[i]] = shapes.slice_extent(ex, s, None, ctx)
                    ctx.grids[names[i]] = [(i, len(slices), ctx.aranges[names[i]])]
        for n, v in zip(names, vals):
            if n is None:
                continue
            ctx.tags.pop(n, None)
            env.values[n] = v if (v is not None and n not in ctx.multi) else Lin.sym(n)
