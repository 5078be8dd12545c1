"""Run-time value ranges against the static numeric-range claims (NKI402 exp overflow, NKI404 activation range).

The simulator records, per source line, the range of the argument each transcendental function reached
(contracts.runs.ValueRange). For NKI402 every size that ran gets `run_range` evidence (max argument, margin
to fp32 overflow and to the output dtype's); a running-sum argument (evidence cumulative=True) is
extrapolated linearly with the loop's trip count to 2x the largest size. NKI404 is confirmed, with the
count, when arguments outside the ScalarE valid range were reached.
"""

from __future__ import annotations

import ast
import math
from pathlib import PurePath
from typing import Any

import numpy as np

from ..findings import Finding, Severity
from ..api.hardware import ACTIVATION_VALID_RANGE
from ..numerics.registry import TRAINIUM

EXP_OVERFLOW_FP32 = math.log(float.fromhex("0x1.fffffep+127"))  # 88.72: exp above it is inf in fp32
_EXP_FUNCS = ("exp", "exp2")


def exp_limit(dtype: str) -> float:
    """The largest argument whose exp is finite in `dtype` (ln of the dtype's max)."""
    try:
        mx = float(np.finfo(np.dtype(dtype)).max)
    except TypeError:
        import ml_dtypes  # deferred: only a low-precision output dtype needs it

        if not hasattr(ml_dtypes, dtype):
            return EXP_OVERFLOW_FP32
        try:
            mx = float(ml_dtypes.finfo(getattr(ml_dtypes, dtype)).max)
        except (TypeError, ValueError):
            return EXP_OVERFLOW_FP32
    except ValueError:  # an integer dtype
        return EXP_OVERFLOW_FP32
    return min(math.log(mx), EXP_OVERFLOW_FP32)


def _ranges(run, line: int | None, funcs) -> list:
    return [r for r in (getattr(run, "value_ranges", None) or []) if r.line == line and r.func in funcs]


def _merge(rs: list):
    """One (min, max, elements, nonfinite, below, above, out_dtype) over several records at a line."""
    fin = [r for r in rs if r.max is not None]
    return (min((r.min for r in fin), default=None), max((r.max for r in fin), default=None),
            sum(r.elements for r in rs), sum(r.nonfinite for r in rs), sum(r.below for r in rs),
            sum(r.above for r in rs), rs[0].out_dtype)


def _g(x: float) -> str:
    return f"{x:.1f}" if abs(x) < 1e4 else f"{x:.3g}"


def eval_trip(expr: str, vals: dict[str, int]) -> int | None:
    """The trip count of `range(<expr>)` (`N // 64` or `0, N, 64`) under the kernel's shape-symbol values."""
    try:
        node = ast.parse(f"({expr},)", mode="eval").body
    except SyntaxError:
        return None

    def ev(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.Name):
            return vals.get(n.id)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            v = ev(n.operand)
            return None if v is None else -v
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            if a is None or b is None:
                return None
            op = type(n.op)
            if op is ast.Add:
                return a + b
            if op is ast.Sub:
                return a - b
            if op is ast.Mult:
                return a * b
            if op is ast.FloorDiv and b:
                return a // b
            if op is ast.Div and b:
                return a // b if a % b == 0 else None
        return None

    args = [ev(e) for e in getattr(node, "elts", ())]
    if not args or len(args) > 3 or any(a is None for a in args):
        return None
    try:
        return len(range(*args))
    except ValueError:
        return None


