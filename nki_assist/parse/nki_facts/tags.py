"""Tags: what a value computes (mean, sum of squares, ...), for the numerics rules; subtractions of them.

A collector: functions of the walker (`ex`, parse/nki_extract.py) that record one kind of fact.
"""

from __future__ import annotations

from .. import consts
from ..nki_model import Subtraction
from .common import _DATA_ROLES, _DEFAULT_ROLES, _REDUCE_APIS, _TAG_HINT, ROLES, _Ctx, _mean_of, _square_of


def subtraction(ex, node, a, b, ctx: _Ctx) -> None:
    if a is None or b is None:
        return
    ta, tb = tag_of(ex, a, ctx), tag_of(ex, b, ctx)
    if not ta or not tb:
        return
    dtypes = tuple(ctx.tiles[n].dtype if n in ctx.tiles else None
                   for n in (ex.text(a), ex.text(b)))
    line, col, end_line, end_col = ex.pos(node)
    ctx.kernel.subtractions.append(Subtraction(line, col, end_line, end_col, ta, tb, dtypes, " ".join(ex.text(node).split())[:120]))


def tag_of(ex, node, ctx: _Ctx) -> str | None:
    """Variance-pattern tags: square, mean, mean_sq (E[x^2]), sq_mean (E[x]^2)."""
    if node.type == "identifier":
        return ctx.tags.get(ex.text(node))
    if not ctx.tags and _TAG_HINT.search(ex.src, node.start_byte, node.end_byte) is None:
        return None
    while node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    t = node.type
    if t == "identifier":
        return ctx.tags.get(ex.text(node))
    if t == "subscript":
        return tag_of(ex, node.child_by_field_name("value"), ctx)
    if t == "binary_operator":
        op = ex.text(node.child_by_field_name("operator"))
        a, b = node.child_by_field_name("left"), node.child_by_field_name("right")
        if op == "*" and ex.text(a) == ex.text(b):
            return _square_of(tag_of(ex, a, ctx))
        if op == "**" and consts.as_int(ex.folder.fold(b, ctx.env)) == 2:
            return _square_of(tag_of(ex, a, ctx))
        if op in ("*", "/"):
            if consts.is_num(ex.folder.fold(b, ctx.env)) or b.type == "identifier" and tag_of(ex, b, ctx) is None:
                return tag_of(ex, a, ctx) if op == "/" or tag_of(ex, a, ctx) else tag_of(ex, b, ctx)
            if op == "*" and consts.is_num(ex.folder.fold(a, ctx.env)):
                return tag_of(ex, b, ctx)
        return None
    if t != "call":
        return None
    view = view_base(ex, node)
    if view is not None:  # `v.get_view()`: the tensor view's own tag
        return ctx.tags.get(view)
    api = ex._call_api(node)
    if api is None:
        return None
    pos, kw = ex._call_args(node)
    dst_style = "dst" in kw or (node.start_byte, node.end_byte) in ex._bare_calls
    roles = ROLES.get(api, _DEFAULT_ROLES)[1 if dst_style else 0]
    bound = dict(zip(roles, pos)) | kw
    data = next((bound[r] for r in _DATA_ROLES if r in bound), None)
    op = ex._op_name(bound.get("op") or bound.get("op0"))
    if api == "nl.square" or op == "nl.square" or (api in ("nl.multiply", "nisa.tensor_tensor") and
                                                     (api == "nl.multiply" or op == "nl.multiply") and
                                                     len(pos) >= 2 and ex.text(pos[-2 if dst_style else 0]) ==
                                                     ex.text(pos[-1 if dst_style else 1])):
        return _square_of(tag_of(ex, data, ctx)) if data is not None else "square"
    if api in ("nl.multiply", "nisa.tensor_tensor") and "data1" in bound and "data2" in bound and \
            ex.text(bound["data1"]) == ex.text(bound["data2"]) and op == "nl.multiply":
        return _square_of(tag_of(ex, bound["data1"], ctx))
    if api == "nl.power" and len(pos) >= 2 and consts.as_int(ex.folder.fold(pos[1], ctx.env)) == 2:
        return _square_of(tag_of(ex, pos[0], ctx))
    if api == "nisa.nc_matmul" and ("moving" in bound or "stationary" in bound):
        # a matmul against a constant (ones, 1/H) is how the Tensor Engine sums or averages across partitions:
        # the result keeps the one tagged operand's meaning (sums of squares stay E[x^2], of x stay E[x])
        found = [tg for tg in (tag_of(ex, bound[r], ctx) for r in ("moving", "stationary") if r in bound) if tg]
        if len(found) == 1:
            return _mean_of(found[0]) if found[0] == "square" else found[0]
        return None
    if api in _REDUCE_APIS or (api == "nisa.tensor_reduce" and op in ("nl.add", "nl.mean")):
        return _mean_of(tag_of(ex, data, ctx)) if data is not None else "mean"
    if api in ("nl.multiply", "nisa.tensor_scalar") and data is not None:
        return tag_of(ex, data, ctx)
    return None


def tag_reduce_res(ex, node, api: str, bound, ctx: _Ctx) -> None:
    """`activation(_reduce)(op=square, ..., reduce_op=add, reduce_res=s)`: `s` sums the squares (E[x^2])."""
    rr = bound.get("reduce_res")
    if api not in ("nisa.activation", "nisa.activation_reduce") or rr is None:
        return
    rname = ex._base_name(rr)
    if rname and ex._op_name(bound.get("reduce_op")) in ("nl.add", None):
        tag = tag_of(ex, node, ctx)
        if tag:
            ctx.tags[rname] = _mean_of(tag)


def view_base(ex, node) -> str | None:
    """`v.get_view()` (nki-library's TensorView) -> "v"; None for any other node."""
    if node is None or node.type != "call":
        return None
    fn = node.child_by_field_name("function")
    if fn is None or fn.type != "attribute" or ex.text(fn.child_by_field_name("attribute")) != "get_view":
        return None
    obj = fn.child_by_field_name("object")
    return ex.text(obj) if obj is not None and obj.type == "identifier" else None
