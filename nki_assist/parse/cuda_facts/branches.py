"""Conditions: `if` / `?:` branches, bounds guards (`if (row < M)`) and early exits.

A collector: functions of the CUDA walker (`ex`, parse/cuda_walk.py) that record one kind of fact.
"""

from __future__ import annotations

from ..cuda_model import BoundsGuard
from ..cuda_state import _RELATIONAL, _is_exit, refs


def if_statement(ex, node) -> None:
    if ex.ks is None:
        ex.children(node)
        return
    cond = node.child_by_field_name("condition")
    expr = cond.named_children[0] if cond is not None and cond.named_children else cond
    branches(ex, node, expr, exit_guard=True)


def conditional(ex, node) -> None:
    if ex.ks is None:
        ex.children(node)
        return
    branches(ex, node, node.child_by_field_name("condition"), exit_guard=False)


def branches(ex, node, cond, *, exit_guard: bool) -> None:
    """An `if` or `?:`: record a thread-index bounds guard, then visit both branches under it."""
    ks = ex.ks
    ctext = ex.text(cond) if cond is not None else ""
    r = refs(ctext)
    relational = bool(_RELATIONAL.search(ctext.replace("->", ".")))
    thread = ks.is_thread(r)
    if relational and thread:
        ks.k.bounds_guards.append(BoundsGuard(" ".join(ctext.split()), ex.line(node)))
    cons = node.child_by_field_name("consequence")
    if exit_guard and relational and cons is not None and _is_exit(cons):
        ks.ret_guards |= r  # `if (i >= n) return;` guards everything after it
    if cond is not None:
        ex.visit(cond)
    ks.cond_stack.append((r, relational, thread, ctext))
    for field in ("consequence", "alternative"):
        c = node.child_by_field_name(field)
        if c is not None:
            ex.visit(c)
    ks.cond_stack.pop()
