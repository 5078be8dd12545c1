"""NKI112: an elementwise op between tiles whose partition dims differ, relying on a partition broadcast NKI does
not do.

Documented: "Partition dimension broadcasting is not supported on operator overloads (`+`, `-`, `*`, `/`, `<<`,
`>>`, ...)" (legacy known issues; the `nl.*` functions did broadcast there, at a cost); from NKI 0.3 the
`nki.language` binary ops do not broadcast at all (release notes); `nisa.tensor_tensor` needs the same partition
count in both inputs (ISA; legacy `err_num_partition_mismatch`). A one-partition tile (a `k:k+1` row slice, an
integer index into a tile, a `(1, n)` allocation) combined with a tile of `p` partitions computes only when
`p == 1`.

Partition sizes are read from the kernel's own code: the first index of an `nl.load` access, the first dim of an
allocation, an index into a known tile. Both sizes literal and different: error. A one-partition tile against a
size only known as an expression (a chunk `p_off:p_end`, `num_groups`): warning. Anything else: no finding.
"""

from __future__ import annotations

import ast
import re

from ...api.hardware import Target
from ...findings import RelatedLocation, Severity
from ...parse.nki_model import NkiFile, NkiKernel
from ..registry import RuleSpec
from .common import check, emit, kernel_findings, kernel_function, resolve_api, scope_nodes_of

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI112", "partition-broadcast-in-elementwise-op", "unsupported-construct", Severity.WARNING,
             "An elementwise op combines a one-partition tile with a tile of more partitions; NKI does not broadcast "
             "across the partition dim there.",
             fix="Give both operands the same partition count (broadcast the row into every partition first), or "
                 "use nisa.tensor_scalar with a [P, 1] operand.",
             doc="""\
## What it finds
A binary elementwise op whose two tile operands have different partition counts, read from the kernel's code:
the first index of the `nl.load` access that made a tile (`x[k:k+1]` is one partition, `x[p0:p1]` is `p1 - p0`),
the first dim of an on-chip allocation, an integer index into a tile (`t[k]` keeps one partition). The ops:
- legacy `neuronxcc.nki`: Python operators on tiles (`+ - * / // % ** << >> & | ^`, and their `+=` forms);
- NKI 0.3+: the `nki.language` binary functions (`nl.add`, `nl.multiply`, `nl.maximum`, ...);
- every dialect: `nisa.tensor_tensor`'s two inputs.

Both counts literal and different: error. One side one partition and the other an expression (a chunk
`p_off:p_end`, `num_groups`): warning, the op needs a broadcast whenever that expression exceeds 1. A literal > 1
against an expression, or two different expressions, are not reported (they may be equal).

## Why it matters on Trainium
Each partition is its own lane: an instruction reads the same partitions of its inputs that it writes, so a value
in one partition cannot reach the others without a data movement. The legacy docs' known issues say "Partition
dimension broadcasting is not supported on operator overloads" (the `nl.*` functions did it, at a cost); NKI
0.3's release notes list "no broadcasting in binary ops" for `nki.language`; `tensor_tensor` requires equal
partition counts (`err_num_partition_mismatch`). trnfft's FFT butterfly multiplied a `(1, 1)` twiddle by
`(groups, 1)` columns and had to broadcast the twiddles on the host.

## Example
```python
tw = nl.load(twiddle[k:k+1])                  # one partition
col = nl.load(x2d[p_off:p_end, k:k+1])        # p_end - p_off partitions
prod = tw * col                               # NKI112 (warning)
```

## Fix
Load the value into every partition (`nl.load(twiddle_bcast[p_off:p_end, k:k+1])` from a host-broadcast array,
`.broadcast_to((P, 1))`, or a ones-vector matmul), or make it the `[P, 1]` scalar operand of
`nisa.tensor_scalar`.
""", policy="failure", emits=(Severity.ERROR,)),
]

E, W = Severity.ERROR, Severity.WARNING
_ALLOC = frozenset({"nl.ndarray", "nl.zeros", "nl.ones", "nl.full", "nl.empty"})
_LOOPS = frozenset({"range", "affine_range", "sequential_range", "static_range"})
_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift,
              ast.BitAnd, ast.BitOr, ast.BitXor)
_NL_BINARY = frozenset({
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal", "not_equal", "greater",
    "greater_equal", "less", "less_equal", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
    "logical_and", "logical_or", "logical_xor", "fmod", "mod"})
_NEW_SITE = re.compile(r"\.(?:tensor_tensor|" + "|".join(sorted(_NL_BINARY)) + r")\(")
Extent = int | str | None  # literal partition count, an expression's text, or unknown


