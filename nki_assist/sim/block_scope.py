"""When a block of a block-dimension tile is provably dead, from the kernel's source.

A tile `T = nl.ndarray((86, 2, nl.par_dim(128), 1024))` assigned once at the top of a kernel function, used
only as `T[i0, i1, ...]` (the target of an assignment, or an argument of an NKI call), where every use sits
inside the same loop nest `for i0 in nl.affine_range(..): for i1 in nl.affine_range(..):` and indexes block
dimension 0 by `i0` and 1 by `i1`: once the iteration (i0, i1) = (a, b) of the inner loop ends, block
(a, b, ...) is never touched again. Later iterations have other loop values and no use sits outside the nest;
the loops are directly nested (no other loop between them re-runs the inner one with the same values), the
loop variables are never rebound in their bodies, and the tile never escapes (no bare use of its name). The
result is the chain ((loop header line, block dimension), ...), outermost first; () when nothing is provable.
"""

from __future__ import annotations

import ast

RANGE_CALLS = {"affine_range", "sequential_range", "static_range"}
NONE: tuple = ((), set())


def _parents(fn: ast.AST) -> dict:
    par = {}
    for node in ast.walk(fn):
        for child in ast.iter_child_nodes(node):
            par[child] = node
    return par


def _imported(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return names


def _root(func) -> str | None:
    while isinstance(func, ast.Attribute):
        func = func.value
    return func.id if isinstance(func, ast.Name) else None


def _is_range_loop(node) -> bool:
    if not isinstance(node, ast.For) or not isinstance(node.target, ast.Name):
        return False
    call = node.iter
    if not isinstance(call, ast.Call):
        return False
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    return name in RANGE_CALLS


def _stores(body, name: str) -> bool:
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
                return True
            if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
                return True
    return False


def chain(tree: ast.AST, line: int, name: str, func_name: str) -> tuple:
    """The dead-block chain of tile `name` allocated by the statement at `line` of function `func_name`, and
    the names the calls that take its blocks are reached through (the caller checks they are NKI's):
    ((chain...), {names}); ((), set()) when nothing is provable."""
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == func_name:
            for stmt in fn.body:
                if (isinstance(stmt, ast.Assign) and stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno)
                        and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                        and stmt.targets[0].id == name):
                    try:
                        return _chain(fn, stmt, name, _imported(tree))
                    except (ValueError, AttributeError):
                        return NONE
    return NONE


def _chain(fn, alloc, name: str, modules: set[str]) -> tuple:
    args = fn.args
    if name in {a.arg for a in args.args + args.posonlyargs + args.kwonlyargs} | {
            a.arg for a in (args.vararg, args.kwarg) if a is not None}:
        return NONE
    par = _parents(fn)
    sites = []
    roots: set[str] = set()
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Name) and node.id == name):
            continue
        if node is alloc.targets[0]:
            continue
        if not isinstance(node.ctx, ast.Load):
            return NONE  # assigned again or deleted
        sub = par.get(node)
        if not isinstance(sub, ast.Subscript) or sub.value is not node:
            return NONE  # the tile itself escapes (passed, returned, aliased)
        use = par.get(sub)
        if isinstance(use, (ast.Assign, ast.AugAssign)):
            targets = use.targets if isinstance(use, ast.Assign) else [use.target]
            if not any(t is sub for t in targets):
                return NONE  # `x = T[i]`: a view kept in a variable
        elif isinstance(use, ast.keyword):
            call = par.get(use)
            if not isinstance(call, ast.Call) or _root(call.func) not in modules:
                return NONE
            roots.add(_root(call.func))
        elif isinstance(use, ast.Call):
            if sub not in use.args or _root(use.func) not in modules:
                return NONE
            roots.add(_root(use.func))
        else:
            return NONE
        elts = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
        if any(isinstance(e, ast.Starred) or (isinstance(e, ast.Constant) and e.value in (None, Ellipsis))
               for e in elts):
            return NONE  # the block dimensions may not be the first indices
        loops = []
        prev, p = sub, par.get(sub)
        while p is not None and p is not fn:
            if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.comprehension,
                              ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                return NONE  # used from a nested scope
            if isinstance(p, (ast.For, ast.AsyncFor, ast.While)):
                if not any(prev is s for s in p.body):
                    return NONE  # in a loop header or else-branch
                loops.append(p)
            prev, p = p, par.get(p)
        loops.reverse()
        sites.append((elts, loops))
    if not sites:
        return NONE
    out = []
    depth = 0
    while True:
        loop = sites[0][1][depth] if depth < len(sites[0][1]) else None
        if loop is None or any(depth >= len(ls) or ls[depth] is not loop for _, ls in sites):
            break
        if not _is_range_loop(loop) or loop.orelse:
            break
        var = loop.target.id
        if _stores(loop.body, var):
            break
        dims = None
        for elts, _ in sites:
            here = {i for i, e in enumerate(elts) if isinstance(e, ast.Name) and e.id == var}
            dims = here if dims is None else dims & here
        dims = sorted(dims or ())
        if not dims:
            break
        out.append((loop.lineno, loop.iter.end_lineno or loop.lineno, dims[0]))
        depth += 1
    return tuple(out), roots
