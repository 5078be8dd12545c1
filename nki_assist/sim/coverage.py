"""Write coverage of the kernel outputs: which store should have covered the elements never written, and
which stores overwrote each other (SIM112, SIM118; SIM109 gains the same offsets).

The store log (provenance.py) gives every store's region and loop-variable values. For an output with
never-written elements the statement to change is found by matching the log against the hole:
  1. a store whose block has the hole's extent but overwrote other stores' elements -> its offset is
     wrong (located at the assignment of the offset variable when the slice starts at a plain name);
  2. a store whose offset advances by a step different from the extent it writes -> `v * step` should
     be `v * extent` (located at the store);
  3. tiles that abut and stop right before the hole -> the loop over their variable is one or more
     iterations short (located at the loop header).
Otherwise the allocation line stays the location and the stores are named as related locations.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contracts.provenance import Overlap, StoreRecord, iteration_text
from ..findings import RelatedLocation, Severity
from ..rules.registry import get as get_rule


@dataclass
class Diagnosis:
    line: int
    category: str
    text: str
    evidence: dict[str, Any]
    related: list[tuple[int, str]] = field(default_factory=list)
    lines: set[int] = field(default_factory=set)  # store lines the diagnosis explains (overlaps folded in)
    fix: str | None = None  # written from the diagnosis's own offsets, not the rule's default


# -- source -----------------------------------------------------------------------------------------
class Source:
    """The kernel file's AST, parsed on demand (only when an output has a hole or an overlap)."""

    def __init__(self, ctx):
        self.lines = ctx.source_lines
        self.text = "\n".join(self.lines)
        self.loop_vars = ctx.loop_vars
        try:
            self.tree = ast.parse(self.text)
        except SyntaxError:
            self.tree = None

    def seg(self, node) -> str:
        return (ast.get_source_segment(self.text, node) or "").strip()

    def function_at(self, line: int):
        best = None
        if self.tree is None:
            return None
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= (node.end_lineno or 0):
                if best is None or node.lineno > best.lineno:
                    best = node
        return best

    def axis_exprs(self, line: int, tensor: str | None) -> list[ast.expr] | None:
        """Index expressions per dim of `tensor[...]` on `line` (None when not a plain subscript)."""
        if self.tree is None or not tensor:
            return None
        for node in ast.walk(self.tree):
            if (isinstance(node, ast.Subscript) and getattr(node, "lineno", 0) <= line <= (node.end_lineno or 0)
                    and isinstance(node.value, ast.Name) and node.value.id == tensor):
                sl = node.slice
                elts = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
                if any(isinstance(e, ast.Constant) and e.value is Ellipsis for e in elts):
                    return None
                return elts
        return None

    def start_expr(self, line: int, tensor: str | None, axis: int) -> ast.expr | None:
        exprs = self.axis_exprs(line, tensor)
        if exprs is None or axis >= len(exprs):
            return None
        e = exprs[axis]
        if isinstance(e, ast.Slice):
            return e.lower
        return e

    def names(self, node) -> set[str]:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} if node is not None else set()

    def single_assignment(self, line: int, name: str) -> tuple[int, str] | None:
        """(line, text) of the one plain `name = ...` in the function around `line`; None when the name
        is a parameter, a loop variable or assigned more than once."""
        fn = self.function_at(line)
        if fn is None:
            return None
        if name in {a.arg for a in fn.args.args + fn.args.kwonlyargs}:
            return None
        found = []
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                if any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                    found.append(node)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
                if node.target.id == name:
                    return None
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                if name in self.names(node.target):
                    return None
        if len(found) != 1:
            return None
        return found[0].lineno, self.seg(found[0])

    def loop_line(self, line: int, var: str) -> int | None:
        return next((h for v, h in self.loop_vars.get(line, ()) if v == var), None)


# -- geometry ---------------------------------------------------------------------------------------
def _fmt_box(box) -> str:
    return "[" + ", ".join(f"{a}:{b}" for a, b in box) + "]"