def _int(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return None


def _slice_extent(s: ast.Slice) -> Extent:
    if s.step is not None and _int(s.step) != 1:
        return None  # a strided partition range: its count is not the bounds' difference
    lo, hi = s.lower, s.upper
    if hi is None:
        return None
    if lo is None or _int(lo) == 0:
        return _int(hi) if _int(hi) is not None else ast.unparse(hi)
    if _int(lo) is not None and _int(hi) is not None:
        return _int(hi) - _int(lo)
    if isinstance(hi, ast.BinOp) and isinstance(hi.op, ast.Add):
        for a, b in ((hi.left, hi.right), (hi.right, hi.left)):
            if ast.dump(a) == ast.dump(lo) and _int(b) is not None:
                return _int(b)
    return f"{ast.unparse(hi)} - {ast.unparse(lo)}"


class _Tiles:
    """Partition extents of the kernel's on-chip tiles, by name (None where a name gets several)."""

    def __init__(self, nf: NkiFile, statements: list[ast.For | ast.Assign]):
        self.nf = nf
        self.loop_vars: set[str] = set()
        self.extent: dict[str, Extent] = {}
        self.line: dict[str, int] = {}
        seen: dict[str, set] = {}
        for n in sorted(statements, key=lambda n: (n.lineno, n.col_offset)):
            if isinstance(n, ast.For):
                if isinstance(n.target, ast.Name) and isinstance(n.iter, ast.Call) and \
                        resolve_api(nf, n.iter.func).rsplit(".", 1)[-1] in _LOOPS:
                    self.loop_vars.add(n.target.id)
                continue
            if len(n.targets) != 1 or not isinstance(n.targets[0], ast.Name):
                continue
            name = n.targets[0].id
            ext = self._made(n.value)
            seen.setdefault(name, set()).add(ext)
            self.extent[name] = ext if len(seen[name]) == 1 else None
            self.line.setdefault(name, n.lineno)

    def _int_like(self, node: ast.AST) -> bool:
        if _int(node) is not None:
            return True
        if isinstance(node, ast.Name):
            return node.id in self.loop_vars
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            return self._int_like(node.left) and self._int_like(node.right)
        return False

    def _made(self, value: ast.AST) -> Extent:
        """The partition extent of a tile this expression creates (None when unknown or not a tile)."""
        if isinstance(value, ast.Call):
            api = resolve_api(self.nf, value.func)
            if api == "nl.load" and value.args:
                access = value.args[0]
                if isinstance(access, ast.Subscript):
                    first = access.slice.elts[0] if isinstance(access.slice, ast.Tuple) and access.slice.elts \
                        else access.slice
                    return _slice_extent(first) if isinstance(first, ast.Slice) else None
                return None
            if api in _ALLOC and value.args and isinstance(value.args[0], (ast.Tuple, ast.List)) \
                    and value.args[0].elts:
                buf = next((ast.unparse(k.value) for k in value.keywords if k.arg == "buffer"), "")
                if "hbm" in buf:
                    return None
                dims = value.args[0].elts
                par = [i for i, d in enumerate(dims) if isinstance(d, ast.Call) and ast.unparse(d.func).endswith("par_dim")]
                if par:  # legacy nl.par_dim marks the partition dim; dims before it are block dims
                    return _int(dims[0].args[0]) if par == [0] and dims[0].args else None
                return _int(dims[0])
            return None
        return self.operand(value)

    def operand(self, node: ast.AST) -> Extent:
        """The partition extent of an operand: a known tile or an index into one."""
        if isinstance(node, ast.Name):
            return self.extent.get(node.id)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and self.extent.get(node.value.id) is not None:  # an index into a tile of known partitions
            first = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) and node.slice.elts else node.slice
            if isinstance(first, ast.Slice):
                if first.lower is None and first.upper is None and first.step is None:
                    return self.extent.get(node.value.id)
                return _slice_extent(first)
            if isinstance(first, ast.Constant) and first.value is Ellipsis:
                return self.extent.get(node.value.id)
            return 1 if self._int_like(first) else None  # an integer index keeps one partition
        return None

    def origin(self, node: ast.AST) -> int | None:
        base = node.value if isinstance(node, ast.Subscript) else node
        return self.line.get(base.id) if isinstance(base, ast.Name) else None


_SCANNED = (ast.For, ast.Assign, ast.Call)  # the node types _scan reads
_SCANNED_LEGACY = (*_SCANNED, ast.BinOp, ast.AugAssign)


