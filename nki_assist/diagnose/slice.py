"""Backward slice: from the wrong output elements to the source lines that can explain them, ranked.

The run's provenance (contracts/provenance.py) names the store that last wrote each element and the loop
iteration it ran in; elements no store wrote have no writer. From those store statements the slice follows the
kernel's def-use chains backwards (the names a statement reads, the statements that assign them, the `for` and
`if` headers that control them), so it holds the loads, index expressions, masks, trip counts and constants that
fed the wrong values. Each line is scored by how well it explains the anatomy:

- it is in the slice of the stores that wrote wrong elements and not in the slice of those that wrote right ones;
- it reads a loop variable whose values differ between the wrong and the right stores (t = 0 right, t >= 1 wrong);
- its kind fits the error's shape (index arithmetic for a permutation, trip counts and masks for unwritten
  elements, divisors and scales for a constant ratio, low-precision dtypes for an error fp32 storage removes,
  the sanitizer's first fault for NaN/Inf);
- it reads a dimension that the passing sizes and the failing one differ in (anatomy.contrast).
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .anatomy import Contrast, OutputAnatomy

MODULES = {"nl", "nisa", "nki", "np", "math", "numpy"}  # the file's own import aliases are added per kernel
LOW_DTYPES = {"bfloat16", "float16", "float8_e4m3", "float8_e5m2", "float8_e4m3fn", "half"}
SAMPLE = 256  # wrong / right elements whose writer is looked up


@dataclass
class Suspect:
    line: int
    score: float
    text: str
    reasons: list[str] = field(default_factory=list)
    depth: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "score": round(self.score, 3), "text": self.text, "reasons": self.reasons}


@dataclass
class Kernel:
    """The kernel function's statements indexed by line, with their reads and writes."""

    tree: ast.Module
    func: ast.FunctionDef
    lines: list[str]
    stmt_at: dict[int, ast.stmt] = field(default_factory=dict)  # every physical line -> its innermost statement
    defs: dict[str, list[int]] = field(default_factory=dict)  # name -> lines of the statements that assign it
    parents: dict[int, list[int]] = field(default_factory=dict)  # line -> enclosing for/if header lines
    loop_vars: dict[int, str] = field(default_factory=dict)  # for header line -> its variable
    modules: set[str] = field(default_factory=lambda: set(MODULES))
    aranges: set[str] = field(default_factory=set)  # names assigned from nl.arange / nl.mgrid
    indexy: set[str] = field(default_factory=set)  # loop variables, aranges and names computed from them (r0 = t * P)

    def text(self, line: int) -> str:
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""


def parse_kernel(source: str, name: str | None) -> Kernel | None:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    func = next((f for f in funcs if f.name == name), None) or next(
        (f for f in funcs if f.decorator_list), funcs[0] if funcs else None)
    if func is None:
        return None
    k = Kernel(tree, func, source.splitlines())
    k.modules = set(MODULES) | aliases(tree)
    for n in ast.walk(func):
        if isinstance(n, ast.Assign) and any(w in ast.unparse(n.value) for w in ("arange", "mgrid")):
            k.aranges |= {t.id for t in ast.walk(n.targets[0]) if isinstance(t, ast.Name)}
    for a in func.args.args:
        k.defs.setdefault(a.arg, []).append(func.lineno)
    _index(k, func.body, [])
    k.indexy = _closure(k, set(k.loop_vars.values()) | k.aranges)
    return k


def header_line(stmt: ast.stmt) -> int:
    return stmt.lineno


def _index(k: Kernel, body: list[ast.stmt], parents: list[int]) -> None:
    for st in body:
        end = st.end_lineno or st.lineno
        if isinstance(st, (ast.For, ast.While, ast.If, ast.With)):
            head_end = (st.body[0].lineno - 1) if st.body else st.lineno
            for ln in range(st.lineno, max(st.lineno, head_end) + 1):
                k.stmt_at[ln] = st
            k.parents[st.lineno] = list(parents)
            if isinstance(st, ast.For):
                for n in _names(st.target, ast.Store):
                    k.defs.setdefault(n, []).append(st.lineno)
                    k.loop_vars[st.lineno] = n
            _index(k, st.body, [*parents, st.lineno])
            if getattr(st, "orelse", None):
                _index(k, st.orelse, [*parents, st.lineno])
            continue
        for ln in range(st.lineno, end + 1):
            k.stmt_at[ln] = st
        k.parents[st.lineno] = list(parents)
        for n in writes(st):
            k.defs.setdefault(n, []).append(st.lineno)