def _hole_box(unwritten: np.ndarray) -> tuple[tuple[int, int], ...]:
    idx = np.argwhere(unwritten)
    lo, hi = idx.min(axis=0), idx.max(axis=0) + 1
    return tuple((int(a), int(b)) for a, b in zip(lo.tolist(), hi.tolist()))


def _fit_offsets(recs: list[StoreRecord], axis: int) -> tuple[dict[str, int], int] | None:
    """start[axis] = const + sum(coef[v] * v) over the loop variables, exactly; None when not affine."""
    names = sorted({k for r in recs for k, _ in r.iteration})
    rows = [[dict(r.iteration).get(n, 0) for n in names] + [1] for r in recs]
    y = np.array([r.box[axis][0] for r in recs], dtype=float)
    a = np.array(rows, dtype=float)
    sol, *_ = np.linalg.lstsq(a, y, rcond=None)
    coef = [round(float(c)) for c in sol]
    if not np.allclose(a @ np.array(coef, dtype=float), y):
        return None
    return {n: c for n, c in zip(names, coef[:-1]) if c}, int(coef[-1])


def _extent(recs: list[StoreRecord], axis: int) -> int:
    ext = [r.box[axis][1] - r.box[axis][0] for r in recs]
    return max(set(ext), key=lambda e: (ext.count(e), e))


def _loop_var_of_axis(src: Source, line: int, tensor: str | None, axis: int, recs) -> str | None:
    """The loop variable the store's index on `axis` uses (from the source), if exactly one."""
    expr = src.start_expr(line, tensor, axis)
    loops = [v for v, _ in src.loop_vars.get(line, ())]
    used = [v for v in loops if v in src.names(expr)]
    return used[0] if len(used) == 1 else None


# -- diagnoses --------------------------------------------------------------------------------------
def _misplaced(src, tensor, hole, shape, by_line, overlaps) -> Diagnosis | None:
    partial = [a for a, (lo, hi) in enumerate(hole) if (lo, hi) != (0, shape[a])]
    if len(partial) != 1:
        return None
    a = partial[0]
    for ov in overlaps:
        if ov.same_region or ov.prev_constant:
            continue
        r = next((r for r in by_line.get(ov.line, []) if r.iteration == ov.iteration and r.contains(ov.index)), None)
        if r is None:
            continue
        fits = all((r.box[d][1] - r.box[d][0]) == (hole[d][1] - hole[d][0]) if d == a else
                   (r.box[d][0] <= hole[d][0] and hole[d][1] <= r.box[d][1]) for d in range(len(shape)))
        if not fits or r.box[a][0] == hole[a][0]:
            continue
        actual, expected = r.box[a][0], hole[a][0]
        where = f"line {ov.prev_line}" + (f" ({iteration_text(ov.prev_iteration)})" if ov.prev_iteration else "")
        ev: dict[str, Any] = {"store_line": ov.line, "axis": a, "actual_offset": actual, "expected_offset": expected,
                              "store_region": [list(b) for b in r.box], "overwrites_line": ov.prev_line,
                              "rewritten_elements": ov.elements, "overwritten_elements": ov.differing}
        expr = src.start_expr(ov.line, tensor, a)
        line, how = ov.line, f"the store at line {ov.line} starts at {actual}"
        related = [(ov.line, f"store writing {_fmt_box(r.box)}")]
        if expr is not None:
            ev["offset_expression"] = src.seg(expr)
            how = f"the store at line {ov.line} starts at `{src.seg(expr)}` = {actual}"
            if isinstance(expr, ast.Name):
                d = src.single_assignment(ov.line, expr.id)
                if d is not None:
                    line = d[0]
                    ev["offset_defined_line"], ev["offset_definition"] = d
                    how += f" (line {d[0]}: `{d[1]}`)"
        related.append((ov.prev_line, "the store that wrote those elements first"))
        again = (f"It overwrites {ov.differing} element(s) already stored by {where} with different values."
                 if ov.differing else f"It writes {ov.elements} element(s) again that {where} already stored.")
        text = (f"The block written at line {ov.line} has the extent of the unwritten region ({r.box[a][1] - actual} "
                f"along dim {a}) but {how}; it should start at {expected}. {again}")
        shown = f"`{ev['offset_expression']}`" if "offset_expression" in ev else "its offset"
        fix = (f"Make the store at line {ov.line} start at {expected} along dim {a} ({shown} gives {actual}), "
               "the first element no other store covers.")
        return Diagnosis(line, "indexing-error", text, ev, related, {ov.line}, fix)
    return None


