"""Tile constants used on the wrong axis (NKI211): latent while the constants happen to be equal.

A matmul kernel names its tile sizes after the axes they tile (TILE_M, TILE_K, TILE_N). The kernel itself
says which axis each constant belongs to: `M // TILE_M` trip counts and asserts, and the HBM slices it
indexes (`lhsT[k * TILE_K : ..., m * TILE_M : ...]` with `K, M = lhsT.shape`). A constant whose uses
agree on one axis has that role; a slice of an HBM tensor's M axis offset by TILE_K, or a tile whose free
size is TILE_N filled from an M-axis slice, mixes roles. With the tutorial's sizes TILE_K == TILE_M, so
neither a run nor a size check sees it; the first caller with other tile sizes gets wrong rows.
(aws-neuron/nki-samples fixed both shapes of this in its matmul tutorial: b2be1a5, 5480d25.)
"""

from __future__ import annotations

import ast
from collections import Counter, defaultdict

from ...api.hardware import Target
from ...findings import Severity
from ...parse.nki_model import NkiFile, NkiKernel
from ...parse.pyast import dotted_name
from ..registry import RuleSpec
from .common import check, emit, kernel_findings, kernel_function, walk_nodes

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI211", "tile-constant-on-wrong-axis", "indexing-error", Severity.WARNING,
             "A tile-size constant the kernel uses for one axis (TILE_K for K) offsets or sizes another axis "
             "(M): correct only while the two constants are equal.",
             fix="Use the tile constant of the axis being indexed (TILE_M for the M axis).",
             doc="""\
## What it finds
Tile-size constants take their role from the kernel itself: the trip counts and asserts that divide an
axis symbol by them (`M // TILE_M`, `assert K % BLOCK_K == 0`) and the HBM slices they offset
(`lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:...]` with `K, M = lhsT.shape`). A constant whose uses agree
(at least two, and 60% of them, on one axis) has that axis. The rule reports:
- an HBM tensor slice whose axis is one symbol but whose index uses a constant of another axis
  (`result[(TILES_IN_BLOCK_M * m + bm) * TILE_K + i.p, ...]` where result's axis 0 is M);
- a tile loaded from an HBM slice whose free size is a constant of another axis than the one the load
  reads there (`lhsT_tiles = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), TILE_N))` filled from
  `lhsT[..., m * TILE_M:(m + 1) * TILE_M]`).

## Why it matters on Trainium
Tile sizes are often equal in the sizes a kernel is written and tested at (TILE_K == TILE_M == 128), so
neither a run nor a shape check sees the mix-up; the first caller that changes one tile size (a 64-row M
tile, a smaller K step for SBUF room) gets rows written at the wrong offsets or tiles of the wrong width.
AWS's matmul tutorial shipped both forms and fixed them (nki-samples b2be1a5, 5480d25).

## Example
```python
nl.store(result[(TILES_IN_BLOCK_M * m + bm) * TILE_K + i.p, BLOCK_N * n + i.x], value=packed)
```

## Fix
Use the constant of the axis being indexed (`TILE_M` for result's rows); size tiles by the axis they hold.
"""),
]

_HBM = {"nl.shared_hbm", "nl.hbm", "nl.private_hbm"}
_LOADS = {"nl.load", "nl.load_transpose2d"}


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _unwrap(node: ast.AST) -> ast.AST:
    """`nl.par_dim(TILE_K)` -> `TILE_K`."""
    if isinstance(node, ast.Call) and dotted_name(node.func).endswith("par_dim") and node.args:
        return node.args[0]
    return node


def _axes_of(target: ast.AST, value: ast.AST, params: set[str]) -> tuple[str, list[str | None]] | None:
    """(HBM tensor, its axis symbols) an assignment names: `K, M = lhsT.shape` of a parameter, or an HBM
    allocation `out = nl.ndarray((M, N), ..., buffer=nl.shared_hbm)`."""
    if isinstance(target, ast.Tuple) and isinstance(value, ast.Attribute) and value.attr == "shape" \
            and isinstance(value.value, ast.Name) and value.value.id in params:
        return value.value.id, [e.id if isinstance(e, ast.Name) and e.id != "_" else None for e in target.elts]
    if isinstance(target, ast.Name) and isinstance(value, ast.Call) \
            and dotted_name(value.func) in ("nl.ndarray", "nl.zeros") and value.args \
            and isinstance(value.args[0], ast.Tuple) \
            and any(kw.arg == "buffer" and dotted_name(kw.value) in _HBM for kw in value.keywords):
        return target.id, [e.id if isinstance(e, ast.Name) else None for e in value.args[0].elts]
    return None


