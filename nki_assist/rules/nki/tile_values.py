"""What a new-NKI tile value is, read from the kernel's Python AST (rules/nki/api_usage.py facts):
- NKI524: a NumPy-style `.astype(...)` call on a tile; NkiTensor documents no such method (the casts are
  `nl.copy(x, dtype=...)` or an instruction's `dtype=`/dst dtype);
- NKI525: an `nl` reduction that removes every free dim of a tile (`nl.max(t2d, axis=1)` without
  `keepdims=True`): the result has no free dim, and on-chip tensors are at least 2-D;
- NKI106 (widened): `nl.transpose(...)`'s result, a PSUM tile in the SDK's own example, passed as a matmul
  operand, which the Tensor Engine reads only from SBUF.
Only new-dialect files (`import nki`) at NKI 0.3 or newer: legacy tiles had other conventions."""

from __future__ import annotations

import ast

from ...api import table
from ...api.hardware import Target
from ...findings import RelatedLocation, Severity
from ...parse.nki_model import NkiFile
from ..registry import RuleSpec
from .api_idioms import tile_names
from .api_usage import dotted, new_namespace_version, usage
from .common import TARGET_VERSION_NOTE, check, emit, kernel_function, scope_nodes

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI524", "numpy-astype-on-nki-tile", "unsupported-construct", Severity.WARNING,
             "A NumPy-style `.astype(dtype)` call on a new-NKI tile; NkiTensor has no astype method.",
             fix="Cast with nl.copy(x, dtype=...) or the computing call's dtype=.",
             doc="""\
## What it finds
`t.astype(dtype)` in a new-dialect kernel or helper where `t` is a tile: a name every assignment of which in the function is an allocation or the tile an `nl` function returns (as NKI515 reads it), a slice of one, or an `nl` call's result (`nl.greater(a, b).astype(...)`).
""" + TARGET_VERSION_NOTE + """

Severity: `error` where the target version's stub lists `NkiTensor`'s methods (0.5 and 0.6 list `slice`, `reshape`, `view`, `ap`, ... and no `astype`), `warning` for versions whose stub does not list them.

## Why it matters on Trainium
A NumPy array or a torch tensor converts with `.astype`; an NKI tile is a view of on-chip storage, and a dtype conversion is an instruction that writes a destination. The call fails when the kernel is traced. trnsparse's screened SpMM multiplied by `mask.astype(a.dtype)` and was fixed by passing the boolean mask to `nl.multiply` as it is.

## Example
```python
mask = nl.greater(bound, threshold)
a_masked = nl.multiply(a_tile, mask.astype(a.dtype))   # NKI524
```

## Fix
`nl.copy(mask, dtype=a.dtype)`, the computing call's `dtype=`, or (for a mask) pass the boolean tile directly.
""", policy="failure", emits=(Severity.ERROR,)),
    RuleSpec("NKI525", "reduction-leaves-no-free-dim", "unsupported-construct", Severity.WARNING,
             "An nl reduction removes every free dim of an on-chip tile (no keepdims=True): the result is 1-D.",
             fix="Pass keepdims=True, so the result is a [P, 1] tile.",
             doc="""\
## What it finds
`nl.max`, `nl.min`, `nl.sum`, `nl.mean`, `nl.prod`, `nl.all`, `nl.any` or `nl.var` over free axes (a literal `axis`, not 0) that are all the free dims of a tile whose rank the kernel shows, without `keepdims=True`: `nl.max(score, axis=1)` on a 2-D tile. The rank is read from the kernel's own code: an on-chip allocation's literal shape, an `nl.load` of an all-slices access, `nl.load_transpose2d` (2-D), an elementwise `nl` function (its first tile operand's rank), a `.reshape((...))` view; a tile whose rank it does not show is not reported. Reductions over the partition axis are NKI210's.
""" + TARGET_VERSION_NOTE + """

Severity: `warning`, medium confidence. The language guide (0.5+) and `NkiTensor.__getitem__` say SBUF and PSUM tensors are always at least 2-D; the NKI 0.3 stubs do not say it, and trnsparse's NKI 0.3 fix states it ("SBUF tensors must have >= 2 dimensions. nl.max/nl.sum with axis=1 produce 1D (128,)").

## Why it matters on Trainium
An on-chip tile is a partition dim (the lanes) by free dims (each lane's elements). Reducing every free dim without `keepdims` asks for a tile with lanes and no elements; `keepdims=True` keeps the reduced dims with size 1, the `[P, 1]` column the row statistics of a softmax or a norm live in.

## Example
```python
t_max = nl.max(score, axis=1)                        # NKI525: (128,)
t_max = nl.max(score, axis=1, keepdims=True)         # (128, 1)
```

## Fix
Pass `keepdims=True`; store the `[P, 1]` result into a `[P, 1]` HBM slice, and drop the extra dim on the host if the caller wants a vector.
"""),
]

