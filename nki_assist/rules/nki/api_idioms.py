"""Python idioms new NKI does not trace (NKI515, NKI516): arithmetic operators on tiles, and min()/max()
of an affine_range loop index. Read from the kernels' Python AST (rules/nki/api_usage.py)."""

from __future__ import annotations

import ast

from ...api import table
from ...api.hardware import Target
from ...api.version import target_version
from ...findings import Severity
from ...parse.nki_model import NkiFile
from ...parse.pyast import branch_nodes
from ..registry import RuleSpec
from .api_usage import dotted, usage
from .common import API_TABLE_NOTE, check, emit

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI515", "python-arithmetic-on-nki-tile", "unsupported-construct", Severity.WARNING,
             "Python arithmetic (+ - * / ...) on a new-NKI tile; tiles have no operators, use an ISA call.",
             fix="Compute it with nisa.tensor_tensor / nisa.tensor_scalar into a dst tile.",
             doc="""\
## What it finds
In a new-dialect kernel: a Python arithmetic operator (`+`, `-`, `*`, `/`, `//`, `%`, `**`, `@`, or the augmented `+=`...), or a unary minus (`-t`), with an operand that is a tile: a name every assignment of which in the kernel is an allocation (`nl.ndarray`, `nl.zeros`, ...) or the tile an `nl` function returns, or a slice of one. Shape and index arithmetic (`t.shape[0] * 2`, `i * 128`) is not reported. In legacy `neuronxcc.nki` kernels, whose tiles overload the binary operators, only the unary minus is reported (a warning: neuronxcc 2.24 raised a TypeError on `-s_tile` in trnsolver's Jacobi kernel, fixed with `nl.negative`, the form trnfft uses).
""" + API_TABLE_NOTE + """

Severity: `error` where the target version's stub lists `NkiTensor`'s special methods (0.6: `__getitem__`/`__setitem__`, no arithmetic, no `__neg__`), `warning` for versions whose stub does not list them.

## Why it matters on Trainium
Legacy NKI overloaded operators on tiles and lowered them to engine instructions. New NKI tiles (`NkiTensor`) are views of storage: every computation is an instruction with a destination. `a * b` on two tiles fails when the kernel is traced (trnfft's NKI 0.3 migration replaced these with ISA calls).

## Example
```python
c = a_tile * b_tile          # NKI515
d = nl.multiply(x, -s_tile)  # NKI515: unary minus (trnsolver's Jacobi rotation, fixed with nl.negative)
```

## Fix
`nisa.tensor_tensor(dst=c, data1=a_tile, data2=b_tile, op=nl.multiply)`, or `nisa.tensor_scalar` when one operand is a scalar; `nl.negative(t)` for `-t`.
""", policy="failure", emits=(Severity.ERROR,)),
    RuleSpec("NKI516", "min-bound-in-affine-range", "unsupported-construct", Severity.WARNING,
             "A slice bound inside nl.affine_range is clamped with min()/max() of the loop index; not a constant size.",
             fix="Use a constant tile size (assert divisibility or handle the tail separately).",
             doc="""\
## What it finds
Inside a `for i in nl.affine_range(...)` loop, a slice bound that calls `min()` or `max()` on an expression of the loop index (directly or through a name computed from it in the loop), such as `x[i * 128:min((i + 1) * 128, N)]`. In a legacy-dialect (`neuronxcc.nki`) kernel also a bound that reads a name the loop assigns from such a clamp (`end = min(off + 128, N)`, then `x[off:end]`); the finding sits on the clamp. New NKI unrolls `affine_range` (an alias of `range`), so a clamp kept in a name is a plain integer there and is not reported: AWS's NKI 0.3 library sizes its tails that way.
""" + API_TABLE_NOTE + """

Severity: `warning`. The limit is documented by public fixes (trnfft, on legacy `neuronxcc.nki` kernels: "affine_range can't evaluate min() symbolically"), not by the API stubs; the legacy dialect's own answer to a tail is `mask=`.

## Why it matters on Trainium
The compiler needs every access's size at compile time. A clamp on the symbolic loop index cannot be evaluated, so the kernel fails to compile, typically only for the sizes that take a tail.

## Example
```python
for i in nl.affine_range(n_tiles):
    t = nl.load(x[i * 128:min((i + 1) * 128, N)])   # NKI516
```

## Fix
Use a constant tile size and assert that it divides the extent, or process the tail in a separate, statically sized step.
"""),
]

_ALLOCS = frozenset({"nl.ndarray", "nl.zeros", "nl.ones", "nl.full", "nl.zeros_like", "nl.empty_like",
                     "nl.ones_like", "nl.full_like", "nl.rand"})
_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
        ast.Pow: "**", ast.MatMult: "@"}
_NL_FOR = {ast.Add: "nl.add", ast.Sub: "nl.subtract", ast.Mult: "nl.multiply", ast.Div: "nl.divide",
           ast.Pow: "nl.power", ast.MatMult: "nl.matmul", ast.Mod: "nl.mod"}


