"""Calls: barriers, warp shuffles, atomics, fast-math intrinsics, tensor-core calls, inline PTX.

A collector: functions of the CUDA walker (`ex`, parse/cuda_walk.py) that record one kind of fact.
"""

from __future__ import annotations

import re

from ..cuda_model import Atomic, Barrier, FastMath, TensorCoreUse, WarpShuffle
from ..cuda_state import _base_name
from ..cuda_vocab import (
    APPROX_PTX,
    ATOMIC,
    BLOCK_BARRIERS,
    FAST_MATH,
    GELU_CONSTANTS,
    PTX_BARRIER,
    PTX_MMA,
    SHARED_WRITERS,
    SHUFFLE,
    TENSOR_CORE_CALLS,
    WARP_BARRIERS,
    ptx_mma_dtypes,
)
from . import assign, decls


def call(ex, node) -> None:
    fn = node.child_by_field_name("function")
    args = node.child_by_field_name("arguments")
    ksyn = next((c for c in node.named_children if c.type == "kernel_call_syntax"), None)
    if ksyn is not None and fn is not None:
        decls.launch(ex, node, fn, ksyn)
        ex.children(node)
        return
    ks = ex.ks
    if ks is None or fn is None:
        ex.children(node)
        return
    if fn.type == "field_expression":
        f = fn.child_by_field_name("field")
        name = ex.text(f) if f is not None else ""
        method = True
    else:
        full = ex.text(fn.child_by_field_name("name") if fn.type == "template_function" else fn)
        name = full.split("::")[-1].strip()
        method = False
    k = ks.k
    line = ex.line(node)
    arg_nodes = args.named_children if args is not None else []
    if not method and not name.startswith("__"):
        k.calls.append((name, line))  # filtered to this file's __device__ functions at the end
    if name in BLOCK_BARRIERS or (name == "sync" and (method or fn.type == "qualified_identifier")):
        kind = "grid" if "grid" in ex.text(fn) else "block"
        k.barriers.append(Barrier(kind, name, line, node.start_byte))
        k.syncthreads.append(line)
    elif name in WARP_BARRIERS:
        k.barriers.append(Barrier("warp", name, line, node.start_byte))
    elif SHUFFLE.match(name) and (name.startswith("__") or method or name == "reduce"):
        k.warp_shuffles.append(WarpShuffle(name, line))
    elif not method and (m := ATOMIC.match(name)):
        atomic(ex, node, m.group(1).lower(), arg_nodes, line)
        visit_args(ex, arg_nodes, first_kind="atomic")
        return
    elif name in FAST_MATH and not method:
        if name in ("tanhf", "tanh"):
            stmt = ex.text(ex.stmt) if ex.stmt is not None else ""
            if GELU_CONSTANTS.search(stmt) or "gelu" in k.name.lower():
                k.fast_math.append(FastMath(name, line))
        else:
            k.fast_math.append(FastMath(name, line))
    elif name in TENSOR_CORE_CALLS:
        frags = [ks.fragments.get(ex.text(a)) for a in arg_nodes]
        a = frags[1] if len(frags) > 1 and frags[1] else None
        b = frags[2] if len(frags) > 2 and frags[2] else None
        c = frags[0] if frags and frags[0] else None
        k.tensor_core.append(TensorCoreUse("wmma", name, (a[1] if a else None, b[1] if b else None,
                                                          c[1] if c else None), line))
        if arg_nodes:
            acc = ex.text(arg_nodes[0])
            if len(arg_nodes) == 4 and ex.text(arg_nodes[3]) == acc:
                assign.accumulator(ex, acc, node, dtype_override=c[1] if c else None)
    if name in SHARED_WRITERS:
        ex.visit(fn)
        visit_args(ex, arg_nodes, first_kind="write")
        return
    ex.children(node)


def visit_args(ex, arg_nodes, first_kind: str) -> None:
    ks = ex.ks
    for i, a in enumerate(arg_nodes):
        if i == 0:
            ks.override = first_kind
            ex.visit(a)
            ks.override = None
        else:
            ex.visit(a)


def atomic(ex, node, op: str, arg_nodes, line: int) -> None:
    ks = ex.ks
    target = ex.text(arg_nodes[0]) if arg_nodes else "?"
    base = _base_name(target)
    dtype = None
    if base is not None and base in ks.types:
        dtype = ks.types[base].rstrip("*").replace("const ", "").strip()
    if dtype is None and len(arg_nodes) > 1:
        val = ex.text(arg_nodes[1]).strip()
        if re.fullmatch(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?[fF]", val):
            dtype = "float"
        elif val in ks.types:
            dtype = ks.types[val].rstrip("*")
    ks.k.atomics.append(Atomic(op, dtype, " ".join(target.split()), line))


def gnu_asm(ex, node) -> None:
    ks = ex.ks
    if ks is None:
        return
    text = ex.text(node)
    line = ex.line(node)
    for m in PTX_MMA.finditer(text):
        api = "wgmma" if m.group(1).startswith("wgmma") else "mma.sync"
        ks.k.tensor_core.append(TensorCoreUse(api, m.group(0), ptx_mma_dtypes(m.group(0)), line))
    for m in APPROX_PTX.finditer(text):
        ks.k.fast_math.append(FastMath(m.group(0), line))
    if PTX_BARRIER.search(text):
        ks.k.barriers.append(Barrier("block", "bar.sync", line, node.start_byte))
        ks.k.syncthreads.append(line)
