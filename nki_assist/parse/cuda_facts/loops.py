"""Loops: for/while/do headers, trip counts, `#pragma unroll`, grid-stride loops.

A collector: functions of the CUDA walker (`ex`, parse/cuda_walk.py) that record one kind of fact.
"""

from __future__ import annotations

import re

from ..cuda_model import CudaLoop, GridStrideLoop
from ..cuda_state import _RELATIONAL, _trip, refs


def loop(ex, node) -> None:
    ks = ex.ks
    if ks is None:
        ex.children(node)
        return
    lp = CudaLoop(kind={"for_statement": "for", "while_statement": "while", "do_statement": "do",
                        "for_range_loop": "range-for"}[node.type],
                  line=ex.line(node), end_line=node.end_point[0] + 1,
                  unroll=unroll_before(ex, node), start=node.start_byte, end=node.end_byte)
    cond = node.child_by_field_name("condition")
    if cond is not None and cond.type in ("condition_clause", "parenthesized_expression"):
        inner = cond.named_children
        cond_expr = inner[0] if inner else cond
    else:
        cond_expr = cond
    if cond_expr is not None:
        lp.cond = ex.text(cond_expr)
    idx = len(ks.k.loops)
    ks.k.loops.append(lp)
    pushed = False
    init = None
    if node.type == "for_statement":
        init = node.child_by_field_name("initializer")
        update = node.child_by_field_name("update")
        if init is not None:
            ex.visit(init)
        for_header(ex, lp, init, cond_expr, update)
    if lp.cond is not None:
        r = refs(lp.cond)
        if _RELATIONAL.search(lp.cond.replace("->", ".")):
            ks.cond_stack.append((r, True, ks.is_thread(r), lp.cond))
            pushed = True
    ks.loop_stack.append(idx)
    skip = init.start_byte if init is not None else -1
    for c in node.named_children:
        if c.start_byte != skip and c.child_count:
            ex.visit(c)
    ks.loop_stack.pop()
    if pushed:
        ks.cond_stack.pop()


def unroll_before(ex, node) -> int | bool | None:
    """`#pragma unroll [N]` on one of the two lines above the loop (blank lines between allowed)."""
    if not ex.unroll_pragmas:
        return None
    row = node.start_point[0]
    for ln in range(row, max(0, row - 3), -1):  # 1-based lines row .. row-2 precede the loop
        if ln in ex.unroll_pragmas:
            arg = ex.unroll_pragmas[ln]
            if not arg:
                return True
            v = ex.fold(arg)
            return int(v) if isinstance(v, (int, float)) else True
        text = ex.line_bytes[ln - 1] if 0 < ln <= len(ex.line_bytes) else b""
        if text.strip():
            return None
    return None


def for_header(ex, lp: CudaLoop, init, cond, update) -> None:
    ks = ex.ks
    var = init_text = None
    if init is not None:
        if init.type == "declaration":
            d = next(iter(init.children_by_field_name("declarator")), None)
            if d is not None and d.type == "init_declarator":
                var = ex.text(d.child_by_field_name("declarator"))
                v = d.child_by_field_name("value")
                init_text = ex.text(v) if v is not None else None
        elif init.type == "assignment_expression":
            var = ex.text(init.child_by_field_name("left"))
            init_text = ex.text(init.child_by_field_name("right"))
    lp.var, lp.init = var, init_text
    if update is not None:
        lp.step = ex.text(update)
    if var is None or cond is None or update is None:
        return
    # step
    step_kind, step = None, None
    if update.type == "update_expression":
        op = ex.text(update).replace(var, "").strip()
        step_kind, step = ("add", "1") if op == "++" else ("sub", "1") if op == "--" else (None, None)
    elif update.type == "assignment_expression" and ex.text(update.child_by_field_name("left")) == var:
        op = ex.text(update.child_by_field_name("operator"))
        rhs = ex.text(update.child_by_field_name("right"))
        step_kind = {"+=": "add", "-=": "sub", ">>=": "shr", "<<=": "shl", "*=": "mul", "/=": "div"}.get(op)
        step = rhs
        if op == "=":
            m = re.fullmatch(rf"\s*{re.escape(var)}\s*([+-])\s*(.+)", rhs)
            if m:
                step_kind, step = ("add" if m.group(1) == "+" else "sub"), m.group(2)
    if step_kind is None:
        return
    if step_kind == "add":
        r = refs(step)
        lp.grid_stride = any(x.startswith("gridDim.") or x in ks.grid_vars for x in r)
        if lp.grid_stride:
            ks.k.grid_stride_loops.append(GridStrideLoop(var, step, lp.line))
    if cond.type != "binary_expression":
        return
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    op = ex.text(cond.child_by_field_name("operator"))
    if ex.text(left) == var:
        bound = ex.text(right)
    elif ex.text(right) == var:
        bound = ex.text(left)
        op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
    else:
        return
    lp.trip, lp.trip_count = _trip(step_kind, step, init_text or "0", op, bound, ex.fold)


def while_grid_stride(ex, var: str, step: str, rrefs) -> None:
    """`while (i < n) { ...; i += blockDim.x * gridDim.x; }` is a grid-stride loop too."""
    ks = ex.ks
    lp = ks.k.loops[ks.loop_stack[-1]]
    if lp.kind not in ("while", "do") or lp.grid_stride or var not in refs(lp.cond or ""):
        return
    if any(x.startswith("gridDim.") or x in ks.grid_vars for x in rrefs):
        lp.grid_stride, lp.var, lp.step = True, var, f"{var} += {step}"
        ks.k.grid_stride_loops.append(GridStrideLoop(var, " ".join(step.split()), lp.line))
