"""Tile offsets of matmul operands: which loop variables select each axis, and with what step.

A subscript like `lhsT[k * TILE_K:(k + 1) * TILE_K, m * 128 + i_f]` is read with Python's `ast` into
per-axis linear offsets {loop var: coefficient} (+ constant) and an extent. Index tiles (`nl.arange`,
names bound to it) contribute the extent, not the offset. Anything non-linear makes the axis unknown,
and the rules using it stay silent.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ...parse import consts
from ...parse.nki_model import DMA_APIS, Call, Matmul, NkiKernel

_UNKNOWN = object()


@dataclass(frozen=True)
class Axis:
    terms: tuple[tuple[str, int], ...]  # (symbol, coefficient), sorted
    const: int
    extent: int | None

    @property
    def symbols(self) -> set[str]:
        return {s for s, c in self.terms if c}

    def coef(self, sym: str) -> int:
        return dict(self.terms).get(sym, 0)

    def text(self) -> str:
        parts = [f"{c}*{s}" if c != 1 else s for s, c in self.terms if c]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)


class _Lin(dict):
    """symbol -> coefficient, with key '' for the constant."""


def _lin_add(a: _Lin, b: _Lin, sign: int = 1) -> _Lin:
    out = _Lin(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + sign * v
    return out


class _Eval:
    def __init__(self, k: NkiKernel):
        self.env = getattr(k, "_env", None)
        self.aranges: dict[str, int | None] = {}
        self.axes_memo: dict[str, list | None] = {}  # operand text -> axes()
        self.loop_vars = {lp.var for lp in k.loops if lp.var}
        for a in k.assignments:
            if a.op == "=" and "arange" in a.value_text:
                self.aranges[a.name] = _arange_size(a.value_text, self)

    def const(self, name: str) -> Any:
        if self.env is None:
            return _UNKNOWN
        v = self.env.lookup(name)
        i = consts.as_int(v)
        return i if i is not None else _UNKNOWN

    def local(self, name: str) -> _Lin | None:
        """A local bound to a linear form of loop variables (`start = n * 512 + t + 126`), resolved."""
        if self.env is None or name in self.loop_vars:
            return None
        v = self.env.lookup(name)
        if not isinstance(v, consts.Lin) or v.single == name:
            return None
        out = _Lin({"": consts.as_int(v.const)} if v.const else {})
        if v.const and out[""] is None:
            return None
        for sym, c in v.terms:
            ci = consts.as_int(c)
            if ci is None or not sym.isidentifier():
                return None
            out[sym] = out.get(sym, 0) + ci
        return out

    def lin(self, node: ast.AST) -> tuple[_Lin, int | None] | None:
        """(linear offset, index-tile extent or None) of an index expression."""
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return _Lin({"": node.value}), None
        if isinstance(node, ast.Name):
            if node.id in self.aranges:
                return _Lin(), self.aranges[node.id]
            c = self.const(node.id)
            if c is not _UNKNOWN:
                return _Lin({"": c}), None
            loc = self.local(node.id)
            return (loc, None) if loc is not None else (_Lin({node.id: 1}), None)
        if isinstance(node, ast.Subscript) or isinstance(node, ast.Call):
            src = ast.unparse(node)
            if "arange" in src:
                return _Lin(), _arange_size(src, self)
            return None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            r = self.lin(node.operand)
            return (_Lin({k: -v for k, v in r[0].items()}), r[1]) if r else None
        if isinstance(node, ast.BinOp):
            left, right = self.lin(node.left), self.lin(node.right)
            if left is None or right is None:
                return None
            ext = left[1] or right[1]
            if isinstance(node.op, (ast.Add, ast.Sub)):
                return _lin_add(left[0], right[0], 1 if isinstance(node.op, ast.Add) else -1), ext
            if isinstance(node.op, ast.Mult):
                for x, y in ((left[0], right[0]), (right[0], left[0])):
                    if set(x) <= {""}:
                        c = x.get("", 0)
                        return _Lin({k: v * c for k, v in y.items()}), None
            return None
        return None


@lru_cache(maxsize=4096)
def _expression(text: str) -> ast.AST | None:
    """The parsed expression (texts repeat across kernels and edits; callers only read the nodes)."""
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None


def _arange_size(text: str, ev: _Eval) -> int | None:
    tree = _expression(text)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("arange") and node.args:
            a = node.args[-1]
            if isinstance(a, ast.Constant) and isinstance(a.value, int):
                return a.value
            if isinstance(a, ast.Name):
                c = ev.const(a.id)
                return c if c is not _UNKNOWN else None
    return None


def subscript_elements(text: str) -> list[ast.AST] | None:
    """The index expressions of `name[...]`, one per axis; None when the text is not a subscript."""
    node = _expression(text)
    if not isinstance(node, ast.Subscript):
        return None
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


def axes(text: str, ev: _Eval) -> list[Axis | None] | None:
    """Per-axis offsets of `name[...]`; None when the text is not a subscript."""
    try:
        found = ev.axes_memo[text]
    except KeyError:
        found = ev.axes_memo[text] = _axes(text, ev)
    return None if found is None else list(found)


def _axes(text: str, ev: _Eval) -> list[Axis | None] | None:
    elts = subscript_elements(text)
    if elts is None:
        return None
    out: list[Axis | None] = []
    for e in elts:
        if isinstance(e, ast.Slice):
            lo = ev.lin(e.lower) if e.lower is not None else (_Lin(), None)
            hi = ev.lin(e.upper) if e.upper is not None else None
            if lo is None:
                out.append(None)
                continue
            ext = None
            if hi is not None:
                d = _lin_add(hi[0], lo[0], -1)
                if set(k for k, v in d.items() if v) <= {""}:
                    ext = d.get("", 0)
            out.append(_axis(lo[0], ext))
        else:
            r = ev.lin(e)
            out.append(_axis(r[0], r[1] if r[1] is not None else 1) if r else None)
    return out


def _axis(lin: _Lin, extent: int | None) -> Axis:
    terms = tuple(sorted((k, int(v)) for k, v in lin.items() if k and v))
    return Axis(terms, int(lin.get("", 0)), extent)


@dataclass
class OperandSource:
    param: str
    text: str
    line: int
    axes: list[Axis | None]


def operand_source(k: NkiKernel, tile: str | None, before_line: int, ev: _Eval) -> OperandSource | None:
    """The kernel-input slice a tile was last loaded from (nl.load / dma_copy), if it is one."""
    if tile is None:
        return None
    best: Call | None = None
    for c in k.calls:
        if c.api not in DMA_APIS or c.line > before_line:
            continue
        dst = c.operand("dst")
        if c.target == tile or (dst is not None and dst.name == tile and c.dst_style):
            if best is None or c.line >= best.line:
                best = c
    if best is None:
        return None
    src = best.operand("src")
    if src is None or not src.is_param and src.buffer != "hbm":
        return None
    ax = axes(src.text, ev)
    if ax is None:
        return None
    return OperandSource(src.name or "", src.text, best.line, ax)


def loop_vars(k: NkiKernel) -> dict[str, int]:
    return {lp.var: lp.line for lp in k.loops if lp.var}


def _tile(ax: list[Axis | None]) -> list[Axis | None]:
    """The on-chip tile's axes of an HBM slice: the trailing two; leading axes are batch indices."""
    return ax[-2:] if len(ax) > 2 else ax