def _stride(src, tensor, hole, shape, by_line, overlaps, unwritten) -> Diagnosis | None:
    for line, recs in by_line.items():
        if len(recs) < 2:
            continue
        for a in range(len(shape)):
            fit = _fit_offsets(recs, a)
            if fit is None or len(fit[0]) != 1:
                continue
            (v, step), const = next(iter(fit[0].items())), fit[1]
            ext = _extent(recs, a)
            if step <= 0 or step == ext:
                continue
            same_line_overlap = any(o.line == line and o.prev_line == line and not o.same_region for o in overlaps)
            starts = sorted({r.box[a][0] for r in recs})
            gap_hole = step > ext and bool(unwritten is not None and unwritten.any()) and hole[a][0] < starts[-1]
            if not (same_line_overlap or gap_hole):
                continue
            n = len(starts)
            expect = [const + ext * i for i in range(min(n, 4))]
            expr = src.start_expr(line, tensor, a)
            ev = {"store_line": line, "axis": a, "loop_var": v, "actual_step": step, "expected_step": ext,
                  "actual_offsets": starts[:4], "expected_offsets": expect, "iterations": n}
            shown = f"`{src.seg(expr)}`" if expr is not None else "its offset"
            if expr is not None:
                ev["offset_expression"] = src.seg(expr)
            kind = (f"consecutive blocks overlap by {ext - step}" if step < ext else
                    f"{step - ext}-element gaps are left between the blocks")
            text = (f"The store at line {line} writes {ext} elements along dim {a} per iteration but {shown} advances "
                    f"{step} per `{v}` (offsets {', '.join(map(str, starts[:4]))}{', ...' if n > 4 else ''}): "
                    f"{kind}. Tiles of {ext} start at `{v} * {ext}`" + (f" + {const}" if const else "")
                    + f" (offsets {', '.join(map(str, expect))}{', ...' if n > 4 else ''}).")
            loop = src.loop_line(line, v)
            related = [(loop, f"loop over `{v}`")] if loop else []
            fix = (f"Step the store's offset by the tile extent: `{v} * {ext}`" + (f" + {const}" if const else "")
                   + f" instead of {shown}.")
            return Diagnosis(line, "indexing-error", text, ev, related, {line}, fix)
    return None


