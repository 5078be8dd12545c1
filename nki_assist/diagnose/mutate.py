"""Candidate edits of one source line, generated from the line's own expressions.

Each edit changes one expression on the line into a near neighbour a port defect is often one step away from:
`%` and `//` swapped, `//` rounded up, a constant term dropped or its sign flipped, `+`/`-` and `*`/`/` swapped,
an integer constant replaced by another constant of the kernel (or of the CUDA original), a loop variable by
another loop variable, a size name by another size name (the true size for a padded one), an in-tile index by
the tile start plus it (a mask or offset without the tile start), `floor`/`ceil`, an `axis=` or a transpose flag,
a low-precision dtype by fp32, the two indices of a subscript swapped (the transposed operand), the two operands
of a call swapped, the last-tile count `a % b` as `(a - 1) % b + 1`, and a statement of an `if` branch replaced
by its counterpart in the other branch. No edit is chosen by a file or kernel name: the simulator decides.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import dataclass

from .slice import LOW_DTYPES, Kernel, writes

MAX_PER_LINE = 40


@dataclass(frozen=True)
class Edit:
    line: int
    old: str  # the whole physical line before and after
    new: str
    what: str  # the edit in words: "`t * 64` -> `t * 128`"
    kind: str  # index | constant | loop-variable | size | tile-start | rounding | axis | dtype | transpose | branch
    context: frozenset[str] = frozenset()  # names of the innermost expression around the edited one


def _seg(lines: list[str], n: ast.AST) -> str:
    return lines[n.lineno - 1][n.col_offset:n.end_col_offset]


def _int(n: ast.AST) -> int | None:
    return n.value if isinstance(n, ast.Constant) and type(n.value) is int else None


class Vocabulary:
    """What replacements a kernel offers: its loop variables, size names, integer constants, tile starts."""

    def __init__(self, k: Kernel, extra_constants: set[int] = frozenset()):
        self.loop_vars = sorted(set(k.loop_vars.values()))
        self.sizes: list[str] = []
        self.aranges: set[str] = set()
        self.starts: list[str] = []  # `X` of the kernel's `X + i_p` index expressions (a tile start)
        consts: set[int] = set(extra_constants)
        for n in k.tree.body:  # module constants (`P = 128`) are sizes the kernel names
            if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and _int(n.value) is not None:
                self.sizes.append(n.targets[0].id)
        for n in ast.walk(k.func):
            if isinstance(n, ast.Assign):
                src = ast.unparse(n.value)
                names = [t.id for t in ast.walk(n.targets[0]) if isinstance(t, ast.Name)]
                if ".shape" in src or (isinstance(n.value, ast.BinOp) and not _has_call(n.value)):
                    self.sizes += [x for x in names if x not in self.sizes]
                if "arange" in src or "mgrid" in src:
                    self.aranges.update(names)
            if (c := _int(n)) is not None and c >= 2:
                consts.add(c)
        self.tile_starts: dict[str, list[str]] = {}  # loop variable -> names assigned `v * C` (its tile start)
        for n in ast.walk(k.func):
            if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.BinOp) \
                    and isinstance(n.value.op, ast.Mult):
                for v in _names(n.value):
                    if v in self.loop_vars:
                        self.tile_starts.setdefault(v, []).append(n.targets[0].id)
        for n in ast.walk(k.func):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
                for a, b in ((n.left, n.right), (n.right, n.left)):
                    if isinstance(b, ast.Name) and b.id in self.aranges and not _mentions(a, self.aranges):
                        s = ast.unparse(a)
                        if s not in self.starts:
                            self.starts.append(s)
        self.constants = sorted(consts)


def _names(n: ast.AST) -> list[str]:
    return [x.id for x in ast.walk(n) if isinstance(x, ast.Name)]


def _has_call(n: ast.AST) -> bool:
    return any(isinstance(x, ast.Call) for x in ast.walk(n))


def _mentions(n: ast.AST, names: set[str]) -> bool:
    return any(isinstance(x, ast.Name) and x.id in names for x in ast.walk(n))


def _variants(n: ast.AST, voc: Vocabulary, in_mask: bool) -> Iterator[tuple[ast.AST, str, str]]:
    """(replacement node, description, kind) for one expression node."""
    if isinstance(n, ast.BinOp):
        swaps = {ast.Mod: (ast.FloorDiv, "index"), ast.FloorDiv: (ast.Mod, "index"), ast.Add: (ast.Sub, "index"),
                 ast.Sub: (ast.Add, "index"), ast.Mult: (ast.Div, "scale"), ast.Div: (ast.Mult, "scale")}
        if type(n.op) in swaps:
            op, kind = swaps[type(n.op)]
            yield ast.BinOp(n.left, op(), n.right), "operator swapped", kind
        if isinstance(n.op, ast.FloorDiv):
            up = ast.BinOp(ast.BinOp(ast.BinOp(n.left, ast.Add(), n.right), ast.Sub(), ast.Constant(1)),
                           ast.FloorDiv(), n.right)
            yield up, "rounded up instead of down", "rounding"
        if isinstance(n.op, ast.Mod):
            for v in voc.sizes:
                if v not in _names(n.right):
                    yield ast.BinOp(n.left, ast.FloorDiv(), ast.Name(v, ast.Load())), \
                        "divided by the other size instead of taken modulo", "index"
            last = ast.BinOp(ast.BinOp(ast.BinOp(n.left, ast.Sub(), ast.Constant(1)), ast.Mod(), n.right),
                             ast.Add(), ast.Constant(1))
            yield last, "a full last tile when the size is a multiple", "rounding"
        if isinstance(n.op, (ast.Add, ast.Sub)):
            for keep, drop in ((n.left, n.right), (n.right, n.left)):
                if _int(drop) is not None or (isinstance(drop, ast.BinOp) and _int(drop.right) is not None
                                              and not _mentions(drop, set(voc.aranges))):
                    yield keep, "term dropped", "index"
        for v in set(_names(n)) & set(voc.loop_vars):  # `j * P` -> `i * P`: edited wherever it is written
            for w in voc.loop_vars:
                if w != v:
                    yield _rename(n, v, w), "the other loop variable", "loop-variable"
        used = set(_names(n))
        if used and used <= set(voc.sizes) and not _has_call(n):  # a size expression: the true size instead
            for v in voc.sizes:
                if v not in used:
                    yield ast.Name(v, ast.Load()), "the size itself instead of a derived (padded) one", "size"
    elif (c := _int(n)) is not None and c >= 2:
        for other in voc.constants:
            if other != c and other >= 2 and (other in (2 * c, c // 2) or max(c, other) % min(c, other) == 0):
                yield ast.Constant(other), "constant replaced", "constant"
        for v in voc.sizes:
            yield ast.Name(v, ast.Load()), "the size instead of a literal", "constant"
    elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
        if n.id in voc.loop_vars:
            for v in voc.loop_vars:
                if v != n.id:
                    yield ast.Name(v, ast.Load()), "the other loop variable", "loop-variable"
            for v in voc.tile_starts.get(n.id, []):
                yield ast.Name(v, ast.Load()), "the tile start instead of the tile index", "tile-start"
        if n.id in voc.sizes:
            for v in voc.sizes:
                if v != n.id:
                    yield ast.Name(v, ast.Load()), "the other size", "size"
        if n.id in voc.aranges:
            for s in voc.starts:
                yield ast.parse(f"({s} + {n.id})", mode="eval").body, "the tile start added", "tile-start"
    elif isinstance(n, ast.Compare) and len(n.ops) == 1:
        flip = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
        if type(n.ops[0]) in flip:
            yield ast.Compare(n.left, [flip[type(n.ops[0])]()], n.comparators), "strict/inclusive bound swapped", \
                "tile-start"
    elif isinstance(n, ast.Attribute):
        if n.attr in LOW_DTYPES:
            yield ast.Attribute(n.value, "float32", ast.Load()), "fp32 instead of a low-precision dtype", "dtype"
        if n.attr in ("floor", "ceil"):
            yield ast.Attribute(n.value, "ceil" if n.attr == "floor" else "floor", ast.Load()), \
                "ceil/floor swapped", "rounding"
    elif isinstance(n, ast.Call):
        for i, kw in enumerate(n.keywords):
            if kw.arg == "axis" and _int(kw.value) is not None:
                for other in (0, 1, 2):
                    if other != kw.value.value:
                        yield _with_kw(n, i, ast.Constant(other)), "the other axis", "axis"
            elif isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, bool):
                yield _with_kw(n, i, ast.Constant(not kw.value.value)), f"`{kw.arg}` flipped", "transpose"
        if len(n.args) >= 2 and not any(isinstance(a, ast.Starred) for a in n.args[:2]):
            fn = ast.unparse(n.func)
            if any(w in fn for w in ("matmul", "add", "subtract", "multiply", "maximum", "minimum", "divide")):
                m = copy.copy(n)
                m.args = [n.args[1], n.args[0], *n.args[2:]]
                yield m, "operands swapped", "transpose"
    elif isinstance(n, ast.Subscript) and isinstance(n.value, ast.Attribute) and n.value.attr == "shape" \
            and _int(n.slice) is not None:
        for other in range(3):
            if other != n.slice.value:
                yield ast.Subscript(n.value, ast.Constant(other), ast.Load()), "the other axis of the shape", "axis"
    elif isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Tuple) and len(n.slice.elts) == 2:
        a, b = n.slice.elts
        if ast.unparse(a) != ast.unparse(b) and not isinstance(a, ast.Slice) and not isinstance(b, ast.Slice):
            m = copy.copy(n)
            m.slice = ast.Tuple([b, a], ast.Load())
            yield m, "the indices swapped (transposed operand)", "transpose"


def _rename(n: ast.AST, old: str, new: str) -> ast.AST:
    m = copy.deepcopy(n)
    for x in ast.walk(m):
        if isinstance(x, ast.Name) and x.id == old:
            x.id = new
    return m


def _with_kw(n: ast.Call, i: int, value: ast.AST) -> ast.Call:
    m = copy.copy(n)
    m.keywords = [ast.keyword(kw.arg, value) if j == i else kw for j, kw in enumerate(n.keywords)]
    return m


def _mask_nodes(st: ast.stmt) -> set[int]:
    out: set[int] = set()
    for n in ast.walk(st):
        if isinstance(n, ast.keyword) and n.arg == "mask" or isinstance(n, ast.Compare):
            out |= {id(x) for x in ast.walk(n)}
    return out


def _wrap(n: ast.AST) -> str:
    s = ast.unparse(n)
    return f"({s})" if isinstance(n, (ast.BinOp, ast.BoolOp, ast.Compare)) and not s.startswith("(") else s


def edits_for_line(k: Kernel, line: int, voc: Vocabulary) -> list[Edit]:
    """Every candidate edit of the statement at `line` (its sub-expressions on that line, and its branch twin)."""
    st = k.stmt_at.get(line)
    if st is None:
        return []
    lines = k.lines
    nodes = [n for n in ast.walk(st if not isinstance(st, (ast.For, ast.If, ast.While)) else
                                 (st.iter if isinstance(st, ast.For) else st.test))]
    in_mask = _mask_nodes(st)
    around = {id(c): p for p in nodes for c in ast.iter_child_nodes(p)}
    out: list[Edit] = []
    seen: set[str] = set()
    for n in nodes:
        if not hasattr(n, "lineno") or n.lineno != n.end_lineno or not isinstance(n, ast.expr):
            continue
        old = lines[n.lineno - 1]
        seg = _seg(lines, n)
        parent = around.get(id(n))
        ctx = frozenset(_names(n) + (_names(parent) if isinstance(parent, (ast.BinOp, ast.Compare)) else []))
        for rep, why, kind in _variants(n, voc, id(n) in in_mask):
            text = _wrap(rep) if not isinstance(rep, (ast.Name, ast.Constant)) else ast.unparse(rep)
            if text == seg:
                continue
            new = old[:n.col_offset] + text + old[n.end_col_offset:]
            if new in seen or not _parses(lines, n.lineno, new):
                continue
            seen.add(new)
            out.append(Edit(n.lineno, old, new, f"`{seg}` -> `{text}` ({why})", kind, ctx))
            if old.count(seg) > 1 and (every := old.replace(seg, text)) not in seen and \
                    _parses(lines, n.lineno, every):  # the same expression written twice (a slice's start and stop)
                seen.add(every)
                out.append(Edit(n.lineno, old, every, f"`{seg}` -> `{text}` everywhere on the line ({why})", kind,
                                ctx))
    out += _branch_twin(k, st, seen)
    return out[:MAX_PER_LINE]


def _parses(lines: list[str], line: int, new: str) -> bool:
    src = "\n".join(lines[:line - 1] + [new] + lines[line:])
    try:
        ast.parse(src)
    except SyntaxError:
        return False
    return True


def _branch_twin(k: Kernel, st: ast.stmt, seen: set[str]) -> list[Edit]:
    """The statement of the other `if` branch that writes the same names, put in place of this one."""
    if st.lineno != st.end_lineno:
        return []
    for node in ast.walk(k.func):
        if not isinstance(node, ast.If) or not node.orelse:
            continue
        for mine, other in ((node.body, node.orelse), (node.orelse, node.body)):
            if st not in mine:
                continue
            names = set(writes(st))
            twin = next((o for o in other if o.lineno == o.end_lineno and names and set(writes(o)) == names
                         and type(o) is type(st)), None)
            if twin is None:
                continue
            old = k.lines[st.lineno - 1]
            indent = old[:len(old) - len(old.lstrip())]
            new = indent + k.lines[twin.lineno - 1].strip()
            if new != old and new not in seen:
                return [Edit(st.lineno, old, new, f"the statement of the other branch (line {twin.lineno})",
                             "branch")]
    return []