def _new(nf: NkiFile) -> bool:
    return nf.dialect in ("new", "transitional")


def _tile_producer(call: ast.AST, aliases: dict[str, str], v: str) -> bool:
    if not isinstance(call, ast.Call):
        return False
    name = dotted(call.func, aliases)
    if name is None:
        return False
    if name in _ALLOCS:
        return True
    e = table.lookup(name, v) if name.startswith("nl.") else None
    return bool(e and e.kind == "function" and e.returns == "value" and e.params
                and e.params[0].name in ("x", "src", "data"))


def _tiles(u, v: str) -> dict[tuple, set[str]]:
    """Per kernel (name, line): names every assignment of which in it binds a tile (an allocation or the tile an
    nl call returns); a name also bound to anything else, or used as a loop variable, is not one."""
    tile: dict[tuple, set[str]] = {}
    other: dict[tuple, set[str]] = {}
    for k, node in u.assigns:
        producer = _tile_producer(node.value, u.aliases, v)
        for t in node.targets:
            if isinstance(t, ast.Name):
                (tile if producer else other).setdefault((k.name, k.line), set()).add(t.id)
    return {kid: names - other.get(kid, set()) for kid, names in tile.items()}


tile_names = _tiles  # also read by NKI524 (rules/nki/tile_values.py)


def _is_tile(node: ast.AST, tiles: set[str]) -> str | None:
    if isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) and node.id in tiles else None


def _operators_certain(v: str) -> bool:
    """The version's stub lists NkiTensor's dunder methods (so an absent __add__ means none)."""
    e = table.lookup("nl.NkiTensor", v)
    methods = set(e.methods) if e else set()
    return "__getitem__" in methods and not methods & {"__add__", "__mul__", "__sub__", "__neg__"}


@check("NKI515", per_file=True)
def tile_arithmetic(nf: NkiFile, t: Target):
    if (u := usage(nf)) is None:
        return
    # legacy tiles overload the binary operators but not unary minus ("-tile" raises TypeError in neuronxcc
    # 2.24, trnsolver's fix; trnfft uses nl.negative): only `-t` is read there, as a warning
    legacy = nf.dialect == "legacy" and u.legacy
    if not (_new(nf) or legacy):
        return
    v = table.legacy_version() if legacy else target_version(t)
    if v == table.legacy_version() and not legacy:
        return
    certain = not legacy and _operators_certain(v)
    by_kernel = _tiles(u, v)
    for k, node in u.arith:
        tiles = by_kernel.get((k.name, k.line))
        if not tiles or (legacy and not isinstance(node, ast.UnaryOp)):
            continue
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            name = _is_tile(node.left, tiles) or _is_tile(node.right, tiles)
            op = node.op
        elif isinstance(node, ast.AugAssign) and type(node.op) in _OPS:
            name = _is_tile(node.target, tiles) or _is_tile(node.value, tiles)
            op = node.op
        elif isinstance(node, ast.UnaryOp):  # `-t`: NkiTensor has no __neg__ either
            name, op = _is_tile(node.operand, tiles), node.op
        else:
            continue
        if name is None:
            continue
        sym = _OPS.get(type(op), "unary -")
        repl = _NL_FOR.get(type(op), "nl.negative")
        yield emit("NKI515", nf, node.lineno, node.col_offset + 1, node.end_lineno or node.lineno,
                   (node.end_col_offset or node.col_offset) + 1,
                   (f"Python unary minus on tile `{name}`: legacy NKI tiles overload binary operators but not "
                    "`-tile` (a TypeError when the kernel is traced)." if legacy else
                    f"Python `{sym}` on tile `{name}`: new NKI tiles (NkiTensor) have no arithmetic operators "
                    f"at NKI {v}; the kernel fails when it is traced."),
                   {"tile": name, "operator": sym, "nki_version": v, "kernel": k.name,
                    "replacement": repl},
                   severity=Severity.ERROR if certain else Severity.WARNING,
                   confidence="high" if certain else "medium",
                   fix=(f"Negate it with an instruction: {repl}(t), or nisa.tensor_scalar(dst=..., data=t, "
                        "op0=nl.multiply, operand0=-1.0)." if isinstance(op, ast.USub) else
                        f"Compute it with an instruction: nisa.tensor_tensor(dst=..., data1=..., data2=..., "
                        f"op={repl}) (or nisa.tensor_scalar for a scalar operand)." if repl else
                        "Compute it with nisa.tensor_tensor / nisa.tensor_scalar into a dst tile."))


def _walk(node: ast.AST) -> list[ast.AST]:
    """`list(ast.walk(node))` less the operator and context singletons (none is a name, call or slice)."""
    out, i = [node], 0
    while i < len(out):
        out.extend(branch_nodes(out[i]))
        i += 1
    return out