def _names(node: ast.AST, ctx=None) -> list[str]:
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and (ctx is None or isinstance(n.ctx, ctx))]


def writes(st: ast.stmt) -> list[str]:
    """Names a statement assigns: targets, subscript bases written, `dst=` / first argument of an ISA call,
    `nl.store`'s destination."""
    out: list[str] = []
    if isinstance(st, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = st.targets if isinstance(st, ast.Assign) else [st.target]
        for t in targets:
            out += [n.id for n in ast.walk(t) if isinstance(n, ast.Name)]
    call = st.value if isinstance(st, (ast.Expr, ast.Assign)) and isinstance(st.value, ast.Call) else None
    if call is not None:
        fn = ast.unparse(call.func)
        dst = next((kw.value for kw in call.keywords if kw.arg == "dst"), None)
        if dst is None and call.args and (fn.endswith("store") or fn.startswith(("nisa.", "isa."))):
            dst = call.args[0]
        if dst is not None:
            base = dst
            while isinstance(base, (ast.Subscript, ast.Attribute, ast.Call)):
                base = base.value if not isinstance(base, ast.Call) else base.func
            if isinstance(base, ast.Name):
                out.append(base.id)
    return out


def aliases(tree: ast.Module) -> set[str]:
    """Names the file binds to imported modules (`import nki.typing as nt`): never data."""
    out = set()
    for n in tree.body:
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in n.names}
    return out


def reads(st: ast.stmt, modules: set[str] = MODULES) -> set[str]:
    if isinstance(st, (ast.For, ast.While)):
        node = st.iter if isinstance(st, ast.For) else st.test
    elif isinstance(st, ast.If):
        node = st.test
    elif isinstance(st, ast.With):
        node = ast.Tuple([i.context_expr for i in st.items], ast.Load())
    else:
        node = st
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - modules


def backward(k: Kernel, seeds: Iterable[int], limit: int = 400) -> dict[int, int]:
    """Line -> depth of every statement the seed statements depend on (data and control)."""
    depth: dict[int, int] = {}
    queue = [(s, 0) for s in seeds if s in k.stmt_at]
    while queue and len(depth) < limit:
        line, d = queue.pop(0)
        st = k.stmt_at.get(line)
        if st is None:
            continue
        line = st.lineno
        if line in depth and depth[line] <= d:
            continue
        depth[line] = d
        for p in k.parents.get(line, []):
            queue.append((p, d + 1))
        for name in reads(st, k.modules):
            defs = k.defs.get(name, [])
            before = [x for x in defs if x <= line] or defs
            for x in before:
                if x != k.func.lineno:
                    queue.append((x, d + 1))
    return depth


def store_lines(prov_out, idx: list[tuple[int, ...]]) -> tuple[Counter, list[tuple]]:
    """Writers of the sampled elements: a Counter of store lines (None: never written) and their iterations."""
    lines: Counter = Counter()
    iters = []
    for i in idx:
        rec = prov_out.writer_of(i) if prov_out is not None else None
        lines[rec.line if rec is not None else None] += 1
        if rec is not None:
            iters.append(rec.iteration)
    return lines, iters


def _sample(mask: np.ndarray) -> list[tuple[int, ...]]:
    flat = np.flatnonzero(mask.ravel())
    if flat.size > SAMPLE:
        flat = flat[np.linspace(0, flat.size - 1, SAMPLE).astype(int)]
    return [tuple(int(x) for x in np.unravel_index(int(f), mask.shape)) for f in flat]


