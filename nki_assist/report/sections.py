"""The numerics and performance sections of a review report, as format-neutral parts.

markdown.py and html.py only lay these out, so both formats show the same numbers. Inputs are the
Review JSON sections (`review.numerics`, `review.performance`) whose extra keys come from
review.py / perf.to_performance; anything unknown is shown generically rather than dropped.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from ..numerics.growth import LOW_PRECISION_SLOPE
from ..findings import Finding
from ..schema import Review

from ..feedback.view import table
from ..numerics.registry import REFERENCE, SCENARIOS

SIG = 3  # significant digits of every number in these sections
BAR_WIDTH = 20
SCENARIO_ORDER = [s.name for s in SCENARIOS]  # the registry's order
PLOT_CAPTIONS = {"numerics.png": "Error vs size per scenario (vs the float64 reference)",
                 "roofline.png": "Roofline position (estimate)",
                 "engines.png": "Busy time per engine and DMA"}


@dataclass
class Mark:
    """A cell with a state the HTML colours (pass / fail / na)."""
    text: str
    kind: str = ""


@dataclass
class Bar:
    """A horizontal bar: fraction of the longest one, and the value it stands for."""
    fraction: float
    text: str


Cell = str | Mark | Bar


@dataclass
class Text:
    title: str | None
    text: str


@dataclass
class Grid:
    title: str
    columns: list[str]
    rows: list[list[Cell]]
    collapsed: bool = False
    caption: str | None = None


@dataclass
class Bullets:
    title: str
    items: list[str]
    collapsed: bool = False


@dataclass
class Plot:
    name: str  # key in the `plots` dict handed to the HTML renderer


Part = Text | Grid | Bullets | Plot


@dataclass
class Section:
    title: str
    parts: list[Part] = field(default_factory=list)
    missing: str | None = None  # why the section has no data


# ---------------------------------------------------------------- where a finding's text is

_LEAD_ID = re.compile(r"^(F\d+)\b")


def described_items(view) -> dict[str, int]:
    """Finding id -> priority of the item whose "what" line starts with the id and quotes the
    finding's message (the deterministic draft): the reports show that text there, not twice."""
    messages = {f.id: f.message for f in view.findings}
    out: dict[str, int] = {}
    for iv in view.items:
        for line in iv.what_lines:
            m = _LEAD_ID.match(line.strip())
            if m and m.group(1) in messages and messages[m.group(1)] in line:
                out.setdefault(m.group(1), iv.item.priority)
    return out


# ---------------------------------------------------------------- number formatting

