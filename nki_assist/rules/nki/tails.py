"""Separate tail tiles: a floored main loop plus one partial tile after it (NKI207, and the tail
recognition NKI203/MIG101 use to stay silent on such loops).

`for t in range(R // 128)` that stores out[t*128:(t+1)*128] leaves rows [(R // 128) * 128, R) to a
block after the loop. That block must start where the loop stopped: 128 * (R // 128), or R - R % 128.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from ...api.hardware import Target
from ...findings import Severity
from ...parse import consts
from ...parse.nki_model import DMA_APIS, Call, Loop, NkiFile, NkiKernel
from ..migration.index import subscript_elements
from ..migration.pair import nki_output_names
from ..registry import RuleSpec
from .common import check, emit

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI207", "tail-tile-offset", "indexing-error", Severity.ERROR,
             "A floored main loop is completed by a partial tile after it, but that tile starts at a different "
             "offset than where the loop stopped (e.g. R // 128 instead of (R // 128) * 128).",
             fix="Start the partial tile at tile * (N // tile) (= N - N % tile), the first row the loop did not cover.",
             doc="""\
## What it finds
A kernel that tiles an axis with a floored loop (`for t in range(R // 128)`, storing rows
`t * 128 ... (t + 1) * 128`) and completes it with one partial tile after the loop, where that partial
tile starts at a different offset than where the loop stopped. The usual slip is the tile *count*
`R // 128` used as the first *row*, instead of `(R // 128) * 128` (= `R - R % 128`).

## Why it matters on Trainium
Shapes are static at trace time, so a separate tail tile is a common and correct way to handle a ragged
size without masks. Started at the wrong row it rewrites rows the main loop already produced (with the
wrong inputs) and leaves the last `R % 128` rows of the output unwritten: garbage in HBM, and NaN in the
simulator, only on sizes that are not a multiple of the tile.

## Example
```python
full = R // P
for t in range(full):
    nisa.dma_copy(dst=out[t * P:(t + 1) * P, 0:D], src=...)
rem = R - full * P
if rem > 0:
    r0 = R // P                      # a tile count, not a row
    nisa.dma_copy(dst=out[r0:r0 + rem, 0:D], src=...)
```

## Fix
Start the partial tile at `full * P` (or `R - rem`), the first row the loop did not cover, and read the
inputs at the same offset. NKI203 and MIG101 stay silent on a floored loop that such a tail tile
completes; the numerics (a ragged size in the port spec) confirm the tail either way.
"""),
]


@dataclass
class TailBlock:
    loop: Loop
    axis: int  # output axis the loop tiles
    tile: int
    floor_term: str | None  # the env's opaque term for `num // tile`
    store: Call  # a store to the same output after the loop
    start: dict[str, Any] | None  # its start offset on that axis, as {term: coef, "": const}
    start_name: str | None  # the variable the start offset is read from, if any


def _output_stores(k: NkiKernel) -> list[tuple[Call, str]]:
    outs = nki_output_names(k)
    res = []
    for c in k.calls:
        if c.api not in DMA_APIS and c.api != "nl.store":
            continue
        d = c.operand("dst")
        if d is not None and d.name in outs:
            res.append((c, d.text))
    return res


def _lin(node: ast.AST, env, aranges: set[str]) -> dict[str, Any] | None:
    """A linear form over the env's terms (opaque floor-division terms included); index tiles count 0."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return {"": node.value}
    if isinstance(node, ast.Name):
        if node.id in aranges:
            return {}
        v = env.lookup(node.id) if env is not None else None
        if isinstance(v, int) and not isinstance(v, bool):
            return {"": v}
        if isinstance(v, consts.Lin):
            out = {t: c for t, c in v.terms}
            if v.const:
                out[""] = v.const
            return out
        return {node.id: 1}
    if isinstance(node, (ast.Subscript, ast.Call)) and "arange" in ast.unparse(node):
        return {}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):  # `R // 128`: the env's opaque term
        a, b = _lin(node.left, env, aranges), _lin(node.right, env, aranges)
        if a is None or b is None or set(b) != {""} or len(a) != 1 or "" in a or next(iter(a.values())) != 1:
            return None
        return {f"{next(iter(a))} // {b['']}": 1}
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        a, b = _lin(node.left, env, aranges), _lin(node.right, env, aranges)
        if a is None or b is None:
            return None
        if isinstance(node.op, ast.Mult):
            for x, y in ((a, b), (b, a)):
                if set(x) <= {""}:
                    c = x.get("", 0)
                    return {k: v * c for k, v in y.items()}
            return None
        sign = 1 if isinstance(node.op, ast.Add) else -1
        out = dict(a)
        for k2, v in b.items():
            out[k2] = out.get(k2, 0) + sign * v
        return {k2: v for k2, v in out.items() if v}
    return None


