"""The extra size review adds when the spec's sizes let two dimensions or two tile constants coincide.

A kernel that uses TILE_K where the rows are M (or K where it meant M) computes the right answer whenever the two
are equal, and a spec whose sizes all have M == K, or whose tiles are all min(dim, 128) = 128, can never show it.
This module reads the kernel (ast only, nothing runs): which input axis each shape name is, the tile constants
(`M // TILE_M`) and their values at every size, and the kernel's own asserts. When a pair coincides at every
selected size and some size can tell them apart, it derives ONE more size, "distinct-dims": dimensions pairwise
distinct and no one a multiple of another, every tile division exact, every assert true, untiled dimensions no
larger than the spec's, the smallest such in input bytes. Pairs that no size can separate (two literal 128s) are
said in a note: only the static rule (NKI211) sees a mix-up of those.
"""

from __future__ import annotations

import ast
import itertools
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..api.hardware import Target
from ..parse import intexpr
from .spec import PortSpec, SizeSpec, _module_functions

NAME = "distinct-dims"
MODES = ("auto", "always", "off")
_SMALL = tuple(range(16, 129, 16))  # one partial-free tile: any of these fits the 128 partitions
_LARGE = tuple(128 * k for k in range(2, 17))  # whole 128-row tiles (no ragged tail), up to 2048
_MAX_HEADS = 20_000  # combinations of the coinciding axes' values looked at
_ENOUGH = 64  # legal sizes compared before the search settles
_SEARCH_S = 0.5  # the search stops here with the best size so far (many symbols, each free)


_MISSING = object()


_Unknown = intexpr.Unknown  # not evaluable from the source alone


@dataclass
class Coincidence:
    kind: str  # "dims" (two spec symbols) or "tiles" (two tile constants of the kernel)
    names: tuple[str, str]
    values: list[int]  # the common value at each selected size
    movable: bool  # some size can tell them apart

    def text(self) -> str:
        vals = sorted(set(self.values))
        return f"{self.names[0]} = {self.names[1]} = {'/'.join(map(str, vals))}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "names": list(self.names), "values": self.values, "movable": self.movable}


@dataclass
class DistinctPlan:
    mode: str
    coincidences: list[Coincidence] = field(default_factory=list)
    size: SizeSpec | None = None
    tiles: dict[str, int] = field(default_factory=dict)  # tile constants at the added size
    why: str = ""
    reason: str = ""  # what coincides at every size of the spec
    refused: str | None = None  # the kernel's assert refused the size at run time (review drops it)
    notes: list[str] = field(default_factory=list)

    def dims_text(self) -> str:
        """"K=48, M=256, N=80; TILE_K=48, TILE_M=128": the added size and its tile constants."""
        if self.size is None:
            return ""
        tiles = ", ".join(f"{t}={v}" for t, v in self.tiles.items())
        return ", ".join(f"{k}={v}" for k, v in self.size.bindings.items()) + (f"; {tiles}" if tiles else "")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.size.name if self.size else None, "added_by": "nki-assist", "mode": self.mode,
                "bindings": self.size.bindings if self.size else None, "tiles": self.tiles, "why": self.why,
                "ran": self.size is not None and self.refused is None, "refused": self.refused,
                "coincidences": [c.to_json() for c in self.coincidences]}


# ---- reading the kernel -----------------------------------------------------------------------------

def _tile_sizes(target: Target) -> dict[str, int]:
    # nl.tile_size as the simulator defines it (sim.language.tile_size_for), read without importing the simulator
    return {"pmax": target.partitions, "gemm_stationary_fmax": target.stationary_fmax, "gemm_moving_fmax": 512,
            "psum_fmax": target.psum_bank_fp32, "psum_bank_fmax": target.psum_bank_fp32}


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _no_zero_divisor(node: ast.BinOp, a: Any, b: Any) -> None:
    if isinstance(node.op, (ast.FloorDiv, ast.Mod, ast.Div)) and b == 0:
        raise _Unknown("division by zero")


class _Eval:
    """Integer arithmetic over names, min/max/abs/int, comparisons and nl.tile_size.*; anything else is _Unknown."""

    def __init__(self, tiles: dict[str, int]):
        self.tiles = tiles
        self.arith = intexpr.Arith(functions={"min": min, "max": max, "abs": abs, "int": int}, logic=True,
                                   unary_plus=False, attribute=self._tile_size, check=_no_zero_divisor)

    def _tile_size(self, node: ast.Attribute) -> int:
        if isinstance(node.value, ast.Attribute) and node.value.attr == "tile_size" and node.attr in self.tiles:
            return self.tiles[node.attr]
        raise _Unknown(type(node).__name__)

    def __call__(self, node: ast.AST, env: dict[str, Any]) -> Any:
        return intexpr.value(node, env, self.arith)