def _short_loop(src, tensor, hole, shape, by_line) -> Diagnosis | None:
    partial = [a for a, (lo, hi) in enumerate(hole) if (lo, hi) != (0, shape[a])]
    if len(partial) != 1:
        return None
    a = partial[0]
    for line, recs in by_line.items():
        v = _loop_var_of_axis(src, line, tensor, a, recs)
        if v is None:
            continue
        ext = _extent(recs, a)
        starts = sorted({r.box[a][0] for r in recs})
        if len(starts) > 1:
            fit = _fit_offsets(recs, a)
            if fit is None or fit[0].get(v) != ext:
                continue
        end = max(r.box[a][1] for r in recs)
        if hole[a][0] != end or not all(any(r.box[d][0] <= hole[d][0] and hole[d][1] <= r.box[d][1] for r in recs)
                                        for d in range(len(shape)) if d != a):
            continue
        loop = src.loop_line(line, v)
        if loop is None:
            continue
        trips = len({dict(r.iteration).get(v) for r in recs})
        need = trips + math.ceil((shape[a] - end) / ext)
        ev = {"store_line": line, "loop_var": v, "loop_line": loop, "axis": a, "trip_count": trips,
              "needed_trip_count": need, "tile_extent": ext, "covered": [starts[0], end]}
        rest = shape[a] - end - (need - trips - 1) * ext
        text = (f"The loop over `{v}` (line {loop}) runs {trips} iteration(s) and the store at line {line} writes "
                f"{ext} elements along dim {a} per iteration, covering [{starts[0]}:{end}) of {shape[a]}: it needs "
                f"{need} iterations, the last one masked or clamped to the remaining {rest} elements.")
        fix = (f"Run the loop over `{v}` (line {loop}) {need} times (a ceiling division) and mask or clamp the "
               f"last tile to the remaining {rest} elements, or add a separate tail tile at offset {end}.")
        return Diagnosis(loop, "missing-boundary-mask", text, ev, [(line, "store that stops short")], {line}, fix)
    return None


def diagnose(src: Source, tensor: str | None, shape, records: list[StoreRecord], overlaps: list[Overlap],
             unwritten: np.ndarray) -> Diagnosis | None:
    if not records:
        return None
    by_line: dict[int, list[StoreRecord]] = {}
    for r in records:
        if r.line is not None:
            by_line.setdefault(r.line, []).append(r)
    hole = _hole_box(unwritten)
    return (_misplaced(src, tensor, hole, shape, by_line, overlaps)
            or _stride(src, tensor, hole, shape, by_line, overlaps, unwritten)
            or _short_loop(src, tensor, hole, shape, by_line))


# -- findings ---------------------------------------------------------------------------------------
def check_output(ctx, st) -> None:
    """SIM112 for never-written output elements and SIM118 for stores that overwrote each other."""
    log = st.log
    records = log.records if log is not None else []
    overlaps = [o for o in (log.overlaps if log is not None else []) if not o.same_region and not o.prev_constant]
    differing = [o for o in overlaps if o.differing]
    name = st.name or "output"
    src = None
    explained: set[int] = set()
    if not st.all_written:
        w = np.asarray(st.written)
        n, done = w.size, int(np.count_nonzero(w))
        if done < n:
            src = Source(ctx)
            explained = _report_unwritten(ctx, st, src, name, ~w, n, done, records, overlaps)
    rest = [o for o in differing if o.line not in explained]
    if rest:
        _report_overlaps(ctx, st, src or Source(ctx), name, records, rest)


def _report_unwritten(ctx, st, src, name, unwritten, n, done, records, overlaps) -> set[int]:
    if done == 0:
        msg = f"kernel output {name}{list(st.shape)} is never written; it is returned uninitialized."
    else:
        region = _fmt_box(_hole_box(unwritten))
        msg = (f"kernel output {name}{list(st.shape)} is only partly written: {n - done} of {n} elements "
               f"({100.0 * (n - done) / n:.1f}%) are never stored, within {region}.")
    ev = {"tensor": name, "unwritten_elements": n - done, "total_elements": n}
    # every missing element addressed by a store whose own mask excluded it (e.g. `mask=offset < n_elements`):
    # the kernel chose not to write it, which is correct when callers read only the stored part
    masked_off = st.skipped is not None and done > 0 and bool(st.skipped[unwritten].all())
    ev["excluded_by_store_mask"] = masked_off
    if masked_off:
        msg += (" Every one of them was addressed by a store whose mask excluded it, so this looks deliberate: "
                "fine if callers read only the stored part.")
    d = diagnose(src, st.name, tuple(st.shape), records, overlaps, unwritten) if done and not masked_off else None
    related: list[tuple[int, str]] = []
    line, category, fix = st.line, None, None
    if d is not None:
        line, category, fix = d.line, d.category, d.fix
        msg += " " + d.text
        ev.update(d.evidence)
        related = d.related
    elif records:
        related = [(ln, "stores into this output") for ln in sorted({r.line for r in records if r.line})][:3]
    if st.line and line != st.line:
        related.append((st.line, f"{name} allocated here"))
    # stores inside a loop whose trip count is a runtime value (nl.dynamic_range, while): how much gets
    # written is the caller's data, so the unwritten part may be by design (nki-library's dynamic add)
    dynamic = bool(records) and any(r.line in getattr(ctx, "dynamic_lines", ()) for r in records)
    if dynamic:
        ev["runtime_trip_count"] = True
        msg += (" The stores run in a loop whose trip count is a runtime value, so the written extent follows "
                "the inputs: fine if callers read only that part.")
    _add(ctx, "SIM112", line, msg, ev, related, category, fix,
         severity="warning" if (masked_off or dynamic) else None)
    if d is not None:
        for ln in d.lines:
            _extend_sim109(ctx, ln, d.text, d.evidence)
    return d.lines if d is not None else set()