_REDUCTIONS = frozenset({"nl.max", "nl.min", "nl.sum", "nl.mean", "nl.prod", "nl.all", "nl.any", "nl.var"})
_ALLOCS = frozenset({"nl.ndarray", "nl.zeros", "nl.ones", "nl.full", "nl.empty"})
_MATMULS = frozenset({"nisa.nc_matmul", "nl.matmul"})


def _innermost(nf: NkiFile, line: int):
    best = None
    for k in nf.kernels:
        if k.line <= line <= k.end_line and (best is None or k.line >= best.line):
            best = k
    return best


# --- NKI524: .astype on a tile ------------------------------------------------------------------------------

def _astype_certain(v: str) -> bool:
    """The version's stub lists NkiTensor's methods (so an absent `astype` means none)."""
    e = table.lookup("nl.NkiTensor", v)
    methods = set(e.methods) if e else set()
    return "__getitem__" in methods and "astype" not in methods


@check("NKI524", per_file=True)
def tile_astype(nf: NkiFile, t: Target):
    if (v := new_namespace_version(nf, t)) is None or not any(".astype(" in x for x in nf.lines) \
            or (u := usage(nf)) is None:
        return
    by_kernel = tile_names(u, v)
    certain = _astype_certain(v)
    for k in nf.kernels:
        if not any(".astype(" in x for x in nf.lines[k.line - 1:k.end_line]):
            continue
        fn = kernel_function(nf, k)
        tiles = by_kernel.get((k.name, k.line), set())
        for n in scope_nodes(nf, fn) if fn is not None else ():
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "astype"):
                continue
            recv = n.func.value
            base = recv.value if isinstance(recv, ast.Subscript) else recv
            named = isinstance(base, ast.Name) and base.id in tiles
            made = isinstance(recv, ast.Call) and (dotted(recv.func, u.aliases) or "").startswith("nl.")
            if not (named or made):
                continue
            what = f"`{base.id}`" if named else f"the tile `{ast.unparse(recv)[:40]}` returns"
            yield emit("NKI524", nf, n.lineno, n.col_offset + 1, n.end_lineno or n.lineno,
                       (n.end_col_offset or n.col_offset) + 1,
                       f"`.astype()` on {what}: new NKI tiles (NkiTensor) have no `astype` method at NKI {v}; "
                       "the kernel fails when it is traced.",
                       {"tile": base.id if named else ast.unparse(recv)[:60], "nki_version": v, "kernel": k.name},
                       severity=Severity.ERROR if certain else Severity.WARNING,
                       confidence="high" if certain else "medium",
                       fix="Cast with nl.copy(x, dtype=...) (or the computing call's dtype=); an nl function takes "
                           "a boolean mask tile as it is.")


# --- NKI525: a reduction that leaves no free dim -------------------------------------------------------------

def _axes(node: ast.AST | None) -> list[int] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return [node.value]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, int):
        return [-node.operand.value]
    if isinstance(node, (ast.Tuple, ast.List)):
        out = [_axes(e) for e in node.elts]
        return None if any(a is None or len(a) != 1 for a in out) else [a[0] for a in out]
    return None


def _arg(call: ast.Call, name: str, pos: int) -> ast.AST | None:
    kw = next((k.value for k in call.keywords if k.arg == name), None)
    if kw is not None:
        return kw
    return call.args[pos] if len(call.args) > pos and not isinstance(call.args[pos], ast.Starred) else None


def _on_chip_alloc(call: ast.Call) -> bool:
    buf = _arg(call, "buffer", 2)
    return buf is None or any(b in ast.unparse(buf) for b in ("sbuf", "psum"))


