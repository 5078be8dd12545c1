"""Loops: `for` over range/affine_range/sequential_range/static_range, trip counts and the floor divisions in
their bounds.

A collector: functions of the walker (`ex`, parse/nki_extract.py) that record one kind of fact.
"""

from __future__ import annotations

from .. import consts
from ..consts import Env, Lin
from ..nki_model import Loop
from .common import LOOP_KINDS, _Ctx


def for_statement(ex, st, ctx: _Ctx) -> None:
    left, right = st.child_by_field_name("left"), st.child_by_field_name("right")
    ex._scan_stmt_expr(right, ctx)
    kind, trip, trip_expr, fdivs = "iter", None, ex.text(right) if right else "", []
    if right is not None and right.type == "call":
        api = ex._call_api(right)
        if api in LOOP_KINDS:
            kind = LOOP_KINDS[api]
            pos, kw = ex._call_args(right)
            if len(pos) == 1:
                start_n, stop_n, step_n = None, pos[0], None
            elif len(pos) >= 2:
                start_n, stop_n = pos[0], pos[1]
                step_n = pos[2] if len(pos) > 2 else None
            else:
                start_n, stop_n, step_n = kw.get("start"), kw.get("stop"), kw.get("step")
            step_n = step_n if step_n is not None else kw.get("step")
            f = ex.folder.fold
            start = f(start_n, ctx.env) if start_n is not None else 0
            stop = f(stop_n, ctx.env) if stop_n is not None else None
            step = f(step_n, ctx.env) if step_n is not None else 1
            trip = consts.trip_count(start, stop, step)
            trip_expr = ", ".join(ex.text(c) for c in pos) if pos else trip_expr
            for n in (start_n, stop_n):
                if n is not None:
                    fdivs += floor_divs(ex, n, ctx)
    line, col, end_line, _ = ex.pos(st)
    var_names = ex._target_names(left)
    loop = Loop(var_names[0] if var_names else None, kind, trip, trip_expr, line, col, end_line,
                id=len(ctx.kernel.loops) + 1, start_byte=st.start_byte, end_byte=st.end_byte,
                floor_divs=fdivs)
    ctx.kernel.loops.append(loop)
    for n in var_names:
        ctx.env.values[n] = Lin.sym(n)
    ctx.loop_names[loop.id] = ex._loop_names(loop, ctx) | set(var_names)
    ctx.loops.append(loop)
    ex._block(st.child_by_field_name("body"), ctx)
    ctx.loops.pop()
    alt = st.child_by_field_name("alternative")
    if alt is not None:
        ex._stmt(alt, ctx)


def floor_divs(ex, node, ctx: _Ctx) -> list:
    """`num // den` inside a trip expression, directly or through names bound to one."""
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "binary_operator" and ex.text(n.child_by_field_name("operator")) == "//":
            num = ex.folder.fold(n.child_by_field_name("left"), ctx.env)
            den = consts.as_int(ex.folder.fold(n.child_by_field_name("right"), ctx.env))
            if den and den > 1:
                out.append((ex.text(n.child_by_field_name("left")), num, den))
            continue
        if n.type == "identifier":
            v = ctx.env.lookup(ex.text(n))
            if isinstance(v, Lin):
                for term, _ in v.terms:
                    fd = find_floordiv(term, ctx.env)
                    if fd is not None and consts.as_int(fd.den):
                        out.append((consts.display(fd.num), fd.num, consts.as_int(fd.den)))
            continue
        stack.extend(n.named_children)
    return out


def find_floordiv(term: str, env: Env | None):
    while env is not None:
        if term in env.floordivs:
            return env.floordivs[term]
        env = env.parent
    return None