def _scan(nf: NkiFile, fn: ast.FunctionDef):
    """One walk of the kernel: the loops and assignments that make tiles, and (node, left operand, right operand,
    form) of each elementwise binary op the dialect forbids broadcasting in."""
    legacy = nf.dialect == "legacy"
    statements, sites = [], []
    for n in scope_nodes_of(nf, fn, _SCANNED_LEGACY if legacy else _SCANNED):
        if isinstance(n, (ast.For, ast.Assign)):
            statements.append(n)
        elif legacy and isinstance(n, ast.BinOp) and isinstance(n.op, _OPERATORS):
            sites.append((n, n.left, n.right, "operator"))
        elif legacy and isinstance(n, ast.AugAssign) and isinstance(n.op, _OPERATORS):
            sites.append((n, n.target, n.value, "operator"))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            last = n.func.attr
            if last != "tensor_tensor" and (legacy or last not in _NL_BINARY):
                continue
            api = resolve_api(nf, n.func)
            if api == "nisa.tensor_tensor":
                kw = {k.arg: k.value for k in n.keywords}
                pos = n.args[1:] if not legacy else n.args
                d1 = kw.get("data1", pos[0] if len(pos) > 0 else None)
                d2 = kw.get("data2", pos[1] if len(pos) > 1 else None)
                if d1 is not None and d2 is not None:
                    sites.append((n, d1, d2, "tensor_tensor"))
            elif not legacy and api.startswith("nl.") and api[3:] in _NL_BINARY and len(n.args) >= 2:
                sites.append((n, n.args[0], n.args[1], "nl"))
    return statements, sites


@check("NKI112", per_file=True)  # reads the kernel's Python AST
def partition_broadcast(nf: NkiFile, t: Target):
    if nf.dialect not in ("legacy", "new", "transitional"):
        return
    for k in nf.kernels:
        yield from kernel_findings(nf, k, "NKI112", _kernel_sites)


def _kernel_sites(nf: NkiFile, k: NkiKernel):
    """NKI112's findings in one kernel: they read its `def`, the file's dialect, imports and path."""
    legacy = nf.dialect == "legacy"
    fn = kernel_function(nf, k)
    if fn is None:
        return
    if not legacy and not _NEW_SITE.search("\n".join(nf.lines[k.line - 1:k.end_line])):
        return  # no tensor_tensor or nl binary op: nothing to check (new-dialect operators are NKI515's)
    statements, sites = _scan(nf, fn)
    tiles = _Tiles(nf, statements) if sites else None
    reported: set[int] = set()  # one finding per line (`a * b - c * d` is one defect)
    for node, left, right, how in sites:
        if node.lineno in reported:
            continue
        a, b = tiles.operand(left), tiles.operand(right)
        if a is None or b is None or a == b:
            continue
        if isinstance(a, int) and isinstance(b, int):
            sev = E
        elif 1 in (a, b):
            sev = W
        else:
            continue  # a literal > 1 against an expression, or two expressions: may be equal
        reported.add(node.lineno)
        one, other = (left, right) if a == 1 else (right, left)
        other_ext = b if a == 1 else a
        kind = {"operator": "Python operators do not broadcast across partitions",
                "nl": "nki.language binary ops do not broadcast (NKI 0.3+)",
                "tensor_tensor": "tensor_tensor needs the same partition count in both inputs"}[how]
        if sev is E and 1 not in (a, b):
            msg = (f"`{ast.unparse(node)[:80]}` combines tiles of {a} and {b} partitions: {kind}.")
        else:
            when = "" if sev is E else f" whenever `{other_ext}` > 1"
            msg = (f"`{ast.unparse(one)}` has one partition and `{ast.unparse(other)}` has {other_ext}: "
                   f"`{ast.unparse(node)[:80]}` needs a partition broadcast{when}, and {kind}.")
        f = emit("NKI112", nf, node.lineno, node.col_offset + 1, node.end_lineno, (node.end_col_offset or 0) + 1,
                 msg, {"left_partitions": a, "right_partitions": b, "form": how},
                 severity=sev, confidence="high" if sev is E else "medium",
                 fix="Give both operands the same partition count: load or copy the one-partition value into "
                     "every partition (a broadcast load of the same row into each partition, `.broadcast_to`, "
                     "or a ones-matmul), or pass it as a `[P, 1]` operand of `nisa.tensor_scalar`.")
        line = tiles.origin(one)
        yield f.model_copy(update={"related": [RelatedLocation(
            file=nf.path or "", line=line, message=f"`{ast.unparse(one)}` gets one partition here")]}) \
            if line and line != node.lineno else f