def loop_contrast(wrong_iters: list[tuple], right_iters: list[tuple]) -> dict[str, str]:
    """Loop variables whose values at wrong stores and at right stores do not overlap: name -> the values."""
    out = {}
    wv: dict[str, set[int]] = {}
    rv: dict[str, set[int]] = {}
    for it, acc in [(i, wv) for i in wrong_iters] + [(i, rv) for i in right_iters]:
        for name, v in it:
            acc.setdefault(name, set()).add(v)
    for name, w in wv.items():
        r = rv.get(name)
        if r and not (w & r):
            out[name] = f"{name} in {_set_text(r)} at right stores, {_set_text(w)} at wrong ones"
    return out


def _set_text(s: set[int]) -> str:
    v = sorted(s)
    return f"{{{v[0]}}}" if len(v) == 1 else f"{{{v[0]}..{v[-1]}}}" if v == list(range(v[0], v[-1] + 1)) else str(v[:6])


def _kind(st: ast.stmt, k: Kernel) -> set[str]:
    """What a statement is, for the anatomy's weights. Arithmetic is an `index` when it reads a loop variable or
    an `nl.arange`/`mgrid` index, else `size` arithmetic (a trip count, a padded size)."""
    kinds: set[str] = set()
    indexy = k.indexy
    if isinstance(st, (ast.For, ast.While)):
        kinds.add("trip")
    if isinstance(st, ast.If):
        kinds.add("branch")
    for n in ast.walk(st if not isinstance(st, (ast.For, ast.If, ast.While)) else
                      (st.iter if isinstance(st, ast.For) else st.test)):
        if isinstance(n, ast.BinOp):
            arith = "index" if {x.id for x in ast.walk(n) if isinstance(x, ast.Name)} & indexy else "size"
            if isinstance(n.op, (ast.Mod, ast.FloorDiv)):
                kinds |= {arith, "divide"}
            elif isinstance(n.op, (ast.Add, ast.Sub, ast.Mult)):
                kinds.add(arith)
            elif isinstance(n.op, (ast.Div, ast.Pow)):
                kinds |= {"scale", "divide"}
        elif isinstance(n, ast.keyword) and n.arg == "mask":
            kinds.add("mask")
        elif isinstance(n, ast.keyword) and n.arg in ("axis", "transpose_x", "is_transpose"):
            kinds.add("axis")
        elif isinstance(n, ast.keyword) and n.arg in ("scale", "bias"):
            kinds.add("scale")
        elif isinstance(n, ast.Attribute) and n.attr in LOW_DTYPES:
            kinds.add("dtype")
        elif isinstance(n, ast.Attribute) and n.attr in ("sqrt", "rsqrt", "reciprocal", "divide", "multiply"):
            kinds.add("scale")
        elif isinstance(n, ast.Compare):
            kinds.add("mask")
        elif isinstance(n, ast.Subscript):
            kinds.add("subscript")
    return kinds


WEIGHTS: dict[str, dict[str, float]] = {
    "permutation": {"index": 3.0, "axis": 2.0, "subscript": 1.2, "trip": 1.2},
    "mixed": {"index": 2.0, "axis": 2.0, "subscript": 1.2, "mask": 1.5, "scale": 1.5, "divide": 1.5, "dtype": 1.2,
              "trip": 1.2, "size": 1.2},
    "unwritten": {"trip": 3.0, "mask": 3.0, "divide": 2.5, "index": 2.0, "size": 2.0, "branch": 1.5},
    "ratio": {"scale": 3.0, "divide": 2.0, "branch": 1.5, "size": 1.2},
    "offset": {"scale": 2.0, "divide": 2.0, "index": 1.5, "branch": 1.5},
    "sign": {"scale": 2.0, "index": 1.5},
    "precision": {"dtype": 5.0},
    "nonfinite": {"dtype": 3.0, "scale": 2.0, "mask": 2.0},
}


def _closure(k: Kernel, names: set[str], exclude: set[str] = frozenset()) -> set[str]:
    """`names` and every kernel name assigned by call-free arithmetic from them (and from none of `exclude`)."""
    out = set(names)
    for _ in range(6):
        more = {n for n, lines in k.defs.items() for ln in lines
                if isinstance(k.stmt_at.get(ln), ast.Assign) and not any(
                    isinstance(x, ast.Call) for x in ast.walk(k.stmt_at[ln].value))
                and reads(k.stmt_at[ln], k.modules) & out and not reads(k.stmt_at[ln], k.modules) & exclude
                and n not in out}
        if not more:
            break
        out |= more
    return out