@dataclass
class KernelDims:
    """What the kernel says about its dimensions, in spec symbols."""

    shape_names: dict[str, str | int]  # kernel local -> spec symbol (or a literal dim)
    module_env: dict[str, Any]
    steps: list[tuple[str, ast.AST]]  # kernel-level `NAME = expr`, in order
    asserts: list[ast.AST]
    tiling: list[tuple[str, str | int]]  # (spec symbol, tile constant name or literal) from `M // TILE_M`, `M % T`
    evaluate: _Eval
    _deps: dict[int, tuple[str, ...]] = field(default_factory=dict)
    _memo: dict[tuple, Any] = field(default_factory=dict)

    def env(self, bindings: dict[str, int]) -> dict[str, Any]:
        env = dict(self.module_env)
        for local, sym in self.shape_names.items():
            v = sym if isinstance(sym, int) else bindings.get(sym)
            if v is not None:
                env[local] = v
        for name, expr in self.steps:
            try:
                env[name] = self.value(expr, env)
            except (_Unknown, TypeError, ValueError, ZeroDivisionError, OverflowError):
                env.pop(name, None)  # a later, unknown rebinding: not the value an earlier line computed
        return env

    def value(self, expr: ast.AST, env: dict[str, Any]) -> Any:
        """`evaluate`, memoised on the values of the names the expression reads (the size search asks often)."""
        deps = self._deps.get(id(expr))
        if deps is None:
            deps = self._deps[id(expr)] = tuple(sorted(_names(expr)))
        key = (id(expr), tuple(env.get(n, _MISSING) for n in deps))
        hit = self._memo.get(key, _MISSING)
        if hit is _MISSING:
            try:
                hit = ("ok", self.evaluate(expr, env))
            except (_Unknown, TypeError, ValueError, ZeroDivisionError, OverflowError) as exc:
                hit = ("raise", exc)
            self._memo[key] = hit
        if hit[0] == "raise":
            raise hit[1]
        return hit[1]

    def tile_constants(self) -> dict[str, set[str]]:
        """Tile constant name -> the spec symbols it divides."""
        out: dict[str, set[str]] = {}
        for sym, tile in self.tiling:
            if isinstance(tile, str):
                out.setdefault(tile, set()).add(sym)
        return out

    def depends_on_size(self, name: str) -> bool:
        """The constant's value is computed from an input dimension (`TILE_M = min(M, 128)`)."""
        seen, todo = set(), [name]
        exprs = dict(self.steps)
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            if n in self.shape_names and not isinstance(self.shape_names[n], int):
                return True
            if n in exprs:
                todo.extend(_names(exprs[n]))
        return False


def _kernel_def(tree: ast.Module, name: str | None) -> ast.FunctionDef | None:
    fns = _module_functions(tree.body)
    if name in fns:
        return fns[name]
    return None