def _may_have_two_axes(fn: ast.FunctionDef) -> bool:
    """Whether the kernel can have two axis symbols, read from its statements alone (no walk of its expressions):
    every symbol `_Roles` keeps is named by one of its assignments (or an alias of one: no more names), and an
    assignment is a statement, so it sits in a statement list (a block's, a handler's, a case's)."""
    params = {a.arg for a in fn.args.args}
    symbols: set[str] = set()
    stack: list[ast.AST] = list(fn.body)
    while stack:
        st = stack.pop()
        if isinstance(st, ast.Assign) and len(st.targets) == 1 \
                and (axes := _axes_of(st.targets[0], st.value, params)) is not None:
            symbols.update(s for s in axes[1] if s)
            if len(symbols) >= 2:
                return True
        for part in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(st, part, None)
            if isinstance(block, list):
                stack.extend(block)
    return False


class _Roles:
    """Axis symbols of the kernel's HBM tensors and the axis each tile constant is used for."""

    def __init__(self, fn: ast.FunctionDef, assigns: list[ast.Assign], compares: list[ast.Compare]):
        """The axes from the kernel's `assigns` and `compares` (its nodes of those types, in ast.walk order); the
        votes come after, from `count` (only a kernel with two axis symbols needs them)."""
        self.axes: dict[str, list[str | None]] = {}  # HBM tensor -> axis symbols
        self.votes: dict[str, Counter] = defaultdict(Counter)
        self.bound: set[str] = set()  # names assigned in the kernel (not axis symbols' aliases)
        self.tiled: set[str] = set()  # axis symbols the kernel divides into tiles (M // TILE_M)
        params = {a.arg for a in fn.args.args}
        for node in assigns:
            if len(node.targets) == 1:
                self._assign(node.targets[0], node.value, params)
        # `assert K == K_`: two names of one axis
        self.alias: dict[str, str] = {}
        for node in compares:
            if len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq) \
                    and isinstance(node.left, ast.Name) and isinstance(node.comparators[0], ast.Name):
                a, b = sorted((node.left.id, node.comparators[0].id))
                self.alias[b] = self.alias.get(a, a)
        self.axes = {t: [self.alias.get(s, s) if s else None for s in ax] for t, ax in self.axes.items()}
        self.symbols = {s for ax in self.axes.values() for s in ax if s}

    def count(self, nodes: list[ast.BinOp | ast.Subscript]) -> None:
        """The votes of the kernel's divisions and HBM subscripts (its nodes of those types, in ast.walk order)."""
        for node in nodes:
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod)) \
                    and isinstance(node.left, ast.Name) and self.alias.get(node.left.id, node.left.id) in self.symbols \
                    and isinstance(node.right, ast.Name) and node.right.id not in self.symbols:
                sym = self.alias.get(node.left.id, node.left.id)
                self.votes[node.right.id][sym] += 1  # M // TILE_M, M % BLOCK_M
                self.tiled.add(sym)
            elif isinstance(node, ast.Subscript):
                for axis, sym, expr in self.hbm_axes(node):
                    for c in _names(expr) & self.constants:
                        self.votes[c][sym] += 1

    def _assign(self, target: ast.AST, value: ast.AST, params: set[str]) -> None:
        axes = _axes_of(target, value, params)
        if axes is not None:
            self.axes[axes[0]] = axes[1]
        if isinstance(target, ast.Name):
            self.bound.add(target.id)

    @property
    def constants(self) -> set[str]:
        """Names that are neither axis symbols nor loop variables: tile sizes, block counts."""
        return self.__dict__.setdefault("_consts", {n for n in self.bound | set(self.votes)
                                                    if n.isupper() and n not in self.symbols})

    def hbm_axes(self, sub: ast.Subscript):
        """(axis, symbol, index expression) of a subscript of an HBM tensor with known axes."""
        if not isinstance(sub.value, ast.Name) or sub.value.id not in self.axes:
            return []
        axes = self.axes[sub.value.id]
        idx = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
        if len(idx) != len(axes):
            return []
        return [(i, axes[i], e) for i, e in enumerate(idx) if axes[i]]

    def role(self, const: str) -> str | None:
        v = self.votes.get(const)
        if not v:
            return None
        (sym, n), total = v.most_common(1)[0], sum(v.values())
        return sym if n >= 2 and n / total >= 0.6 else None


def _slice_extent_consts(expr: ast.AST, roles: _Roles) -> set[str]:
    return _names(expr) & roles.constants


@check("NKI211", per_file=True)  # reads the kernel text from the file
def tile_constant_axis_role(nf: NkiFile, t: Target):
    for k in nf.kernels:
        yield from kernel_findings(nf, k, "NKI211", _kernel_roles)