class _Ranks:
    """Ranks of a kernel's on-chip tiles, from what the kernel's own code shows: an allocation's literal shape,
    an `nl.load` of an all-slices access, `load_transpose2d` (2-D), an elementwise `nl` function (its first
    tile operand's rank), a reduction, a `.reshape((...))` view. Unknown: None."""

    def __init__(self, aliases: dict[str, str], v: str):
        self.aliases, self.v = aliases, v
        self.names: dict[str, int | None] = {}

    def bind(self, name: str, value: ast.AST) -> None:
        r = self.rank(value)
        if name in self.names and self.names[name] != r:
            r = None  # rebound to a different rank: not one rank
        self.names[name] = r

    def rank(self, node: ast.AST) -> int | None:
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.Subscript):  # on-chip integer indices keep their dim (NkiTensor.__getitem__)
            return self.rank(node.value)
        if not isinstance(node, ast.Call):
            return None
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "reshape" and dotted(f, self.aliases) is None:
            shape = node.args[0] if len(node.args) == 1 else None
            return len(shape.elts) if isinstance(shape, (ast.Tuple, ast.List)) and self.rank(f.value) else None
        api = dotted(f, self.aliases)
        if api is None:
            return None
        if api in _ALLOCS:
            shape = _arg(node, "shape", 0)
            return len(shape.elts) if isinstance(shape, (ast.Tuple, ast.List)) and _on_chip_alloc(node) else None
        if api == "nl.load":
            src = _arg(node, "src", 0)
            if isinstance(src, ast.Subscript):
                idx = src.slice.elts if isinstance(src.slice, ast.Tuple) else [src.slice]
                return len(idx) if all(isinstance(i, ast.Slice) for i in idx) else None
            return None
        if api == "nl.load_transpose2d":
            return 2
        if api in _REDUCTIONS:
            r, axes = self.rank(_arg(node, "x", 0) or ast.Constant(None)), _axes(_arg(node, "axis", 1))
            keep = _arg(node, "keepdims", 3)
            if r is None or axes is None:
                return None
            if isinstance(keep, ast.Constant) and keep.value is True:
                return r
            return r - len({a % r for a in axes}) if keep is None or (
                isinstance(keep, ast.Constant) and keep.value is False) else None
        if not api.startswith("nl."):
            return None
        e = table.lookup(api, self.v)
        if not (e and e.kind == "function" and e.returns == "value" and e.params and e.params[0].name == "x"):
            return None
        for a in node.args[:2]:  # elementwise: the first operand whose rank is known
            r = self.rank(a)
            if r is not None:
                return r
        return None


@check("NKI525", per_file=True)
def reduction_below_2d(nf: NkiFile, t: Target):
    if (v := new_namespace_version(nf, t)) is None or (u := usage(nf)) is None:
        return
    red = [c for c in u.calls if c.ref.name in _REDUCTIONS]
    if not red:
        return
    ranks: dict[tuple, _Ranks] = {}
    events: list[tuple[int, int, str, object, ast.AST]] = []  # (line, col, kind, kernel, node) in source order
    for k, node in u.assigns:
        events.append((node.lineno, node.col_offset, "bind", k, node))
    for c in red:
        k = _innermost(nf, c.ref.line)
        if k is not None:
            events.append((c.node.lineno, c.node.col_offset - 1, "reduce", k, c.node))  # before its own binding
    for line, _col, kind, k, node in sorted(events, key=lambda e: (e[0], e[1])):
        rk = ranks.setdefault((k.name, k.line), _Ranks(u.aliases, v))
        if kind == "bind":
            for tg in node.targets:
                if isinstance(tg, ast.Name):
                    rk.bind(tg.id, node.value)
            continue
        x, axes, keep = _arg(node, "x", 0), _axes(_arg(node, "axis", 1)), _arg(node, "keepdims", 3)
        if x is None or axes is None or (keep is not None and not (isinstance(keep, ast.Constant)
                                                                     and keep.value is False)):
            continue
        r = rk.rank(x)
        if r is None or r < 2:
            continue
        axes_n = sorted({a % r for a in axes})
        if 0 in axes_n or r - len(axes_n) >= 2:  # the partition axis is NKI210's; a free dim left is fine
            continue
        api = dotted(node.func, u.aliases)
        yield emit("NKI525", nf, node.lineno, node.col_offset + 1, node.end_lineno or node.lineno,
                   (node.end_col_offset or node.col_offset) + 1,
                   f"`{api}` over axis {ast.unparse(_arg(node, 'axis', 1))} of the {r}-D tile "
                   f"`{ast.unparse(x)[:40]}` without keepdims=True leaves a {r - len(axes_n)}-D result: on-chip "
                   "tensors are at least 2-D (partition dim + free dim), so it has no free dim to live in.",
                   {"api": api, "rank": r, "axes": axes_n, "nki_version": v, "kernel": k.name},
                   confidence="medium",
                   fix="Pass keepdims=True: the result is then a [P, 1] tile (store it into a [P, 1] HBM slice).")