class RangeEvidence:
    """Reads the trainium run of each size; `sym_values(bindings)` gives the kernel's shape symbols."""

    def __init__(self, res, sizes, sym_values):
        self.res, self.sizes, self.sym_values = res, sizes, sym_values
        self.roots: dict[str, str] = {}  # file name -> root cause of the exp overflows the run confirmed

    def _runs(self):
        ok = {e.name for e in self.sizes}
        for sr in self.res.sizes:
            run = sr.runs.get(TRAINIUM.name)
            if run is not None and run.status == "ok" and sr.size in ok:
                yield sr, run

    # -- NKI402 --
    def exp(self, f: Finding, findings: list[Finding]) -> Finding:
        per = []
        for sr, run in self._runs():
            rs = _ranges(run, f.line, _EXP_FUNCS)
            if rs:
                per.append((sr, run, _merge(rs)))
        if not per:
            return f
        thr = EXP_OVERFLOW_FP32
        ev: dict[str, Any] = {}
        texts, over = [], []
        for sr, run, (lo, hi, n, bad, _, _, odt) in per:
            lim = exp_limit(odt)
            row = {"max_arg": hi, "min_arg": lo, "elements": n, "nonfinite_args": bad, "out_dtype": odt,
                   "margin_fp32": None if hi is None else round(thr - hi, 3),
                   "margin_out_dtype": None if hi is None else round(lim - hi, 3)}
            ev[sr.size] = row
            carried = f"; {bad} NaN/Inf arguments came from earlier instructions" if bad else ""
            if hi is None:  # NaN/Inf carried in (an out-of-bounds read, an earlier overflow): not this exp's
                texts.append(f"on size `{sr.size}` no argument was finite ({bad} NaN/Inf from earlier instructions)")
                continue
            if hi >= lim:
                what = "fp32" if lim >= thr - 0.01 else odt
                texts.append(f"on size `{sr.size}` the argument reached {_g(hi)}, {_g(hi - lim)} past the "
                             f"{_g(lim)} {what} overflow{carried}")
            else:
                dt = "" if lim >= thr - 0.01 else f", {_g(lim - hi)} to {odt} overflow at {_g(lim)}"
                texts.append(f"on size `{sr.size}` the argument reached {_g(hi)} (margin {_g(thr - hi)} to fp32 "
                             f"overflow{dt}){carried}")
            if hi >= lim:
                over.append(sr.size)
        claim_ev = dict(f.evidence)
        text = "; ".join(texts)
        if over:  # the run overflowed: the numerics finding (NUM104) shows its result; one root cause
            num = next((g for g in findings if g.rule == "NUM104" and g.evidence.get("size") in over
                        and (g.line == f.line or g.evidence.get("cause_rule") == "NKI402")), None)
            link = "" if num is None else (f"; NUM104 at line {num.line} is its result" if num.line == f.line else
                                           f"; the same overflow as line {num.line}, where NUM104 reports the "
                                           "non-finite output")
            ev_all = {**claim_ev, "run_range": ev, "reconciled": {"status": "confirmed", "evidence": text + link,
                                                                    "sizes": over}}
            # every exp the run saw overflow in one file is one defect (a tail tile repeating the main loop's)
            key = PurePath(f.file or "").name
            self.roots.setdefault(key, f"cause:NKI402:{num.line if num is not None else f.line}")
            ev_all["root_cause"] = self.roots[key]
            ev_all["root_cause_lead"] = True
            sev = Severity.ERROR if Severity.ERROR.rank < f.severity.rank else f.severity
            return f.model_copy(update={"severity": sev, "evidence": ev_all,
                                        "message": f"{f.message} Confirmed by the run: {text}{link}."})
        status, extra = "measured", ""
        if f.evidence.get("cumulative"):
            status, extra, proj = self._project(f, per, thr)
            if proj is not None:
                ev[f"2x:{proj['size']}"] = proj
        ev_all = {**claim_ev, "run_range": ev}
        if status != "measured":  # a projection checked the claim; a plain measurement only informs it
            ev_all["reconciled"] = {"status": status, "evidence": text + extra, "sizes": [sr.size for sr, _, _ in per]}
        # measured margins never raise the severity: the static claim keeps its own
        return f.model_copy(update={"evidence": ev_all, "message": f"{f.message} Run: {text}{extra}."})

    def _project(self, f: Finding, per, thr: float) -> tuple[str, str, dict | None]:
        """Linear extrapolation of a running sum's max argument to 2x the largest size that ran."""
        loop_line = f.evidence.get("loop_line")
        static_trip = f.evidence.get("trip_count")
        best = None
        for sr, run, m in per:
            trips = (getattr(run, "loop_trips", None) or {}).get(loop_line)
            vals = self.sym_values(sr.bindings)
            if trips is None:
                trips = eval_trip(self._trip_expr(f), vals) if self._trip_expr(f) else None
            if best is None or (trips or 0) > (best[3] or 0):
                best = (sr, m, vals, trips)
        sr, (lo, hi, _, _, _, _, odt), vals, trips = best
        if isinstance(static_trip, int):  # a literal trip count: doubling the sizes adds no steps
            return ("measured", f"; the loop at line {loop_line} runs {static_trip} steps at every size, so the "
                    "range does not grow with the sizes", None)
        expr = self._trip_expr(f)
        trips2 = eval_trip(expr, {k: 2 * v for k, v in vals.items()}) if expr else None
        if trips is None or not trips:
            return "measured", "; the loop's trip count is unknown, so no projection to larger sizes", None
        if trips2 is None:
            trips2 = 2 * trips  # a size-dependent trip count: assumed proportional to the size
        proj = hi * trips2 / trips
        lim = exp_limit(odt)
        row = {"size": sr.size, "trip_count": trips, "trip_count_2x": trips2, "max_arg_2x": round(proj, 3),
               "margin_fp32_2x": round(thr - proj, 3), "overflows_2x": proj >= lim}
        doubled = ", ".join(f"{k}={2 * v}" for k, v in sr.bindings.items())
        head = (f"; at 2x size `{sr.size}`{f' ({doubled})' if doubled else ''} the loop at line {loop_line} runs {trips2} steps instead of {trips}, "
                f"so the argument would reach ~{_g(proj)}")
        if proj >= lim:
            what = "fp32" if lim >= thr - 0.01 else odt
            return "overflows-at-2x", head + f", past the {_g(lim)} {what} overflow: exp gives inf there", row
        return "bounded", head + f" (margin {_g(thr - proj)} to fp32 overflow)", row

    @staticmethod
    def _trip_expr(f: Finding) -> str | None:
        return f.evidence.get("trip_expr")

    # -- NKI404 --
    def activation(self, f: Finding) -> Finding:
        fn = f.evidence.get("function")
        if fn not in ACTIVATION_VALID_RANGE:
            return f
        lo_v, hi_v = ACTIVATION_VALID_RANGE[fn]
        per = []
        for sr, run in self._runs():
            rs = _ranges(run, f.line, (fn,))
            if rs:
                per.append((sr, _merge(rs)))
        if not per:
            return f
        ev = {sr.size: {"min_arg": lo, "max_arg": hi, "elements": n, "below": b, "above": a}
              for sr, (lo, hi, n, _, b, a, _) in per}
        rng = f"[{lo_v:.4g}, {hi_v:.4g}]" if fn != "reciprocal" else f"+/-[{lo_v:.3g}, {hi_v:.3g}]"
        out = [(sr, m) for sr, m in per if m[4] or m[5]]
        if out:
            texts = [f"on size `{sr.size}` {b + a} of {n} arguments fell outside {rng} (min {_g(lo)}, max {_g(hi)})"
                     for sr, (lo, hi, n, _, b, a, _) in out]  # below/above count only finite arguments
            sev = Severity.ERROR if fn in ("sin", "arctan") else Severity.WARNING
            sev = sev if sev.rank < f.severity.rank else f.severity
            text = "; ".join(texts)
            return f.model_copy(update={
                "severity": sev, "message": f"{f.message} Confirmed by the run: {text}.",
                "evidence": {**f.evidence, "run_range": ev, "root_cause_lead": True,
                             "reconciled": {"status": "confirmed", "evidence": text,
                                            "sizes": [sr.size for sr, _ in out]}}})
        text = f"every argument stayed within {rng} (" + "; ".join(
            f"size `{sr.size}`: {n}, min {_g(lo)}, max {_g(hi)}" if hi is not None else f"size `{sr.size}`: none finite"
            for sr, (lo, hi, n, *_rest) in per) + ")"
        return f.model_copy(update={"message": f"{f.message} Run: {text}.", "evidence": {**f.evidence, "run_range": ev}})