def _kernel_roles(nf: NkiFile, k: NkiKernel):
    """NKI211's findings in one kernel: they read its `def` and the file's path."""
    fn = kernel_function(nf, k)
    if fn is None or not _may_have_two_axes(fn):  # as `len(roles.symbols) < 2` below, without walking the kernel
        return
    # one shared walk: every pass below reads the kernel's nodes of its types in ast.walk's order
    assigns = walk_nodes(nf, fn, ast.Assign)
    roles = _Roles(fn, assigns, walk_nodes(nf, fn, ast.Compare))
    if len(roles.symbols) < 2:
        return
    roles.count(walk_nodes(nf, fn, (ast.BinOp, ast.Subscript)))
    allocs: dict[str, tuple[int, list[ast.AST]]] = {}
    for node in assigns:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call) and dotted_name(node.value.func) in ("nl.ndarray", "nl.zeros") \
                and node.value.args and isinstance(node.value.args[0], ast.Tuple):
            allocs[node.targets[0].id] = (node.lineno, [_unwrap(e) for e in node.value.args[0].elts])
    seen: set[tuple[int, str]] = set()
    for node in walk_nodes(nf, fn, (ast.Subscript, ast.Assign)):
        if isinstance(node, ast.Subscript):
            for axis, sym, expr in roles.hbm_axes(node):
                wrong = [(c, r) for c in sorted(_names(expr) & roles.constants)
                         if (r := roles.role(c)) and r != sym and {r, sym} <= roles.tiled]
                for c, r in wrong:
                    line = node.lineno
                    if (line, c) in seen:
                        continue
                    seen.add((line, c))
                    yield _finding(nf, k, line, node.col_offset, c, r, sym, roles,
                                   f"`{node.value.id}` axis {axis} is {sym}, but its index is offset by `{c}`")
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call) \
                and dotted_name(node.value.func) in _LOADS and node.value.args:
            yield from _load_into(nf, k, node, roles, allocs, seen)


def _load_into(nf: NkiFile, k: NkiKernel, node: ast.Assign, roles: _Roles, allocs, seen):
    """`tiles[i] = nl.load(x[...])`: each free dim of the allocation against the axis the load reads there."""
    dst, src = node.targets[0], node.value.args[0]
    name = dst.value.id if isinstance(dst, ast.Subscript) and isinstance(dst.value, ast.Name) else \
        dst.id if isinstance(dst, ast.Name) else None
    if name not in allocs or not isinstance(src, ast.Subscript):
        return
    src_axes = roles.hbm_axes(src)
    if not src_axes or len(src_axes) != len(roles.axes[src.value.id]):
        return
    lead = 0
    if isinstance(dst, ast.Subscript):  # block indices before the first slice or mgrid index (`i.p`, `i.x`)
        idx = dst.slice.elts if isinstance(dst.slice, ast.Tuple) else [dst.slice]
        for e in idx:
            if isinstance(e, ast.Slice) or isinstance(e, ast.Attribute) and e.attr in ("p", "x", "y", "z"):
                break
            lead += 1
    aline, dims = allocs[name]
    dims = dims[lead:]
    if len(dims) != len(src_axes):
        return
    for (axis, sym, _), dim in zip(src_axes, dims):
        for c in sorted(_names(dim) & roles.constants):
            r = roles.role(c)
            line = aline
            if r and r != sym and {r, sym} <= roles.tiled and (line, c) not in seen:
                seen.add((line, c))
                yield _finding(nf, k, line, 0, c, r, sym, roles,
                               f"`{name}` is sized with `{c}` on the dimension that line "
                               f"{node.lineno} fills from `{src.value.id}` axis {axis} ({sym})")


def _suggest(const: str, role: str, sym: str, roles: _Roles) -> str | None:
    """The constant of the indexed axis: TILE_K used for M -> TILE_M when the kernel has it, else the one with
    the most uses on that axis."""
    if const.endswith(role):
        twin = const[: -len(role)] + sym
        if twin in roles.constants and roles.role(twin) in (None, sym):
            return twin
    ranked = sorted((c for c in roles.constants if roles.role(c) == sym), key=lambda c: (-roles.votes[c][sym], c))
    return ranked[0] if ranked else None


def _finding(nf, k, line, col, const, role, sym, roles: _Roles, what: str):
    other = _suggest(const, role, sym, roles)
    v = roles.votes[const]
    hint = f" (`{other}` is the kernel's {sym} tile)" if other else ""
    return emit("NKI211", nf, line, col + 1, line, col + 1,
                f"{what}, which the kernel uses for {role} ({v[role]} of its {sum(v.values())} uses); it is right "
                f"only while {const} equals the {sym} tile{hint}.",
                {"constant": const, "constant_axis": role, "axis": sym, "votes": dict(v), "suggested": other},
                fix=f"Use the {sym} tile size{f' `{other}`' if other else ''} here instead of `{const}`.",
                confidence="medium")
