"""Cost-model estimates checked like claims: partition underuse that is only the ragged remainder of the size
estimated (PERF103), and small-DMA gains that the tensors' HBM rows cannot deliver (PERF102)."""

from __future__ import annotations

from ...findings import Finding
from ...numerics.registry import TRAINIUM
from .evidence import RunContext, contradict


def check_ragged_underuse(ctx: RunContext, f: Finding, perf_size: str | None) -> Finding | None:
    mean_p = f.evidence.get("mean_partitions")
    if perf_size is None or mean_p is None or perf_size not in ctx.ragged:
        return f
    e = next((x for x in ctx.sizes if x.name == perf_size), None)
    if e is None:
        return f
    tails = {k: v % 128 for k, v in e.bindings.items() if v % 128}
    hit = next((k for k, r in tails.items() if abs(r - mean_p) < 0.5), None)
    if hit is None:
        return f
    r = tails[hit]
    return contradict(f, f"the cost model ran on ragged {e.describe()}: its {r}-partition instructions are the "
                      f"{hit} % 128 = {r} tail tile, which no packing removes; tile-aligned sizes use all 128 "
                      "partitions", [perf_size],
                      fix="No change needed: the narrow instructions are the ragged remainder of the size "
                          "that was estimated.")


def check_layout_limited_dma(ctx: RunContext, f: Finding, perf_size: str | None) -> Finding | None:
    thr = f.evidence.get("threshold_bytes")
    sr = next((x for x in ctx.res.sizes if x.size == perf_size), None) if perf_size else None
    run = sr.runs.get(TRAINIUM.name) if sr is not None else None
    if not thr or run is None or not run.trace or ctx.spec is None:
        return f
    tensors = hbm_tensors(ctx, sr.bindings, run)
    rows: dict[str, tuple[int, int, str, float]] = {}  # tensor -> (row bytes, row elems, dtype, moved B)
    lines: dict[int, tuple[str, int, float, str]] = {}  # line -> (tensor, row bytes, bytes per descriptor, direction)
    for e in run.trace:
        if e.engine != "dma" or not e.transfers or e.bytes / e.transfers >= thr:
            continue
        t = tensors.get(e.hbm_tensor or "")
        if t is None:
            return f  # a transfer whose tensor layout is unknown: the estimate may hold
        shape, dtype, itemsize = t
        row = shape[-1] * itemsize
        if row >= thr:
            return f  # this tensor's rows allow longer descriptors: the gain is available
        moved = max(rows.get(e.hbm_tensor, (0, 0, "", 0.0))[3], e.bytes / e.transfers)
        rows[e.hbm_tensor] = (row, shape[-1], dtype, moved)
        if e.line:
            lines[e.line] = (e.hbm_tensor, row, max(lines.get(e.line, ("", 0, 0.0, ""))[2], e.bytes / e.transfers),
                             e.direction or "")
    if not rows:
        return f
    listed = ", ".join(f"`{n}` {el} x {dt} = {rb:,} B" for n, (rb, el, dt, _) in rows.items())
    partial = [f"`{n}` moves {mv:,.0f} of its {rb:,} B rows per partition" for n, (rb, _, _, mv) in rows.items()
               if mv < rb]
    f = f.model_copy(update={"evidence": {**f.evidence, "layout_limited_lines": {
        str(ln): {"tensor": t, "row_bytes": rb, "moved_bytes": round(mv), "direction": d}
        for ln, (t, rb, mv, d) in sorted(lines.items())}}})
    return contradict(
        f, f"on size `{perf_size}` every small transfer moves rows of a tensor whose HBM rows are shorter than "
           f"{thr:,} B ({listed}); a descriptor cannot span more than one row, so the estimated gain needs "
           "another HBM layout, not another kernel", [perf_size],
        fix=("Load whole rows where the kernel moves less (" + "; ".join(partial) + "); beyond that only an "
             "HBM layout with longer rows (a producer-side change) makes the descriptors longer.") if partial
        else "Nothing to change in the kernel: only an HBM layout with longer rows (a producer-side change) "
             "makes these descriptors longer.")


def hbm_tensors(ctx: RunContext, bindings: dict[str, int], run) -> dict[str, tuple[tuple[int, ...], str, int]]:
    """HBM tensor name -> (shape, dtype, itemsize): kernel inputs from the spec, a single output from the run."""
    out = {}
    for param, inp in ctx.params.items():
        spec = ctx.spec.inputs.get(inp)
        if spec is None or spec.is_value:
            continue
        shape = tuple(d if isinstance(d, int) else bindings.get(d, 0) for d in spec.shape or ())
        if shape and all(shape):
            out[param] = (shape, spec.dtype, spec.np_dtype.itemsize)
    names = {e.hbm_tensor for e in run.trace if e.engine == "dma" and e.hbm_tensor} - set(out)
    if len(run.outputs) == 1 and len(names) == 1:
        o = run.outputs[0]
        out[names.pop()] = (tuple(o.shape), str(o.dtype), o.dtype.itemsize)
    return out