def _names(node: ast.AST, memo: dict[int, set[str]] | None = None) -> set[str]:
    """The names read in `node`; with `memo` (node id -> names, for nodes that outlive it), once per node."""
    if memo is None:
        return {n.id for n in _walk(node) if isinstance(n, ast.Name)}
    got = memo.get(id(node))
    if got is None:
        got = memo[id(node)] = {n.id for n in _walk(node) if isinstance(n, ast.Name)}
    return got


def _clamps(node: ast.AST, derived: set[str], memo: dict[int, set[str]] | None = None) -> list[ast.Call]:
    """min()/max() calls in `node` that read a name derived from the loop index."""
    return [c for c in _walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
            and c.func.id in ("min", "max") and _names(c, memo) & derived]


def _loop_clamps(loop: ast.For, through_names: bool) -> list[tuple[ast.Call, int]]:
    """(min()/max() call, first slice line using it) for each clamp of the loop index that sizes a slice: in the
    bound itself, or (`through_names`) through a name the loop body assigns from it (`end = min(off + T, n)`, then
    `x[off:end]`)."""
    nodes = list(_walk(ast.Module(body=loop.body, type_ignores=[])))
    if not any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in ("min", "max")
               for c in nodes):
        return []
    memo: dict[int, set[str]] = {}  # the names of each call, read again on every pass to the fixed point
    # each assignment once: (target names, names it reads, the min()/max() calls in it)
    assigns = [([tg.id for tg in a.targets if isinstance(tg, ast.Name)], _names(a.value),
                [c for c in _walk(a.value) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                 and c.func.id in ("min", "max")]) for a in nodes if isinstance(a, ast.Assign)]
    derived = {loop.target.id}
    clamped: dict[str, ast.Call] = {}  # name -> the clamp that sizes it
    changed = True
    while changed:  # to a fixed point: ast.walk is not in source order
        changed = False
        for targets, names, calls in assigns:
            via = next((c for c in calls if _names(c, memo) & derived), None) if calls else None
            via = via or next((clamped[n] for n in names if n in clamped), None)
            reads_index = bool(names & derived)
            for tg in targets:
                if reads_index and tg not in derived:
                    derived.add(tg)
                    changed = True
                if via is not None and tg not in clamped:
                    clamped[tg] = via
                    changed = True
    found: dict[int, tuple[ast.Call, int]] = {}
    for sl in nodes:
        if not isinstance(sl, ast.Slice):
            continue
        for bound in (sl.lower, sl.upper):
            if bound is None:
                continue
            via = [clamped[n] for n in sorted(_names(bound)) if n in clamped] if through_names else []
            for c in _clamps(bound, derived, memo) + [c for c in via if c.lineno <= sl.lineno]:
                if id(c) not in found or sl.lineno < found[id(c)][1]:
                    found[id(c)] = (c, sl.lineno)
    return sorted(found.values(), key=lambda x: (x[0].lineno, x[0].col_offset))


@check("NKI516", per_file=True)
def affine_min_bound(nf: NkiFile, t: Target):
    if (u := usage(nf)) is None or not (_new(nf) or u.legacy):
        return
    v = target_version(t)
    if v == table.legacy_version() and not u.legacy:
        return
    seen: set[tuple[int, int]] = set()
    for k, loop in u.affine_loops:
        text = "\n".join(nf.lines[loop.lineno - 1:loop.end_lineno or loop.lineno])
        if not isinstance(loop.target, ast.Name) or ("min(" not in text and "max(" not in text):
            continue
        # new NKI unrolls affine_range (an alias of range): a clamp stored in a name is a Python int there, and
        # AWS's 0.3 library sizes its tails that way; only the legacy tracer's index is symbolic
        for c, used in _loop_clamps(loop, through_names=u.legacy):
            if (c.lineno, c.col_offset) in seen:
                continue  # nested affine loops: reported for the outermost
            seen.add((c.lineno, c.col_offset))
            why = ("legacy NKI traces the index as a symbolic affine expression, which Python's "
                   f"{c.func.id}() cannot compare (use mask= for a tail)" if u.legacy else
                   f"NKI {v} cannot evaluate it symbolically")
            yield emit("NKI516", nf, c.lineno, c.col_offset + 1, c.end_lineno or c.lineno,
                       (c.end_col_offset or c.col_offset) + 1,
                       f"`{c.func.id}(...)` of the affine_range index `{loop.target.id}` sizes a slice"
                       + ("" if used == c.lineno else f" (line {used})") + f": {why}, so the slice size is not "
                       "a compile-time constant.",
                       {"loop_var": loop.target.id, "loop_line": loop.lineno, "slice_line": used,
                        "nki_version": "legacy" if u.legacy else v, "kernel": k.name, "bound": ast.unparse(c)},
                       confidence="medium",
                       fix="Use a constant tile size (assert the size divides evenly, or handle the tail in a "
                           "separate statically sized step" + (", or mask= in legacy NKI" if u.legacy else "")
                           + f") instead of clamping with {c.func.id}().")