def _lower(node: ast.AST) -> ast.AST | None:
    if isinstance(node, ast.Slice):
        return node.lower if node.lower is not None else ast.Constant(0)
    return node


def _offset_variable(lo: ast.AST | None, env, aranges: set[str]) -> str | None:
    """The variable an offset expression reads its start from (`r0` in `r0 + i_t`), when it is one."""
    if lo is None or any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.FloorDiv) for n in ast.walk(lo)):
        return None
    names = {n.id for n in ast.walk(lo) if isinstance(n, ast.Name) and n.id not in aranges}
    if len(names) != 1:
        return None
    name = names.pop()
    return name if env is not None and isinstance(env.lookup(name), consts.Lin) else None


def tail_blocks(k: NkiKernel) -> list[TailBlock]:
    """Floored loops whose output tiles are completed by a store after the loop."""
    return k.memo("tail_blocks", lambda: _tail_blocks(k))


def _tail_blocks(k: NkiKernel) -> list[TailBlock]:
    env = getattr(k, "_env", None)
    aranges = {a.name for a in k.assignments if a.op == "=" and "arange" in a.value_text}
    stores = _output_stores(k)
    found = []
    for lp in k.loops:
        if not lp.var or not lp.floor_divs:
            continue
        for _, num, den, *_ in lp.floor_divs:
            for c, text in stores:
                if not lp.line <= c.line <= lp.end_line:
                    continue
                subs = subscript_elements(text)
                axis = next((i for i, s in enumerate(subs or []) if (lo := _lower(s)) is not None
                             and (f := _lin(lo, env, aranges)) is not None and f.get(lp.var) == den), None)
                if axis is None:
                    continue
                name = text.split("[")[0].strip()
                floor = next((t for t, fd in (env.floordivs.items() if env is not None else ())
                              if fd.den == den and fd.num == num), None)
                for c2, text2 in stores:
                    if c2.line <= lp.end_line or text2.split("[")[0].strip() != name:
                        continue
                    subs2 = subscript_elements(text2) or []
                    lo = _lower(subs2[axis]) if axis < len(subs2) else None
                    start = _lin(lo, env, aranges) if lo is not None else None
                    start_name = _offset_variable(lo, env, aranges)
                    found.append(TailBlock(lp, axis, den, floor, c2, start, start_name))
                break
    return found


def has_tail_block(k: NkiKernel, lp: Loop) -> bool:
    return any(tb.loop is lp for tb in tail_blocks(k))


@check("NKI207")
def tail_block_offset(nf: NkiFile, t: Target):
    for k in nf.kernels:
        for tb in tail_blocks(k):
            if tb.start is None or tb.floor_term is None:
                continue
            coef = tb.start.get(tb.floor_term, 0)
            others = {key: v for key, v in tb.start.items() if key not in (tb.floor_term, "") and v}
            if coef == tb.tile or others or not coef or tb.start.get(""):
                continue  # starts where the loop stopped, or a form this check cannot judge
            where = next((a for a in reversed(k.assignments) if a.name == tb.start_name and a.line <= tb.store.line
                          and a.op == "="), None) if tb.start_name else None
            line, col = (where.line, where.col) if where is not None else (tb.store.line, tb.store.col)
            lp = tb.loop
            got = tb.floor_term if coef == 1 else f"{coef} * ({tb.floor_term})"
            yield emit(
                "NKI207", nf, line, col, line, None,
                f"The partial tile after loop `{lp.var}` (line {lp.line}, `{lp.trip_expr}` full tiles of {tb.tile}) "
                f"starts at {got} on axis {tb.axis} of the output, but the loop stopped at "
                f"{tb.tile} * ({tb.floor_term}): the tail is written at the wrong offset, and the last rows of the "
                "output are never stored.",
                {"loop_var": lp.var, "loop_line": lp.line, "tile": tb.tile, "axis": tb.axis,
                 "start_coefficient": coef, "floor_term": tb.floor_term, "store_line": tb.store.line,
                 "start_variable": tb.start_name,
                 "claim": {"kind": "output-wrong", "what": "tail-offset"}},
                fix=f"Start the partial tile at {tb.tile} * ({tb.floor_term})"
                    + (f": `{tb.start_name} = {tb.floor_term.split(' // ')[0]} - {tb.floor_term.split(' // ')[0]} % "
                       f"{tb.tile}`" if tb.start_name and " // " in tb.floor_term else "")
                    + ", the first row the loop did not cover.")