def _derived(k: Kernel, names: set[str]) -> set[str]:
    """`names` and the sizes computed from them alone (Cp = (C + 127) // 128 * 128 derives from C; a tile's row
    count, which also reads the loop variable, does not)."""
    return _closure(k, names, k.indexy)


def rank(k: Kernel, anatomies: list[OutputAnatomy], provs: list[Any], contrast: Contrast,
         fault_lines: list[int], wrong_masks: list[np.ndarray], symbols: dict[str, str],
         error_line: int | None = None, only_failing: set[int] = frozenset()) -> tuple[list[Suspect], set[str]]:
    """Slice lines ranked by how well each explains the anatomy (best first), and the loop variables whose
    values at wrong stores and at right stores do not overlap."""
    wrong_lines: Counter = Counter()
    right_lines: Counter = Counter()
    wrong_iters: list[tuple] = []
    right_iters: list[tuple] = []
    written_by: set[int] = set()
    for an, prov, bad in zip(anatomies, provs, wrong_masks):
        wl, wi = store_lines(prov, _sample(bad))
        rl, ri = store_lines(prov, _sample(~bad))
        wrong_lines += wl
        right_lines += rl
        wrong_iters += wi
        right_iters += ri
        if prov is not None:
            written_by |= {r.line for r in prov.records if r.line is not None}
    seeds = [ln for ln in wrong_lines if ln is not None]
    if wrong_lines.get(None):  # unwritten elements: every store of the output and the loops around it
        seeds += sorted(written_by)
    seeds += fault_lines + ([error_line] if error_line else [])
    if not seeds:
        return [], set()
    wrong_slice = backward(k, seeds)
    right_slice = backward(k, [ln for ln in right_lines if ln is not None and ln not in wrong_lines])
    loops = loop_contrast(wrong_iters, right_iters)
    rel = Counter(a.relation for a in anatomies).most_common(1)[0][0] if anatomies else "mixed"
    weights = WEIGHTS.get(rel or "mixed", WEIGHTS["mixed"])
    dims = _derived(k, {name for name, sym in symbols.items() if sym in contrast.names} | contrast.names)
    pair = any("differ (equal in the passing sizes)" in text for text, _ in contrast.items)
    out = []
    for line, depth in wrong_slice.items():
        st = k.stmt_at[line]
        score = 1.0 / (1.0 + 0.5 * depth)
        reasons = []
        if line in wrong_lines:
            reasons.append(f"wrote {wrong_lines[line]} of the sampled wrong elements")
        if line not in right_slice:
            score *= 2.0
            reasons.append("feeds only the stores of wrong elements")
        used = reads(st, k.modules)
        for v, why in loops.items():
            if v in used and not isinstance(st, ast.For):
                score *= 2.0
                reasons.append(f"reads the loop variable {why}")
        kinds = _kind(st, k)
        w = max([weights.get(kd, 1.0) for kd in kinds] or [1.0])
        if w > 1.0:
            score *= w
            what = "/".join(sorted(kd for kd in kinds if weights.get(kd, 1) == w))
            reasons.append(f"{'an' if what[0] in 'aeiou' else 'a'} {what} line, which fits the error's shape ({rel})")
        hit = sorted((used | set(writes(st))) & dims)
        if hit:
            score *= 1.5
            reasons.append(f"reads or binds {', '.join(hit)}, a dimension the passing sizes differ in")
        if pair and ".shape" in k.text(line):
            score *= 3.0
            reasons.append("binds a dimension, and two dimensions equal at the passing sizes differ here")
        if line in only_failing:  # an edit there cannot change what a passing size computes
            score *= 5.0
            reasons.append("runs only at the failing size(s) (the trace of every passing size lacks it)")
        if line in fault_lines:
            score *= 5.0
            reasons.append("the sanitizer's first NaN/Inf fault")
        if line == error_line:
            score *= 5.0
            reasons.append("the kernel raised here")
        out.append(Suspect(line, score, k.text(line), reasons, depth))
    out.sort(key=lambda s: (-s.score, s.depth, s.line))
    return out, set(loops)
