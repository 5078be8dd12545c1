"""Shared memory: reads and writes of `__shared__` arrays with their thread-dependent indices.

A collector: functions of the CUDA walker (`ex`, parse/cuda_walk.py) that record one kind of fact.
"""

from __future__ import annotations

import re

from ..cuda_model import SharedAccess
from ..cuda_state import refs

_IDENT_SUB = re.compile(r"(?<![\w.])[A-Za-z_]\w*")


def subscript(ex, node) -> None:
    ks = ex.ks
    if ks is None:
        ex.children(node)
        return
    base, indices = chain(ex, node)
    if base is not None and base.type == "identifier" and ex.text(base) in ks.shared:
        kind = ks.override or "read"
        shared_access(ex, node, ex.text(base), indices, kind)
    elif base is not None:
        ex.visit(base)
    saved, ks.override = ks.override, None
    for ix in indices:
        ex.visit(ix)
    ks.override = saved


def chain(ex, node):
    """subscript chain -> (base node, [index argument-list nodes] outermost last)."""
    indices = []
    while node is not None and node.type == "subscript_expression":
        ix = node.child_by_field_name("indices")
        if ix is not None:
            indices.append(ix)
        node = node.child_by_field_name("argument")
    return node, list(reversed(indices))


def shared_access(ex, node, array: str, indices, kind: str) -> None:
    ks = ex.ks
    parts = ["".join(ex.text(i).split()) for i in indices]
    itext = "".join(parts)
    r = refs(itext)
    thread_index = ks.is_thread(ks.closure(r))
    thread_cond = any(c[2] for c in ks.cond_stack)
    stmt = ex.stmt.start_byte if ex.stmt is not None else node.start_byte
    conds = " && ".join(c[3] for c in ks.cond_stack if c[2])
    key = itext
    if ks.aliases and r & ks.aliases.keys():
        key = _IDENT_SUB.sub(lambda m: ks.aliases.get(m.group(0), m.group(0)), itext)
    lead_uniform = len(parts) > 1 and not ks.is_thread(ks.closure(refs(parts[0])))
    ks.k.shared_accesses.append(SharedAccess(
        array, kind, itext, thread_index, thread_cond, ex.line(node), ex.column(node),
        node.start_byte, stmt, tuple(ks.loop_stack), conds, key, lead_uniform))


def scalar_shared_reads(ex, node) -> None:
    """Reads of scalar `__shared__` variables (`s_mean`) in a statement: identifiers are not walked."""
    ks = ex.ks
    text = ex.text(node)
    names = refs(text) & ks.scalar_shared
    if not names:
        return
    first = node.named_children[0] if node.named_children else None
    if first is not None and first.type == "assignment_expression":
        left = first.child_by_field_name("left")
        op = first.child_by_field_name("operator")
        right = first.child_by_field_name("right")
        if left is not None and left.type == "identifier" and op is not None and ex.text(op) == "=":
            names -= {ex.text(left)} - refs(ex.text(right) if right is not None else "")
    for name in sorted(names):
        shared_access(ex, node, name, (), "read")