def num(x: Any, sig: int = SIG, *, zeros: bool = False) -> str:
    """3 significant digits; compact exponent (2.13e-4) outside [1e-3, 1e5); inf/NaN strings kept.

    zeros=True keeps trailing zeros (56.0 us, 6.00%) where a measured quantity is shown."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, str):
        try:
            x = float(x)
        except ValueError:
            return x
    if not isinstance(x, (int, float)):
        return str(x)
    if isinstance(x, int) and abs(x) < 10 ** 5:
        return str(x)
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    if 1e3 <= abs(x) < 1e5:
        return str(int(round(x)))
    if 1e-3 <= abs(x) < 1e3:
        s = f"{x:#.{sig}g}" if zeros else f"{x:.{sig}g}"
        return s.rstrip(".")
    m, e = f"{x:.{sig - 1}e}".split("e")
    if not zeros and "." in m:
        m = m.rstrip("0").rstrip(".")
    return f"{m}e{int(e)}"


def pct(fraction: Any) -> str:
    try:
        return f"{100.0 * float(fraction):.{SIG}g}%"
    except (TypeError, ValueError):
        return "—"


def _percent(value: Any) -> str:
    return "—" if value is None else f"{num(value, zeros=True)}%"


def _bytes(n: Any) -> str:
    try:
        n = float(n)
    except (TypeError, ValueError):
        return "—"
    for unit, size in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if abs(n) >= size:
            return f"{num(n / size)} {unit}"
    return f"{int(n)} B"


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _exact(v: Any) -> str:
    return str(v) if isinstance(v, int) and not isinstance(v, bool) else num(v)


def _us(x: Any) -> str:
    return "—" if x is None else f"{num(x, zeros=True)} us"


def one_line(text: str, limit: int = 220) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "…"


def _generic(value: Any) -> str:
    if isinstance(value, float):
        return num(value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={_generic(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_generic(v) for v in value)
    return num(value) if isinstance(value, (int, bool)) or value is None else str(value)


def _others(extra: dict[str, Any], known: set[str]) -> list[Part]:
    items = [f"{k.replace('_', ' ')}: {one_line(_generic(v), 300)}" for k, v in extra.items()
             if k not in known and v not in (None, [], {}, "")]
    return [Bullets("Other data", items, collapsed=True)] if items else []


def _why_missing(review: Review, own: str, other: str, default: str) -> str:
    """The review note that explains a null section: one about this section first, then a general one."""
    notes = [n for n in review.notes if not n.lower().startswith(other)]
    for keys in ((own,), ("no port spec", "not executed", "--no-run", "backend", "not run")):
        for n in notes:
            if any(k in n.lower() for k in keys):
                return n
    return default


# ---------------------------------------------------------------- numerics

def _is_structured(rows: list[dict[str, Any]]) -> bool:
    return bool(rows) and all("scenario" in r and ("passed" in r or "note" in r) for r in rows)


def _verdict_cell(r: dict[str, Any] | None) -> Mark:
    if r is None:
        return Mark("—", "na")
    if r.get("note") and "max_abs" not in r:
        return Mark(f"FAIL ({one_line(r['note'], 60)})", "fail")
    if r.get("passed"):
        return Mark(f"PASS {num(r.get('max_rel'))}", "pass")
    extra = [f"max abs {num(r.get('max_abs'))}"]
    if r.get("nan_actual"):
        extra.append(f"NaN {r['nan_actual']}")
    if r.get("inf_actual"):
        extra.append(f"Inf {r['inf_actual']}")
    return Mark(f"FAIL {pct(r.get('mismatch_fraction'))} ({', '.join(extra)})", "fail")


def _matrix_grid(rows: list[dict[str, Any]], sizes: list[str]) -> Grid:
    cells: dict[tuple[str, Any], dict[tuple[str, str], dict]] = {}
    pairs: list[tuple[str, str]] = []
    for r in rows:
        key = (str(r.get("size")), r.get("output"))
        pair = (str(r.get("scenario")), str(r.get("against", REFERENCE)))
        if r.get("output") is None:  # a failed run: applies to every output of the size
            for k in [k for k in cells if k[0] == key[0]] or [key]:
                cells.setdefault(k, {}).setdefault(pair, r)
        else:
            cells.setdefault(key, {})[pair] = r
        if pair not in pairs:
            pairs.append(pair)
    vs_ref = sorted({p for p in pairs if p[1] == REFERENCE},
                    key=lambda p: (SCENARIO_ORDER.index(p[0]) if p[0] in SCENARIO_ORDER else 99, p[0]))
    gaps = [p for p in pairs if p[1] != REFERENCE]
    cols = vs_ref + gaps
    order = {s: i for i, s in enumerate(sizes)}
    keys = sorted(cells, key=lambda k: (order.get(k[0], len(order)), k[0], k[1] if k[1] is not None else -1))
    multi = len({k[1] for k in keys if k[1] is not None}) > 1
    out = []
    for k in keys:
        label = f"{k[0]} (output {k[1]})" if multi and k[1] is not None else k[0]
        out.append([label] + [_verdict_cell(cells[k].get(p)) for p in cols])
    headers = ["size"] + [f"{s} vs reference" if a == "reference" else f"gap: {s} vs {a}" for s, a in cols]
    return Grid("Scenarios x sizes", headers, out,
                caption="PASS shows the max relative error; FAIL shows the share of elements outside tolerance.")


def _detail_grid(rows: list[dict[str, Any]]) -> Grid:
    ulp = any(r.get("dtype") not in ("float64", None) and r.get("max_ulp") is not None for r in rows)
    cols = ["size", "scenario", "against", "dtype", "max abs", "max rel"] + (["max ULP"] if ulp else []) + \
           ["outside tol.", "NaN / Inf", "worst index"]
    out: list[list[Cell]] = []
    for r in rows:
        if "max_abs" not in r:
            row = [str(r.get("size")), str(r.get("scenario")), str(r.get("against", "")), "—", "—", "—"]
            row += (["—"] if ulp else []) + ["—", "—", one_line(r.get("note", ""), 80)]
            out.append(row)
            continue
        row = [str(r.get("size")), str(r.get("scenario")), str(r.get("against", "")), str(r.get("dtype", "—")),
               num(r.get("max_abs")), num(r.get("max_rel"))]
        if ulp:  # ULPs of a float64 comparison are meaningless (the gpu-model output is float64)
            row.append("—" if r.get("dtype") == "float64" else num(r.get("max_ulp")))
        wi = r.get("worst_index")
        row += [pct(r.get("mismatch_fraction")), f"{r.get('nan_actual', 0)} / {r.get('inf_actual', 0)}",
                "[" + ", ".join(str(i) for i in wi) + "]" if isinstance(wi, list) else num(wi)]
        out.append(row)
    return Grid("All comparisons", cols, out, collapsed=True)


def _sizes_grid(sizes: list[dict[str, Any]], symbol: str | None) -> Grid:
    red = f"reduction length ({symbol})" if symbol else "reduction length"
    out = []
    for s in sizes:
        binds = ", ".join(f"{k}={_exact(v)}" for k, v in s.items()
                          if k not in ("name", "reduction_length", "added_by", "why"))
        name = str(s.get("name", "")) + (f" (added by {s['added_by']})" if s.get("added_by") else "")
        out.append([name, binds or "—", _exact(s.get("reduction_length"))])
    return Grid("Sizes", ["size", "bindings", red], out)


def _distinct(d: Any) -> Text | None:
    """What the review did about coinciding dimensions (numerics.distinct_dims, distinct_size.py)."""
    if not isinstance(d, dict):
        return None
    notes = [str(n) for n in d.get("notes") or []]
    if d.get("name") and d.get("ran"):
        text = f"{d['name']}, added by nki-assist: {d.get('why', '')}."
    elif notes:
        text = " ".join(notes)
        notes = []
    else:
        return None
    return Text("Added size", one_line(" ".join([text, *notes]), 600))


def _growth(fits: list[dict[str, Any]], symbol: str | None) -> Bullets | None:
    if not fits:
        return None
    sym = symbol or "n"
    items = []
    for g in fits:
        lengths = [int(x) for x in g.get("lengths", []) if isinstance(x, (int, float))]
        span = f"{sym} = {lengths[0]}..{lengths[-1]} ({len(lengths)} lengths)" if lengths else "no lengths"
        line = f"{g.get('scenario', '?')}: slope {num(g.get('slope'))} (r² {num(g.get('r2'))}) over {span}"
        slope = g.get("slope")
        if LOW_PRECISION_SLOPE is not None and isinstance(slope, (int, float)):
            line += ("; above %s: error grows like a low-precision accumulator" % num(LOW_PRECISION_SLOPE)
                     if slope >= LOW_PRECISION_SLOPE else "; consistent with fp32 accumulation (~0.5)")
        items.append(line)
    return Bullets("Error growth (log mean abs error vs log reduction length)", items)


def _attribution(findings: list[Finding]) -> Grid | None:
    num_f = [f for f in findings if f.rule.startswith("NUM")]
    if not num_f:
        return None
    # The message is in the finding's item and the findings table; here only what points to it.
    rows = [[f.id or "—", f"{f.rule} {f.name}", f.severity.value, f"line {f.line}" if f.line else "—"]
            for f in num_f]
    return Grid("Attribution", ["ID", "rule", "severity", "where"], rows)


def numerics_section(review: Review) -> Section:
    n = review.numerics
    sec = Section("Numerics")
    if n is None:
        sec.missing = _why_missing(review, "numerics", "perf", "the kernel was not executed")
        return sec
    extra = dict(n.model_extra or {})
    symbol = extra.get("reduction_symbol")
    tol = extra.get("tolerance")
    if _is_structured(n.matrix):
        sec.parts.append(_matrix_grid(n.matrix, [str(s.get("name")) for s in n.sizes]))
    elif n.matrix:

        t = table(n.matrix)
        sec.parts.append(Grid("Results", t.columns, t.rows))
    else:
        sec.parts.append(Text(None, "No comparison ran (no reference, or no scenario finished)."))
    if n.scenarios:
        gpu = extra.get("gpu_model_precision")
        text = ", ".join(n.scenarios)
        sources = extra.get("gpu_model_sources") or {}
        captured = sorted({v for v in sources.values() if isinstance(v, str) and v.startswith("captured")})
        if captured:  # the real CUDA outputs (`nki-assist golden`), not a model of them
            text += f"; gpu-model = the CUDA kernel's outputs {', '.join(captured)}"
        elif gpu:
            text += f"; gpu-model = the reference with {gpu} accumulation (the modelled CUDA output)"
        sec.parts.append(Text("Scenarios", text))
    if isinstance(tol, dict):
        sec.parts.append(Text("Tolerance", f"rtol {num(tol.get('rtol'))}, atol {num(tol.get('atol'))} "
                                           "(an element fails when |actual − expected| > atol + rtol·|expected|)"))
    if n.sizes:
        sec.parts.append(_sizes_grid(n.sizes, symbol))
    added = _distinct(extra.get("distinct_dims"))
    if added:
        sec.parts.append(added)
    g = _growth([x for x in extra.get("growth") or [] if isinstance(x, dict)], symbol)
    if g:
        sec.parts.append(g)
    a = _attribution(review.findings)
    if a:
        sec.parts.append(a)
    if _is_structured(n.matrix):
        sec.parts.append(_detail_grid(n.matrix))
    notes = [one_line(x, 300) for x in extra.get("notes") or []]
    if notes:
        sec.parts.append(Bullets("Notes", notes))
    sec.parts.append(Plot("numerics.png"))
    sec.parts += _others(extra, {"reduction_symbol", "tolerance", "gpu_model_precision", "growth", "notes",
                                 "seconds", "plots", "distinct_dims"})
    return sec


# ---------------------------------------------------------------- performance

def _bounds(p, extra: dict[str, Any]) -> Grid | None:
    b = _dict(extra.get("bounds"))
    size = extra.get("size")
    label = "estimate + measured" if extra.get("measured_time_us") is not None or p.measured else "estimate"
    rows: list[list[Cell]] = []
    if b.get("perfect_overlap_us") is not None:
        rows.append(["perfect overlap", _us(b["perfect_overlap_us"]), "longest engine or DMA queue", "estimate"])
    if b.get("no_overlap_us") is not None:
        rows.append(["no overlap", _us(b["no_overlap_us"]), "sum of all engines and DMA", "estimate"])
    est = b.get("estimate_us", p.estimated_time_us)
    if est is not None:
        basis = "cost model over the simulator trace"
        if b.get("prologue_us") is not None:
            basis = (f"perfect overlap + exposed prologue/epilogue ({num(b.get('prologue_us'))} + "
                     f"{num(b.get('epilogue_us'))} us)")
        rows.append(["estimate", _us(est), basis, "estimate"])
    if extra.get("measured_time_us") is not None:
        rows.append(["measured", _us(extra["measured_time_us"]), "profile total time", "measured"])
    if not rows:
        return None
    title = f"Kernel time bounds ({label}" + (f", size {size})" if size else ")")
    return Grid(title, ["bound", "time", "basis", "kind"], rows)


def _comparison(extra: dict[str, Any]) -> Grid | None:
    rows = [r for r in extra.get("comparison") or [] if isinstance(r, dict)]
    if not rows:
        return None
    out = [[str(r.get("metric", "")).replace("_", " "), num(r.get("estimate"), zeros=True),
            num(r.get("measured"), zeros=True), num(r.get("estimate_over_measured"))] for r in rows]
    return Grid("Estimate vs measured", ["metric", "estimate", "measured", "estimate / measured"], out)


def _engines(p, extra: dict[str, Any]) -> Grid | None:
    if not p.engines:
        return None
    busiest = max((e.busy_us for e in p.engines.values()), default=0.0) or 1.0
    hot = extra.get("bottleneck_engine")
    measured = any("measured_busy_us" in (e.model_extra or {}) for e in p.engines.values())
    cols = ["engine", "busy", "instructions", "fixed overhead"] + (["estimated busy"] if measured else [])
    rows = []
    for name, e in p.engines.items():
        ex = e.model_extra or {}
        label = name + (" (bottleneck)" if name == hot else "")
        if name == "dma" and ex.get("transfers") is not None:
            label += f": {_bytes(ex.get('bytes'))} in {ex['transfers']} transfers"
        row: list[Cell] = [label, Bar(max(0.0, e.busy_us) / busiest, _us(e.busy_us)), str(e.instructions),
                           _us(ex.get("overhead_us"))]
        if measured:
            row.append(_us(ex.get("estimated_busy_us")))
        rows.append(row)
    return Grid("Per-engine busy time", cols, rows)


def _utilization(p, extra: dict[str, Any]) -> list[str]:
    out = []
    util = [(k, v) for k, v in (("MFU", p.mfu_estimated_percent), ("HFU", extra.get("hfu_estimated_percent")),
                                ("MBU", extra.get("mbu_estimated_percent"))) if v is not None]
    if util:
        out.append(" · ".join(f"{k} {_percent(v)}" for k, v in util)
                   + " (model FLOPs, hardware FLOPs and memory bandwidth utilization)")
    uf, tf, xf = extra.get("useful_flops"), extra.get("tensor_flops"), extra.get("transpose_flops")
    if uf is not None or tf is not None:
        s = f"useful FLOPs {num(uf)}, Tensor Engine FLOPs {num(tf)}"
        if xf:
            s += f" (transposes {num(xf)})"
        out.append(s)
    h = _dict(extra.get("hbm"))
    s = f"HBM read {_bytes(p.hbm_read_bytes)}, write {_bytes(p.hbm_write_bytes)}"
    if h.get("unique_read_bytes") is not None:
        s += f"; unique read {_bytes(h['unique_read_bytes'])} ({num(h.get('redundancy'), zeros=True)}x redundant)"
    if h.get("min_bytes"):
        s += f"; minimum the problem needs {_bytes(h['min_bytes'])}"
    out.append(s)
    return out


def _roofline(extra: dict[str, Any]) -> str | None:
    r = _dict(extra.get("roofline"))
    ai = extra.get("arithmetic_intensity", r.get("arithmetic_intensity"))
    if ai is None and not r:
        return None
    s = f"arithmetic intensity {num(ai)} FLOP/B"
    if extra.get("min_arithmetic_intensity") is not None:
        s += f" (the problem's own {num(extra['min_arithmetic_intensity'])})"
    if r.get("ridge_flops_per_byte") is not None:
        s += f" vs ridge {num(r['ridge_flops_per_byte'])} FLOP/B"
    if r.get("region"):
        s += f" → {r['region']}-bound region"
    if isinstance(r.get("achieved_flops"), (int, float)) and isinstance(r.get("attainable_flops"), (int, float)):
        s += (f"; achieved {num(r['achieved_flops'] / 1e12)} TFLOP/s = {_percent(r.get('percent_of_roof'))} "
              f"of the attainable {num(r['attainable_flops'] / 1e12)} TFLOP/s")
    if isinstance(r.get("peak_flops"), (int, float)) and isinstance(r.get("hbm_bw_bytes_per_s"), (int, float)):
        s += f" (peak {num(r['peak_flops'] / 1e12)} TFLOP/s, HBM {num(r['hbm_bw_bytes_per_s'] / 1e9)} GB/s)"
    return s


def _ranked(review: Review, extra: dict[str, Any]) -> Grid | None:
    ranking = [r for r in extra.get("findings") or [] if isinstance(r, dict)]
    mine = [f for f in review.findings if f.rule.startswith(("PERF", "PROF")) or f.source in ("cost-model", "profile")]
    rows: list[tuple[float, list[Cell]]] = []
    used: set[int] = set()
    for f in mine:
        rank = next((i for i, r in enumerate(ranking) if i not in used and r.get("rule") == f.rule
                     and r.get("line") == f.line), None)
        r = ranking[rank] if rank is not None else {}
        if rank is not None:
            used.add(rank)
        sp = f.est_speedup if f.est_speedup is not None else r.get("est_speedup")
        metric = f.evidence.get("focus_metric", r.get("focus_metric"))
        value = f.evidence.get("value", r.get("value"))
        conf = f.evidence.get("confirm_with")
        conf_s = f"{conf.get('metric')} ({conf.get('direction')})" if isinstance(conf, dict) and conf.get("metric") else "—"
        rows.append((sp if isinstance(sp, (int, float)) else -1.0,
                     [f.id or "—", f"{f.rule} {f.name}", f"line {f.line}" if f.line else "—",
                      f"{num(sp, zeros=True)}x" if sp is not None else "—",
                      f"{metric} = {num(value)}" if metric else "—", conf_s]))
    for i, r in enumerate(ranking):  # ranking entries without a finding in the review (hand-built reviews)
        if i in used or any(f.rule == r.get("rule") and f.line == r.get("line") for f in mine):
            continue
        sp = r.get("est_speedup")
        rows.append((sp if isinstance(sp, (int, float)) else -1.0,
                     ["—", f"{r.get('rule', '?')} {r.get('name', '')}".strip(),
                      f"line {r['line']}" if r.get("line") else "—", f"{num(sp, zeros=True)}x" if sp is not None else "—",
                      f"{r['focus_metric']} = {num(r.get('value'))}" if r.get("focus_metric") else "—", "—"]))
    if not rows:
        return None
    rows.sort(key=lambda t: -t[0])
    return Grid("Findings ranked by estimated speedup", ["ID", "rule", "where", "est. speedup", "focus metric",
                                                           "confirm on hardware with"], [r for _, r in rows])


def performance_section(review: Review) -> Section:
    p = review.performance
    sec = Section("Performance")
    if p is None:
        sec.missing = _why_missing(review, "perf", "numerics",
                                   "no estimate: the kernel was not executed, so there is no trace to cost")
        return sec
    extra = dict(p.model_extra or {})
    head = f"{extra.get('label') or ('measured' if p.measured else 'estimate')}"
    if p.bottleneck:
        head += f" · bottleneck: {p.bottleneck}"
        if extra.get("bottleneck_engine"):
            head += f" (engine: {extra['bottleneck_engine']})"
    if p.estimated_time_us is not None:
        head += f" · estimated time {_us(p.estimated_time_us)}"
    if extra.get("status") not in (None, "ok"):
        head += f" · status: {extra['status']}"
    sec.parts.append(Text(None, head))
    for part in (_bounds(p, extra), _comparison(extra), _engines(p, extra)):
        if part:
            sec.parts.append(part)
    if p.engines:
        sec.parts.append(Plot("engines.png"))
    sec.parts.append(Bullets("Utilization", _utilization(p, extra)))
    roof = _roofline(extra)
    if roof:
        sec.parts.append(Text("Roofline", roof))
    sec.parts.append(Plot("roofline.png"))
    ranked = _ranked(review, extra)
    if ranked:
        sec.parts.append(ranked)
    if p.measured and not extra.get("comparison"):
        sec.parts.append(Bullets("Measured (profile)", [f"{k}: {one_line(_generic(v), 200)}"
                                                        for k, v in p.measured.items()]))
    if extra.get("assumptions"):
        sec.parts.append(Bullets(f"Assumptions ({len(extra['assumptions'])})",
                                 [one_line(a, 300) for a in extra["assumptions"]], collapsed=True))
    if extra.get("notes"):
        sec.parts.append(Bullets("Notes", [one_line(a, 300) for a in extra["notes"]]))
    sec.parts += _others(extra, {"label", "status", "bottleneck_engine", "bounds", "estimated_mfu_percent",
                                 "hfu_estimated_percent", "mbu_estimated_percent", "useful_flops", "tensor_flops",
                                 "transpose_flops", "hbm", "arithmetic_intensity", "min_arithmetic_intensity",
                                 "roofline", "assumptions", "notes", "findings", "comparison", "measured_time_us",
                                 "size", "plots"})
    return sec


def sections(review: Review) -> list[Section]:
    return [numerics_section(review), performance_section(review)]


def bar_text(b: Bar, width: int = BAR_WIDTH) -> str:
    """`████████ 56.0 us`: at least a sliver for any non-zero value."""
    n = round(max(0.0, min(1.0, b.fraction)) * width)
    blocks = "█" * n if n else ("▏" if b.fraction > 0 else "")
    return f"{blocks} {b.text}".strip()