def _symbols(ax: list[Axis | None] | None) -> set[str] | None:
    """Every symbol in any subscript (None when an axis cannot be read)."""
    if ax is None or any(a is None for a in ax):
        return None
    return {s for a in ax if a is not None for s in a.symbols}


def operand_symbols(k: NkiKernel, op, src: OperandSource | None, ev: _Eval) -> set[str] | None:
    """Symbols an operand depends on: its HBM source's subscripts plus its own (SBUF slice) subscript."""
    if src is None:
        return None
    own = axes(op.text, ev) if op is not None and "[" in op.text else []
    a, b = _symbols(src.axes), _symbols(own or [])
    return None if a is None else a | (b or set())


def output_symbols(out_axes: list[Axis | None] | None) -> set[str]:
    return {s for a in out_axes or [] if a is not None for s in a.symbols}


def sliding_windows(k: NkiKernel, ev: _Eval, out_axes: list[Axis | None] | None) -> list[dict[str, Any]]:
    """Loads whose offset steps by less than their extent over a loop that selects no output element:
    the taps of a convolution or stencil reading overlapping windows (intended, not an indexing error)."""
    out_syms = output_symbols(out_axes)
    lvars = {lp.var: lp for lp in k.loops if lp.var}
    found = []
    for c in k.calls:
        if c.api not in DMA_APIS:
            continue
        src = c.operand("src")
        if src is None or not (src.is_param or src.buffer == "hbm"):
            continue
        ax = axes(src.text, ev)
        enclosing = {lp.var for lp in c.loops if lp.var}
        for i, a in enumerate(ax or []):
            if a is None or a.extent is None or a.extent <= 1:
                continue
            for sym, step in a.terms:
                if sym in enclosing and sym in lvars and 0 < step < a.extent and sym not in out_syms:
                    lp = lvars[sym]
                    found.append({"line": c.line, "col": c.col, "operand": src.text, "tensor": src.name,
                                  "axis": i, "extent": a.extent, "step": step, "loop_var": sym,
                                  "loop_line": lp.line, "taps": lp.trip_count, "tile": c.target or
                                  (d.name if (d := c.operand("dst")) is not None else None)})
    return found


