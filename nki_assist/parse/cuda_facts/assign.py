"""Assignments: accumulators, scale factors, global stores (guarded or not), `++`/`--` updates.

A collector: functions of the CUDA walker (`ex`, parse/cuda_walk.py) that record one kind of fact.
"""

from __future__ import annotations

from ..cuda_model import FLOAT_DTYPES, Accumulator, EpilogueHint, GlobalStore, ScaleUse, canonical_dtype
from ..cuda_state import _BUILTIN_FIELDS, _is_self_update, refs
from ..cuda_vocab import inline_scales, scaled_by
from . import decls, loops, shared


def update_expression(ex, node) -> None:
    ks = ex.ks
    arg = node.child_by_field_name("argument")
    if ks is not None and arg is not None and arg.type == "subscript_expression":
        base, indices = shared.chain(ex, arg)
        if base is not None and base.type == "identifier" and ex.text(base) in ks.shared:
            shared.shared_access(ex, arg, ex.text(base), indices, "read")
            shared.shared_access(ex, arg, ex.text(base), indices, "write")
            for ix in indices:
                ex.visit(ix)
            return
    ex.children(node)


def assignment(ex, node) -> None:
    ks = ex.ks
    if ks is None:
        ex.children(node)
        return
    left = node.child_by_field_name("left")
    right = node.child_by_field_name("right")
    op_node = node.child_by_field_name("operator")
    op = ex.text(op_node) if op_node is not None else "="
    rtext = ex.text(right) if right is not None else ""
    rrefs = refs(rtext)
    target = left
    while target is not None and target.type in ("parenthesized_expression", "field_expression"):
        nxt = target.child_by_field_name("argument") if target.type == "field_expression" else (
            target.named_children[0] if target.named_children else None)
        if nxt is None:
            break
        target = nxt
    if ks.scale_factors or "sqrt" in rtext:
        scale_uses(ex, node, target, op, rtext)
    handled = False
    if target is not None and target.type == "subscript_expression":
        base, indices = shared.chain(ex, target)
        bname = ex.text(base) if base is not None and base.type == "identifier" else None
        if bname in ks.shared:
            if op != "=":
                shared.shared_access(ex, target, bname, indices, "read")
            shared.shared_access(ex, target, bname, indices, "write")
            handled = True
        elif bname in ks.global_ptrs:
            itext = "".join(ex.text(i) for i in indices)
            global_store(ex, node, target, ks.global_ptrs[bname], itext, rtext, rrefs)
            handled = True
        elif bname in ks.types and (op in ("+=", "-=") or (
                op == "=" and _is_self_update("".join(ex.text(target).split()), right, ex))):
            accumulator(ex, bname, node)  # acc[i][j] += ... / acc[i][j] = fmaf(a, b, acc[i][j])
        if handled or bname is not None:
            for ix in indices:
                ex.visit(ix)
            handled = True
    elif target is not None and target.type == "pointer_expression" and ex.text(target).startswith("*"):
        arg = target.child_by_field_name("argument")
        atext = ex.text(arg) if arg is not None else ""
        ptr = next((ks.global_ptrs[x] for x in refs(atext) if x in ks.global_ptrs), None)
        if ptr is not None:
            global_store(ex, node, target, ptr, atext, rtext, rrefs)
        if arg is not None:
            ex.visit(arg)
        handled = True
    elif target is not None and target.type == "identifier":
        name = ex.text(target)
        if name in ks.scalar_shared:
            shared.shared_access(ex, target, name, (), "write")
        elif op in ("+=", "-="):
            if op == "+=" and ks.loop_stack:
                loops.while_grid_stride(ex, name, rtext, rrefs)
            accumulator(ex, name, node)
        elif op == "=" and _is_self_update(name, right, ex):
            accumulator(ex, name, node)
        else:
            decls.assign_deps(ex, name, rrefs, replace=(op == "="))
            if op == "=":
                ks.hints[name] = decls.hints_of(ex, rtext, rrefs, ex.line(node))
            else:
                ks.hints.setdefault(name, []).extend(decls.hints_of(ex, rtext, rrefs - {name}, ex.line(node)))
        handled = True
    if not handled and left is not None:
        ex.visit(left)
    if right is not None:
        ex.visit(right)


def scale_uses(ex, node, target, op: str, rtext: str) -> None:
    ks = ex.ks
    tname = ex.text(target) if target is not None else "?"
    if tname in ks.scale_factors:
        return  # the factor's own definition (`scale = scale * log2e`)
    line = ex.line(node)
    for f in scaled_by(rtext, op, ks.scale_factors):
        origin, fline = ks.scale_factors[f]
        ks.k.scale_uses.append(ScaleUse(f, origin, fline, line, " ".join(tname.split())))
    for expr in inline_scales(rtext):
        r = refs(expr)
        if any(x in ks.types and not ks.types[x].endswith("*") and x not in ks.shared
               and canonical_dtype(ks.types[x].replace("const", "").strip()) not in FLOAT_DTYPES
               or x in ks.env for x in r):
            e = " ".join(expr.split())
            ks.k.scale_uses.append(ScaleUse(e, e, line, line, " ".join(tname.split())))


def accumulator(ex, name: str, node, dtype_override: str | None = None) -> None:
    ks = ex.ks
    if name in ks.acc_seen or not ks.loop_stack:
        return
    pos = ks.decl_pos.get(name)
    if pos is None or pos < 0:
        return
    if not any(ks.k.loops[i].start > pos for i in ks.loop_stack):
        return
    dtype = dtype_override or ks.types.get(name, "").rstrip("*").replace("const ", "").strip() or None
    if dtype_override is None:
        canon = canonical_dtype(dtype)
        if canon not in FLOAT_DTYPES:
            return
    ks.acc_seen.add(name)
    ks.k.accumulators.append(Accumulator(name, dtype, ex.line(node)))


def global_store(ex, node, target, ptr: str, itext: str, rtext: str, rrefs: set[str]) -> None:
    ks = ex.ks
    ir = refs(itext)
    closure = ks.closure(ir)
    thread_indexed = ks.is_thread(closure)
    guard_refs: set[str] = set(ks.ret_guards)
    for r, relational, _, _ in ks.cond_stack:
        if relational:
            guard_refs |= r
    guarded = "min(" in itext or "clamp" in itext
    if not guarded:
        common = closure & guard_refs
        guarded = ks.is_thread(common)
        if not guarded:
            guarded = ks.is_thread(ks.closure(guard_refs) & ir - set(_BUILTIN_FIELDS))
    ks.k.global_stores.append(GlobalStore(ptr, " ".join(itext.split()), ex.line(node),
                                          ex.column(target), thread_indexed, guarded))
    line = ex.line(node)
    hints = decls.hints_of(ex, rtext, rrefs, line)
    if ptr in rrefs or any(ks.global_ptrs.get(x) == ptr for x in rrefs):
        hints.append(EpilogueHint("accumulate", ptr, line))
    ks.k.epilogue.extend(hints)