def read_kernel(spec: PortSpec, target: Target) -> KernelDims | None:
    """The kernel's dimension facts; None when the source cannot be read or the kernel is not a plain def."""
    try:
        tree = ast.parse(Path(spec.nki_path).read_text(encoding="utf-8-sig"))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    fn = _kernel_def(tree, spec.kernel_name)
    if fn is None:
        return None
    ev = _Eval(_tile_sizes(target))
    module_env: dict[str, Any] = {}
    for node in tree.body:  # module-level integer constants (TILE_K = 128, TILE_M = nl.tile_size.pmax)
        for name, expr in _assigned(node):
            try:
                module_env[name] = ev(expr, module_env)
            except (_Unknown, TypeError, ValueError, ZeroDivisionError, OverflowError):
                module_env.pop(name, None)
    positional = [n for n, i in spec.inputs.items() if not i.keyword]
    args = fn.args.posonlyargs + fn.args.args
    params = {a.arg: positional[i] for i, a in enumerate(args) if i < len(positional)}
    params.update({n: n for n, i in spec.inputs.items() if i.keyword})
    shape_names: dict[str, str | int] = {}
    # parameters the spec does not pass keep their defaults (TILES_IN_BLOCK_M=8); a passed plain value is that value
    defaults = dict(zip([a.arg for a in args][len(args) - len(fn.args.defaults):], fn.args.defaults))
    defaults.update({a.arg: d for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is not None})
    steps: list[tuple[str, ast.AST]] = [(n, d) for n, d in defaults.items() if n not in params]
    for name, inp in params.items():
        value = spec.inputs[inp].value if inp in spec.inputs and spec.inputs[inp].kind == "value" else None
        if isinstance(value, int) and not isinstance(value, bool):
            steps.append((name, ast.Constant(value)))
    asserts: list[ast.AST] = []

    def axis(param: str, i: int) -> str | int | None:
        inp = spec.inputs.get(params.get(param, ""))
        shape = inp.shape if inp is not None else None
        return shape[i] if shape and -len(shape) <= i < len(shape) else None

    for node in _straight_line(fn.body):
        if isinstance(node, ast.Assert):  # `a and b` as two tests: each reads fewer names, so memoises better
            asserts.extend(node.test.values if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And)
                           else [node.test])
            continue
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        tgt, val = node.targets[0], node.value
        if isinstance(val, ast.Attribute) and val.attr == "shape" and isinstance(val.value, ast.Name) \
                and val.value.id in params and isinstance(tgt, ast.Tuple):
            for i, e in enumerate(tgt.elts):
                if isinstance(e, ast.Name) and e.id != "_" and (d := axis(val.value.id, i)) is not None:
                    shape_names[e.id] = d
        elif isinstance(tgt, ast.Name) and isinstance(val, ast.Subscript) and isinstance(val.value, ast.Attribute) \
                and val.value.attr == "shape" and isinstance(val.value.value, ast.Name) \
                and val.value.value.id in params and isinstance(val.slice, ast.Constant) \
                and isinstance(val.slice.value, int):
            if (d := axis(val.value.value.id, val.slice.value)) is not None:
                shape_names[tgt.id] = d
        else:
            steps.extend(_assigned(node))
    tiling: list[tuple[str, str | int]] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod)) \
                and isinstance(node.left, ast.Name) and isinstance(shape_names.get(node.left.id), str):
            right = node.right
            if isinstance(right, ast.Name) and right.id not in shape_names:
                tiling.append((shape_names[node.left.id], right.id))
            elif isinstance(right, ast.Constant) and isinstance(right.value, int) and right.value > 1:
                tiling.append((shape_names[node.left.id], right.value))
            elif isinstance(right, ast.Attribute):
                try:
                    tiling.append((shape_names[node.left.id], int(ev(right, {}))))
                except _Unknown:
                    pass
    return KernelDims(shape_names, module_env, steps, asserts, list(dict.fromkeys(tiling)), ev)


def _assigned(node: ast.AST) -> list[tuple[str, ast.AST]]:
    """`A = x` and `A, B = x, y` as (name, expression) pairs; nothing for other statements."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
        return []
    tgt, val = node.targets[0], node.value
    if isinstance(tgt, ast.Name):
        return [(tgt.id, val)]
    if isinstance(tgt, ast.Tuple) and isinstance(val, ast.Tuple) and len(tgt.elts) == len(val.elts):
        return [(t.id, v) for t, v in zip(tgt.elts, val.elts) if isinstance(t, ast.Name)]
    return []


def _straight_line(body: list[ast.stmt]):
    """Kernel statements outside loops (the ones that run once, before any tile is touched)."""
    for node in body:
        if isinstance(node, (ast.If, ast.With, ast.Try)):
            yield from _straight_line(node.body)
        elif not isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node


# ---- the plan ---------------------------------------------------------------------------------------

def _symbols(spec: PortSpec) -> list[str]:
    out: list[str] = []
    for inp in spec.inputs.values():
        for s in inp.symbols:
            if s not in out:
                out.append(s)
    return out


def _tile_values(kd: KernelDims, tiles: list[str], bindings: dict[str, int]) -> dict[str, int]:
    env = kd.env(bindings)
    return {t: env[t] for t in tiles if isinstance(env.get(t), int) and not isinstance(env.get(t), bool)}


def coincidences(spec: PortSpec, sizes: list[SizeSpec], kd: KernelDims | None) -> list[Coincidence]:
    """Pairs of dimensions, and of tile constants tiling different dimensions, equal at every size."""
    out: list[Coincidence] = []
    if not sizes:
        return out
    syms = _symbols(spec)
    for a, b in itertools.combinations(syms, 2):
        vals = [s.bindings.get(a) for s in sizes]
        if all(v is not None and v == s.bindings.get(b) for v, s in zip(vals, sizes)) and any(v > 1 for v in vals):
            out.append(Coincidence("dims", (a, b), vals, True))
    if kd is None:
        return out
    tiles = kd.tile_constants()
    per_size = [_tile_values(kd, list(tiles), s.bindings) for s in sizes]
    for a, b in itertools.combinations(sorted(tiles), 2):
        if tiles[a] & tiles[b] or not all(a in v and b in v for v in per_size):
            continue  # tiles of one axis (BLOCK_M, TILE_M) have no roles to mix up
        vals = [v[a] for v in per_size]
        if all(v[a] == v[b] for v in per_size):
            out.append(Coincidence("tiles", (a, b), vals, kd.depends_on_size(a) or kd.depends_on_size(b)))
    return out


def _candidates(values: list[int], tiled: bool) -> list[int]:
    """Values one dimension may take: 1 stays 1 (a batch of one); a tiled axis may grow to more tiles; an axis
    the kernel never tiles stays within the spec's largest value (it may be one tile, on the partitions)."""
    if max(values) <= 1:
        return [1]
    if tiled:
        return [*_SMALL, *_LARGE]
    return [v for v in (*_SMALL, *_LARGE) if v <= max(values)] or [max(values)]