def check_matmul(k: NkiKernel, mm: Matmul, ev: _Eval, out_axes: list[Axis | None] | None) -> list[dict[str, Any]]:
    """Offset problems of one matmul's operands: dicts with message, line and evidence.

    HBM slices of rank > 2 are a batch index (leading axes) plus a 2-D tile (trailing axes); an
    operand depends on a loop variable when the variable appears in any of its subscripts."""
    problems: list[dict[str, Any]] = []
    line = mm.call.line
    st = operand_source(k, mm.stationary.name if mm.stationary else None, line, ev)
    mv = operand_source(k, mm.moving.name if mm.moving else None, line, ev)
    lvars = loop_vars(k)
    enclosing = {lp.var for lp in mm.call.loops if lp.var}
    # 1. the contraction offsets must agree (K on the partition axis: axis 0 of lhsT and rhs).
    st_k = 0 if mm.transpose_x else 1
    st_t, mv_t = (_tile(st.axes) if st else []), (_tile(mv.axes) if mv else [])
    if st and mv and len(st_t) > st_k and mv_t and st_t[st_k] is not None and mv_t[0] is not None:
        a, b = st_t[st_k], mv_t[0]
        if (a.terms, a.const) != (b.terms, b.const) and (a.symbols | b.symbols) & enclosing:
            problems.append(dict(
                line=st.line if a.symbols - b.symbols or a.const != b.const else mv.line,
                message=f"The matmul on line {line} contracts stationary `{st.text}` (line {st.line}) with moving "
                        f"`{mv.text}` (line {mv.line}), but their contraction offsets differ: {a.text()} vs "
                        f"{b.text()}. Both must select the same K rows.",
                evidence={"kind": "contraction-offset", "stationary": st.text, "moving": mv.text,
                          "stationary_offset": a.text(), "moving_offset": b.text(), "matmul_line": line},
                fix=f"Load `{st.text}` and `{mv.text}` at the same contraction offset (both {a.text()} or both "
                    f"{b.text()}, whichever walks K)."))
    # 2. every loop variable that selects an output tile must select some operand tile.
    used_st = operand_symbols(k, mm.stationary, st, ev)
    used_mv = operand_symbols(k, mm.moving, mv, ev)
    if out_axes and used_st is not None and used_mv is not None:
        used = used_st | used_mv
        n_batch = max(0, len(out_axes) - 2)
        for i, o in enumerate(out_axes):
            if o is None:
                continue
            drive = (o.symbols & enclosing) & set(lvars)
            missing = drive - used
            if not missing:
                continue
            what = "batch index" if i < n_batch else ("row tile", "column tile")[min(i - n_batch, 1)]
            wrong = st if st else mv
            names = ", ".join(f"`{v}`" for v in sorted(missing))
            problems.append(dict(
                line=wrong.line,
                message=f"The output {what} is selected by loop variable(s) {names}, but no subscript of either "
                        f"matmul operand (`{st.text}`, `{mv.text}`) uses {'it' if len(missing) == 1 else 'them'}: "
                        f"every {what} receives the same product.",
                evidence={"kind": "output-tile-not-selected", "output_axis": i, "loop_vars": sorted(missing),
                          "stationary": st.text, "moving": mv.text, "matmul_line": line},
                fix=f"Index the operand that carries this {what} by {names}, with the output's step "
                    f"({' + '.join(f'{v} * {o.coef(v)}' if o.coef(v) != 1 else v for v in sorted(missing))})."))
    # 3. a loop offset must step by the tile extent (else tiles overlap or leave gaps), unless the loop
    #    selects no output element: then the overlap is a sliding window (convolution taps, stencils).
    out_syms = output_symbols(out_axes)
    for src, role in ((st, "stationary"), (mv, "moving")):
        if src is None:
            continue
        for i, ax in enumerate(src.axes):
            if ax is None or ax.extent is None or ax.extent <= 1:
                continue
            for sym, c in ax.terms:
                if not (sym in enclosing and sym in lvars and c not in (0, ax.extent) and c > 0):
                    continue
                if c < ax.extent and out_axes is not None and sym not in out_syms:
                    continue  # a sliding window over a reduction/tap loop (NKI111 advises on the reloads)
                problems.append(dict(
                    line=src.line,
                    message=f"The {role} tile `{src.text}` is {ax.extent} wide on axis {i} but its offset "
                            f"steps by {c} per `{sym}` iteration, and `{sym}` also selects the output tile: "
                            f"tiles {'overlap' if c < ax.extent else 'skip elements'}.",
                    evidence={"kind": "offset-step", "operand": src.text, "axis": i, "extent": ax.extent,
                              "step": c, "loop_var": sym, "matmul_line": line},
                    fix=f"Step the offset of `{src.text}` by {ax.extent} per `{sym}` (`{sym} * {ax.extent}`), the "
                        "tile's extent."))
    return problems


def output_axes(k: NkiKernel, store: Call | None, ev: _Eval) -> list[Axis | None] | None:
    if store is None:
        return None
    d = store.operand("dst")
    return axes(d.text, ev) if d is not None else None


def evaluator(k: NkiKernel) -> _Eval:
    return k.memo("evaluator", lambda: _Eval(k))


def clear_caches() -> None:
    """Forget the per-text expression cache (benchmarks measuring a cold check call this)."""
    _expression.cache_clear()