def _extend_sim109(ctx, line, text, evidence) -> bool:
    """A parallel affine_range loop already reported at this store (SIM109): add the offsets to it."""
    f = ctx._seen.get(("SIM109", line))
    if f is None:
        return False
    if text not in f.message:
        f.message += " " + text
    f.evidence.update({k: v for k, v in evidence.items() if k not in f.evidence})
    return True


def _report_overlaps(ctx, st, src, name, records, overlaps) -> None:
    by_line: dict[int, list[StoreRecord]] = {}
    for r in records:
        if r.line is not None:
            by_line.setdefault(r.line, []).append(r)
    done: set[tuple] = set()
    for ov in overlaps:
        if ov.line is None or (ov.line, ov.prev_line) in done:
            continue
        done.add((ov.line, ov.prev_line))
        count = sum(o.differing for o in overlaps if o.line == ov.line and o.prev_line == ov.prev_line)
        stride = _stride(src, st.name, tuple((0, s) for s in st.shape), tuple(st.shape),
                         {ov.line: by_line.get(ov.line, [])}, [ov], None) if ov.prev_line == ov.line else None
        first = f"line {ov.prev_line}" + (f" ({iteration_text(ov.prev_iteration)})" if ov.prev_iteration else "")
        this = f"line {ov.line}" + (f" ({iteration_text(ov.iteration)})" if ov.iteration else "")
        ev = {"tensor": name, "store_line": ov.line, "iteration": dict(ov.iteration), "overwrites_line": ov.prev_line,
              "overwritten_iteration": dict(ov.prev_iteration), "overwritten_elements": count,
              "first_index": list(ov.index)}
        text = (f"The store at {this} writes {count} element(s) of {name}{list(st.shape)} that the store at {first} "
                f"already wrote, with different values, and nothing read them in between (first at "
                f"{list(ov.index)}): one of the two index expressions is wrong, or the two writes race.")
        if stride is not None:
            ev.update(stride.evidence)
            text += " " + stride.text
        if _extend_sim109(ctx, ov.line, stride.text if stride else "", ev):
            continue  # a parallel affine_range loop: SIM109 already names this store
        related = [(ov.prev_line, "the store whose values were overwritten")] if ov.prev_line != ov.line else []
        _add(ctx, "SIM118", ov.line, text, ev, related, None)


def _add(ctx, rule, line, message, evidence, related, category, fix=None, severity=None) -> None:

    rel = [RelatedLocation(file=ctx.display_file, line=ln, message=m) for ln, m in related if ln]
    f = get_rule(rule).finding(message, file=ctx.display_file, line=line, evidence=evidence, source="simulation",
                               related=rel, severity=Severity(severity) if severity else None,
                               **({"category": category} if category else {}), **({"fix": fix} if fix else {}))
    ctx.add_finding(f)