def _apart(a: int, b: int) -> bool:
    return a == 1 or b == 1 or (a != b and a % b != 0 and b % a != 0)


def _combos(lists: list[list[int]], limit: int = 200_000, fixed: tuple[int, ...] = ()):
    """Every assignment whose dimensions (other than 1) are pairwise distinct and not multiples of each other, nor
    of the `fixed` values, pruned as it is built; at most `limit` of them."""
    count = 0

    def walk(i: int, chosen: list[int]):
        nonlocal count
        if i == len(lists):
            count += 1
            yield tuple(chosen)
            return
        for v in lists[i]:
            if count >= limit:
                return
            if all(_apart(v, c) for c in chosen) and all(_apart(v, c) for c in fixed):
                chosen.append(v)
                yield from walk(i + 1, chosen)
                chosen.pop()

    yield from walk(0, [])


def _assignments(syms: list[str], lists: list[list[int]], roles: set[str], kd: KernelDims | None, deadline: float):
    """Full assignments, best first: every combination of the coinciding axes' values (fewest single-tile axes,
    then smallest product), each completed with the smallest values of the other axes that keep all apart."""
    first = [i for i, s in enumerate(syms) if s in roles]
    rest = [i for i in range(len(syms)) if i not in first]
    heads = []
    for n, combo in enumerate(_combos([lists[i] for i in first], _MAX_HEADS)):
        if n % 256 == 0 and time.perf_counter() > deadline - _SEARCH_S / 2:  # half the time for the heads
            break
        b = {syms[i]: v for i, v in zip(first, combo)}
        heads.append((_single_tile_axes(kd, b, kd.env(b) if kd else {}, roles), math.prod(combo), combo))
    heads.sort()
    for _, _, combo in heads:
        # the other axes: the first (smallest-first) values that keep every dimension apart
        tail = next(_combos([lists[i] for i in rest], 1, fixed=combo), None)
        if tail is not None:
            values = {**dict(zip(first, combo)), **dict(zip(rest, tail))}
            yield tuple(values[i] for i in range(len(syms)))


def _single_tile_axes(kd: KernelDims | None, b: dict[str, int], env: dict[str, Any], axes: set[str]) -> int:
    """How many of `axes` have a single tile at bindings `b` (fewer is better: an offset mix-up needs two)."""
    n = 0
    for sym, tile in (kd.tiling if kd else []):
        t = env.get(tile) if isinstance(tile, str) else tile
        if sym in axes and isinstance(t, int) and t > 0 and b[sym] // t < 2:
            n += 1
    return n