# --- NKI106 (widened): nl.transpose's PSUM result as a matmul operand ----------------------------------------

def _transposed_names(u) -> dict[tuple, dict[str, int]]:
    """Per kernel: names every assignment of which is an `nl.transpose(...)` call -> the last such line."""
    yes: dict[tuple, dict[str, int]] = {}
    no: dict[tuple, set[str]] = {}
    for k, node in u.assigns:
        tr = isinstance(node.value, ast.Call) and dotted(node.value.func, u.aliases) == "nl.transpose"
        for tg in node.targets:
            if isinstance(tg, ast.Name):
                if tr:
                    yes.setdefault((k.name, k.line), {})[tg.id] = node.lineno
                else:
                    no.setdefault((k.name, k.line), set()).add(tg.id)
    return {kid: {n: ln for n, ln in names.items() if n not in no.get(kid, set())} for kid, names in yes.items()}


@check("NKI106", per_file=True)
def transpose_result_as_matmul_operand(nf: NkiFile, t: Target):
    if (v := new_namespace_version(nf, t)) is None or not any("transpose(" in x for x in nf.lines) \
            or (u := usage(nf)) is None:
        return
    mms = [c for c in u.calls if c.ref.name in _MATMULS]
    if not mms:
        return
    transposed = _transposed_names(u)
    for c in mms:
        e = table.lookup(c.ref.name, v)
        names = [p.name for p in e.params] if e and e.params else []
        roles = ("stationary", "moving") if c.ref.name == "nisa.nc_matmul" else ("x", "y")
        k = _innermost(nf, c.ref.line)
        tr = transposed.get((k.name, k.line), {}) if k is not None else {}
        # the value-returning form (`nc_matmul(st, mv)`, NKI512's) puts the operands first
        old_form = c.ref.name == "nisa.nc_matmul" and len(c.node.args) == 2 and not any(
            kw.arg == "dst" for kw in c.node.keywords)
        for role in roles:
            pos = roles.index(role) if old_form else (names.index(role) if role in names else None)
            op = _arg(c.node, role, pos) if pos is not None else None
            direct = isinstance(op, ast.Call) and dotted(op.func, u.aliases) == "nl.transpose"
            if not (direct or (isinstance(op, ast.Name) and op.id in tr)):
                continue
            text = ast.unparse(op)[:60]
            f = emit("NKI106", nf, c.ref.line, c.ref.col, c.node.end_lineno or c.ref.line,
                       (c.node.end_col_offset or 0) + 1,
                       f"`{c.ref.name}` takes `{text}` as its {role} operand: `nl.transpose` returns its result in "
                       "PSUM (the SDK's example copies it to SBUF with nisa.tensor_copy), and the Tensor Engine "
                       "reads its operands only from SBUF.",
                       {"operand": text, "role": role, "buffer": "psum", "via": "nl.transpose", "nki_version": v},
                       severity=Severity.WARNING, confidence="medium",
                       fix="Copy the transposed tile to SBUF first (nisa.tensor_copy(dst=sbuf_tile, src=...)), or "
                           "use the matmul's own transpose (nl.matmul(x, y, transpose_x=True) / nisa.nc_transpose "
                           "into an SBUF dst).")
            if not direct and tr[op.id] != c.ref.line:
                f.related.append(RelatedLocation(file=nf.path or "", line=tr[op.id],
                                                 message=f"`{op.id}` is bound to nl.transpose's result here"))
            yield f
