"""NKI calls: every `nl.*`/`nisa.*` call becomes an ApiRef/Call fact, and the collectors for its kind run.

A collector: functions of the walker (`ex`, parse/nki_extract.py) that record one kind of fact.
"""

from __future__ import annotations

from typing import Any

from .. import consts
from ..nki_model import ALLOC_APIS, MATMUL_APIS, ApiRef, Call, Operand
from . import allocations, matmul, shapes, tags, writes
from .common import _CHECKED_KWARGS, _DATA_ROLES, _DEFAULT_ROLES, _LIGHT_APIS, ROLES, _Ctx, _disp, inner_data_names


def nki_call(ex, node, api: str, args, ctx: _Ctx, inner: set[str], target: str | None) -> None:
    pos, kw = ex._call_args(node)
    pos = [c for c in pos if c.type != "comment"]
    line, col, end_line, end_col = ex.pos(node)
    bare = (node.start_byte, node.end_byte) in ex._bare_calls
    dst_style = "dst" in kw or (api.startswith("nisa.") and bare and target is None) or \
        (api == "nl.load" and len(pos) >= 2)
    if api == "nl.store":
        dst_style = False
    call = Call(api=api, args=[ex.text(p) for p in pos], kwargs={k: ex.text(v) for k, v in kw.items()},
                line=line, col=col, end_line=end_line, end_col=end_col, loops=list(ctx.loops),
                target=target, names=frozenset(inner), dst_style=dst_style)
    ctx.kernel.api_refs.append(ApiRef(api, line, col, end_line, end_col))
    for k, v in kw.items():
        if k not in _CHECKED_KWARGS:
            continue
        kl, kc, kel, kec = ex.pos(ex._kwarg_of[(v.start_byte, v.end_byte)])
        ctx.kernel.api_refs.append(ApiRef(api, kl, kc, kel, kec, kwarg=k))
        if k == "mask":
            ctx.kernel.guard_lines.add(line)
    if api in _LIGHT_APIS:  # index/loop helpers: recorded, nothing to resolve
        call._src_shape_vals = call._first_shape_vals = call._alloc = call._kw_dtype = None  # type: ignore[attr-defined]
        ctx.kernel.calls.append(call)
        return
    roles = ROLES.get(api, _DEFAULT_ROLES)[1 if dst_style else 0]
    bound: dict[str, Any] = dict(zip(roles, pos))
    bound.update(kw)
    # what the call reads: for dst-style calls the destination's own names do not count
    read_names = set(inner)
    if dst_style and bound.get("dst") is not None:
        read_names = set()
        for r, n in bound.items():
            if r != "dst" and n is not None:
                ex._scan_names(n, read_names)
        if bound["dst"].type == "subscript":
            for sub in bound["dst"].children_by_field_name("subscript"):
                ex._scan_names(sub, read_names)
    call.dep_loops = ex._dep_loops(read_names, ctx)
    first_shape = src_shape = None
    for role, n in bound.items():
        if n is None or n.type not in ("identifier", "subscript", "call"):
            continue
        if role in ("op", "op0", "op1"):
            continue
        name, shape, dtype, buf, param = shapes.region(ex, n, ctx)
        if name is None or (n.type == "identifier" and name not in ctx.tiles):
            continue
        call.operands.append(Operand(role, ex.text(n), name, _disp(shape), dtype, buf, param))
        if first_shape is None and role in _DATA_ROLES + ("y", "data2"):
            first_shape = shape
        if role == "src":
            src_shape = shape
    call._src_shape_vals = src_shape  # type: ignore[attr-defined]
    call._first_shape_vals = first_shape  # type: ignore[attr-defined]
    call.op = ex._op_name(bound.get("op") or bound.get("op0"))
    call._alloc = None  # type: ignore[attr-defined]
    call._kw_dtype = consts.canonical_dtype(ex.folder.fold(kw["dtype"], ctx.env)) if "dtype" in kw else None  # type: ignore[attr-defined]
    ctx.kernel.calls.append(call)
    ex._calls_by_node[node.start_byte] = call
    if api in ALLOC_APIS:
        call._alloc = allocations.allocation(ex, call, api, pos, kw, target, ctx)  # type: ignore[attr-defined]
    elif api in MATMUL_APIS:
        matmul.matmul(ex, call, api, kw, ctx)
    elif api in ("nl.load",) and not dst_style and target:
        allocations.implicit_load(ex, call, kw, target, ctx)
    if api == "nl.subtract" and len(pos) >= 2:
        tags.subtraction(ex, node, pos[0], pos[1], ctx)
    elif api == "nisa.tensor_tensor" and call.op == "nl.subtract" and "data1" in bound and "data2" in bound:
        tags.subtraction(ex, node, bound["data1"], bound["data2"], ctx)
    if dst_style and "dst" in bound and bound["dst"] is not None:
        dnode = bound["dst"]
        dname = ex._base_name(dnode)
        if dname:
            reads = read_names - ({dname} if dname not in inner_data_names(bound, ex) else set())
            idx = writes.index_names(ex, dnode, ctx) if dnode.type == "subscript" else set()
            kind = "matmul" if api in MATMUL_APIS else ("add" if call.op == "nl.add" else "other")
            writes.add_write(ex, dname, node, "call", dnode.type == "subscript", reads | idx,
                            ex._dep_loops(idx, ctx), None, ctx, value_kind=kind, api=api)
            tag = tags.tag_of(ex, node, ctx)
            if tag:
                ctx.tags[dname] = tag
        elif tags.view_base(ex, dnode):  # a TensorView destination (`v.get_view()`): its tag only
            tag = tags.tag_of(ex, node, ctx)
            if tag:
                ctx.tags[tags.view_base(ex, dnode)] = tag
            else:
                ctx.tags.pop(tags.view_base(ex, dnode), None)
    tags.tag_reduce_res(ex, node, api, bound, ctx)