def plan(spec: PortSpec, selected: list[SizeSpec], target: Target, mode: str = "auto",
         limit_bytes: int | None = None) -> DistinctPlan:
    """The extra size to add (plan.size), or none with the reason in plan.notes."""
    out = DistinctPlan(mode)
    if mode == "off":
        return out
    kd = read_kernel(spec, target)
    out.coincidences = co = coincidences(spec, selected, kd)
    fixed = [c for c in co if not c.movable]
    for c in fixed:
        out.notes.append(f"tile constants {c.text()} at every size, whatever the dimensions: no size can show a mix-up "
                         f"of their roles at run time (the static rule NKI211 checks their uses)")
    movable = [c for c in co if c.movable]
    if not movable and mode == "auto":
        return out
    syms = _symbols(spec)
    if not syms:
        out.notes.append("distinct-dims: the spec's inputs have no size symbols; no size to add")
        return out
    values = {s: [z.bindings[s] for z in selected if s in z.bindings] or [1] for s in syms}
    tiled = {s for s, _ in kd.tiling} if kd else set()
    # what one dimension alone must satisfy (its tile divides it, its own asserts) is checked once per value
    lists = [[v for v in _candidates(values[s], s in tiled) if _legal(kd, {s: v}, []) is not None] for s in syms]
    tile_pairs = [c.names for c in movable if c.kind == "tiles"]
    tile_names = sorted(kd.tile_constants()) if kd else []
    # the axes whose roles coincide: a mix-up of offsets shows only where such an axis has two tiles or more
    roles = {s for c in movable if c.kind == "dims" for s in c.names}
    roles |= {s for c in movable if c.kind == "tiles" for n in c.names for s in kd.tile_constants().get(n, ())}
    best = None
    nbytes_of = _bytes_function(spec)
    deadline = time.perf_counter() + _SEARCH_S
    found = 0
    for combo in _assignments(syms, lists, roles, kd, deadline):
        now = time.perf_counter()
        if (now > deadline and best is not None) or now > deadline + 3 * _SEARCH_S:
            out.notes.append(f"distinct-dims: the size search stopped after {_SEARCH_S:g} s; the size is the best "
                             "found by then")
            break
        b = dict(zip(syms, combo))
        nbytes = nbytes_of(b)
        if limit_bytes is not None and nbytes > limit_bytes:
            continue
        env = _legal(kd, b, tile_pairs)
        if env is None:
            continue
        key = (_single_tile_axes(kd, b, env, roles), nbytes, combo)
        if best is None or key < best[0]:
            best = (key, b, env)
        found += 1
        if found >= _ENOUGH:  # candidates come best-first (_assignments): later ones rarely win
            break
    if best is None:
        pairs = "; ".join(c.text() for c in movable) or "none"
        out.notes.append(f"distinct-dims: no size with pairwise distinct dimensions, none a multiple of another, "
                         f"passes the kernel's asserts and tile divisions (coinciding at every size: {pairs}); "
                         "a mix-up of these roles stays invisible at run time")
        return out
    _, b, legal = best
    name = NAME
    taken = {s.name for s in spec.sizes}
    while name in taken:
        name += "-added"
    out.size = SizeSpec(name=name, **b)
    out.tiles = {t: legal[t] for t in tile_names if t in legal}
    out.reason = ("the spec's sizes have " + "; ".join(c.text() for c in movable) + " at every size"
                  if movable else "asked for (distinct_dims = always)")
    out.why = (f"{out.reason}, so a kernel that uses one where the other is meant passes them all; this size "
               f"({out.dims_text()}) has no two dimensions equal or one a multiple of another")
    return out


def _bytes_function(spec: PortSpec):
    """spec.input_bytes without building a SizeSpec per candidate."""
    arrays = [(inp.shape, inp.np_dtype.itemsize) for inp in spec.inputs.values() if not inp.is_value]

    def nbytes(b: dict[str, int]) -> int:
        total = 0
        for shape, item in arrays:
            n = item
            for d in shape:
                n *= d if isinstance(d, int) else b[d]
            total += n
        return total

    return nbytes


def _legal(kd: KernelDims | None, b: dict[str, int], tile_pairs: list[tuple[str, str]]) -> dict[str, Any] | None:
    """The kernel's environment at bindings `b` when its asserts hold, its tile divisions are exact and the
    coinciding tile constants differ; None otherwise."""
    if kd is None:
        return {}
    env = kd.env(b)
    for test in kd.asserts:
        try:
            if not kd.value(test, env):
                return None
        except (_Unknown, TypeError, ValueError, ZeroDivisionError, OverflowError):
            continue  # not evaluable here: the run says whether it holds
    for sym, tile in kd.tiling:
        t = env.get(tile) if isinstance(tile, str) else tile
        if isinstance(t, bool) or not isinstance(t, int):
            continue
        if sym in b and (t < 1 or b[sym] % t):
            return None
    for x, y in tile_pairs:
        if x in env and y in env and env[x] == env[y]:
            return None
    return env

