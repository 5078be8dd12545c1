"""output-unwritten: the simulator's partly written output (SIM112) sits on the output's allocation, and the
drafted text blames the allocation ("`nl.ndarray` does not initialize memory"; round the trip count up).
When the trace shows a store into that output that ran and moved 0 bytes, the loop did reach the unwritten
rows and the store's own size is the defect: the finding moves to the store line and says so, with the
numbers (iterations, bytes, the empty region); the numerics findings anchored on the allocation move with it.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from ...findings import Finding
from ...numerics.registry import TRAINIUM
from .evidence import RunContext


def _box(box) -> str:
    return ", ".join(f"{a}:{b}" for a, b in box or ())


def hole(message: str) -> list[tuple[int, int]] | None:
    """The unwritten region SIM112's message names (`within [128:256, 0:256]`), per dimension."""
    m = re.search(r"within \[([\d:, ]+)\]", message)
    if m is None:
        return None
    try:
        return [(int(a), int(b)) for a, b in (d.split(":") for d in m.group(1).split(", "))]
    except ValueError:
        return None


def _inside(box, region: list[tuple[int, int]] | None) -> bool:
    """The empty store starts inside the unwritten region (on every dimension it names)."""
    if region is None or not box or len(box) != len(region):
        return False
    return all(lo <= a < hi or (a == hi and lo == hi) for (a, _), (lo, hi) in zip(box, region))


def empty_stores(ctx: RunContext, tensor: str) -> list[tuple[str, int, int, object]]:
    """(size, store line, stores at that line, region of the first empty one) for each size whose trace has a
    store into `tensor` that moved 0 bytes."""
    out = []
    for sr in ctx.res.sizes if ctx.res is not None else ():
        run = sr.runs.get(TRAINIUM.name)
        if run is None or not run.trace:
            continue
        stores = [e for e in run.trace if e.engine == "dma" and e.direction == "store" and e.hbm_tensor == tensor]
        empty = [e for e in stores if e.bytes == 0 and e.line]
        if empty:
            line = empty[0].line
            out.append((sr.size, line, sum(1 for e in stores if e.line == line), empty[0].hbm_box))
    return out


def check_unwritten(ctx: RunContext, f: Finding) -> Finding:
    """SIM112 on an allocation moved to the store that ran empty (see the module docstring)."""
    tensor = f.evidence.get("tensor")
    region = hole(f.message)
    hits = [h for h in empty_stores(ctx, tensor) if h[1] != f.line and _inside(h[3], region)] \
        if tensor and f.line else []
    if not hits:
        return f
    size, line, n, box = hits[0]
    first = _box(box).split(", ")[0]
    text = (f"on size `{size}` the store at line {line} ran {n} times and one of them moved 0 bytes "
            f"(into {tensor}[{_box(box)}]): the loop reaches the unwritten rows, but the tile it stores "
            f"there is empty, so the allocation at line {f.line} is not the cause")
    return f.model_copy(update={
        "line": line, "end_line": None, "column": None, "end_column": None,
        "message": f"{f.message} The run places it: {text}.",
        "fix": (f"Make the store at line {line} cover its rows in every iteration: the row count it uses is 0 in "
                f"the iteration that starts at {tensor}[{first.split(':')[0]}] (a remainder such as `R % P` is 0 "
                "when the size is a multiple of the tile; the rows left are `R - start`). The trip count already "
                "reaches those rows."),
        "evidence": {**f.evidence, "allocation_line": f.line, "root_cause_lead": True,
                     "reconciled": {"status": "relocated", "evidence": text, "sizes": [h[0] for h in hits]}}})


def follow_relocated(findings: list[Finding]) -> list[Finding]:
    """The numerics findings the attribution anchored on the allocation name the store the run placed it at."""
    moves = {(PurePath(f.file or "").name, f.evidence["allocation_line"]): f.line for f in findings
             if f.rule == "SIM112" and f.evidence.get("allocation_line")}
    if not moves:
        return findings
    out = []
    for f in findings:
        new = moves.get((PurePath(f.file or "").name, f.line))
        if new is not None and f.source == "numerics" and f.evidence.get("cause_rule") == "SIM112":
            msg = re.sub(rf"(SIM112 [\w-]+ at line ){f.line}\b", rf"\g<1>{new}", f.message)
            f = f.model_copy(update={"line": new, "end_line": None, "column": None, "end_column": None,
                                     "message": msg})
        out.append(f)
    return out
