"""Statements of a kernel body, struct-field reads of the thread builtins, and the kernel's summary facts
when its body ends.

A collector: functions of the CUDA walker (`ex`, parse/cuda_walk.py) that record one kind of fact.
"""

from __future__ import annotations

from ..cuda_model import ThreadIndexUse
from ..cuda_state import _BUILTIN_HEADS, _BUILTINS, _KernelState
from . import shared


def statement(ex, node) -> None:
    ex.stmt = node
    if ex.ks is not None and ex.ks.scalar_shared:
        shared.scalar_shared_reads(ex, node)
    ex.children(node)


def field_expression(ex, node) -> None:
    if ex.ks is None:
        ex.children(node)
        return
    head = ex.src[node.start_byte:node.start_byte + 9]
    if head[:8] not in _BUILTIN_HEADS:
        ex.children(node)
        return
    arg = node.child_by_field_name("argument")
    if arg is not None and arg.type == "identifier":
        base = ex.text(arg)
        if base in _BUILTINS:
            f = node.child_by_field_name("field")
            ex.ks.k.thread_index_uses.append(ThreadIndexUse(f"{base}.{ex.text(f)}", ex.line(node)))
            return
    ex.children(node)


def finish_kernel(ex, ks: _KernelState) -> None:
    k = ks.k
    seen = set()
    epi = []
    for h in k.epilogue:
        if (h.kind, h.detail) not in seen:
            seen.add((h.kind, h.detail))
            epi.append(h)
    k.epilogue = sorted(epi, key=lambda h: h.line)
    params = {p.name for p in k.params}
    k.locals = {n: t for n, t in ks.types.items() if n not in params}
