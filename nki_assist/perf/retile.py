"""A re-tiling plan for a kernel whose live SBUF tiles do not fit: band sizes, halo rows, bytes, cost.

When SIM104 says a kernel holds more SBUF per partition than the target has, "shrink your tiles" is not
advice. This module reads the simulator trace of the run that overflowed and computes what a reviewer
would: which axis to band (the first free axis of the largest kernel-scope tile), how many halo rows a
stencil needs (the tile's extent minus the extent its reads cover: a 3x3 convolution reads [H, W]
windows of an [H + 2, W + 2] tile), the largest band that fits with double buffering (and without),
the bytes per partition before and after, the extra HBM reads of the halo, and the cost model re-run
on the banded instruction stream so the plan's time is an estimate, not a guess.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from ..contracts.runs import Operand, RunResult, TraceEntry
from ..api.hardware import Target
from .cost import elem_bytes
from .model import estimate

_HBM = ("hbm", "shared_hbm", "private_hbm")


@dataclass
class Tile:
    key: str  # tensor name, or "line N" for an unnamed temporary
    line: int | None
    shape: tuple[int, ...]
    dtype: str
    depth: int  # loop depth of its first write: 0 = kernel scope
    loaded: bool = False  # written by a DMA load (double-buffering a band overlaps its load)
    stored: bool = False  # read by a DMA store
    halo: int = 0  # rows its reads do not cover on the banded axis (a stencil input)

    @property
    def bytes_pp(self) -> int:
        return math.prod(self.shape[1:]) * elem_bytes(self.dtype)


@dataclass
class RetilePlan:
    axis: int  # tile axis that is banded (1 = first free axis)
    extent: int  # output rows on that axis
    band: int  # rows per band
    bands: int
    halo: int
    buffers: int  # 2 = double-buffered loads/stores, 1 = single
    budget: int
    before_bytes: int  # per partition, as written
    after_bytes: int  # per partition, with the plan (incl. buffers)
    tiles: list[dict] = field(default_factory=list)  # per banded tile: name, line, shape, bytes before/after
    single_buffer_band: int | None = None
    load_bytes_before: int = 0
    load_bytes_after: int = 0
    dma_before: int = 0
    dma_after: int = 0
    est_before_us: float | None = None
    est_after_us: float | None = None

    @property
    def reread_percent(self) -> float:
        return 100.0 * (self.load_bytes_after - self.load_bytes_before) / max(self.load_bytes_before, 1)

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["reread_percent"] = round(self.reread_percent, 1)
        return d


def _key(op: Operand, line: int | None) -> str:
    return op.name or f"line {line}"


def _tiles(trace: list[TraceEntry]) -> dict[str, Tile]:
    tiles: dict[str, Tile] = {}
    for e in trace:
        d = e.dst
        if d is not None and d.buffer == "sbuf":
            k = _key(d, e.line)
            t = tiles.get(k)
            if t is None:
                t = tiles[k] = Tile(k, e.line, tuple(d.shape), d.dtype, e.loop_depth)
            elif len(d.shape) == len(t.shape):
                t.shape = tuple(max(a, b) for a, b in zip(t.shape, d.shape))
            t.loaded |= e.engine == "dma" and e.direction == "load"
        if e.engine == "dma" and e.direction == "store":
            for s in e.srcs:
                if s.buffer == "sbuf" and _key(s, e.line) in tiles:
                    tiles[_key(s, e.line)].stored = True
    return tiles


def _halo(trace: list[TraceEntry], tile: Tile, axis: int) -> int:
    """Rows of `tile` on `axis` that its compute reads never cover in one access (a stencil's halo)."""
    widths = [s.shape[axis] for e in trace if e.engine != "dma" for s in e.srcs
              if s.name == tile.key and s.buffer == "sbuf" and len(s.shape) == len(tile.shape)]
    if not widths or max(widths) >= tile.shape[axis]:
        return 0
    return tile.shape[axis] - max(widths)


def _solve(tiles: list[Tile], fixed: int, extent: int, budget: int, buffers: int) -> int:
    """Largest band (rows) whose banded tiles, times their buffers, fit beside the fixed ones."""
    per_row = halo_bytes = 0.0
    for t in tiles:
        row = t.bytes_pp / t.shape[1] if len(t.shape) > 1 else 0
        n = buffers if (t.loaded or t.stored) else 1
        per_row += n * row
        halo_bytes += n * row * t.halo
    if per_row <= 0:
        return 0
    return max(0, min(extent, int((budget - fixed - halo_bytes) // per_row)))


def _balanced(band: int, extent: int) -> int:
    """The fewest bands that fit, made equal: 160 rows at <= 65 per band -> 3 bands of 54 (not 65, 65, 30)."""
    return math.ceil(extent / math.ceil(extent / band))


def _scaled(o: Operand | None, axis: int, rows: int, halo: int, extent: int, boxed: bool) -> Operand | None:
    """An operand cut to one band: `rows` on the banded axis, plus the halo for the tile that carries it."""
    if o is None or len(o.shape) <= axis or o.buffer in _HBM and not boxed:
        return o
    old = o.shape[axis]
    new = rows + (halo if old > extent else 0)
    return dataclasses.replace(o, shape=o.shape[:axis] + (min(old, new),) + o.shape[axis + 1:])


def _banded_trace(trace: list[TraceEntry], banded: dict[str, Tile], axis: int, extent: int, band: int,
                  halo: int) -> list[TraceEntry]:
    """The instruction stream with every instruction on a banded tile repeated per band at band size."""
    bounds = [(s, min(band, extent - s)) for s in range(0, extent, band)]
    out: list[TraceEntry] = []

    def ops(e: TraceEntry) -> list[Operand]:
        return [o for o in (e.dst, *e.srcs) if o is not None]

    for e in trace:
        touched = [o for o in ops(e) if o.buffer == "sbuf" and _key(o, e.line) in banded and len(o.shape) > axis]
        if not touched:
            out.append(dataclasses.replace(e, seq=len(out)))
            continue
        for start, rows in bounds:
            main = touched[0]
            old = main.shape[axis]
            new = min(old, rows + (halo if old > extent else 0))
            f = new / old
            box = e.hbm_box
            if box is not None and len(box) > axis:
                lo = box[axis][0] + start
                box = box[:axis] + ((lo, lo + new),) + box[axis + 1:]
            boxed = e.hbm_box is not None
            out.append(dataclasses.replace(
                e, seq=len(out), dst=_scaled(e.dst, axis, rows, halo, extent, boxed),
                srcs=[_scaled(s, axis, rows, halo, extent, boxed) for s in e.srcs],
                free_elems=max(1, round(e.free_elems * f)) if e.free_elems else 0,
                bytes=round(e.bytes * f), hbm_box=box))
    return out


def _time_us(run: RunResult, trace: list[TraceEntry], target: Target) -> float | None:
    try:
        return estimate(dataclasses.replace(run, trace=trace, findings=[]), target).estimated_time_us
    except Exception:  # the plan stands on its bytes; a cost-model failure only drops the time
        return None


def plan_sbuf_retile(run: RunResult, target: Target) -> RetilePlan | None:
    """A banding plan for the largest kernel-scope SBUF tiles, or None when banding cannot make it fit."""
    trace = sorted(run.trace, key=lambda e: e.seq)
    tiles = _tiles(trace)
    scope = [t for t in tiles.values() if len(t.shape) >= 2]
    if not scope:
        return None
    big = max(scope, key=lambda t: t.bytes_pp)
    if big.depth > 0 or big.shape[1] < 2:
        return None  # tiles allocated per iteration: the loop structure, not a band, sets their size
    axis = 1
    big.halo = _halo(trace, big, axis)
    extent = big.shape[axis] - big.halo
    banded, fixed = [], 0
    for t in scope:
        if len(t.shape) > axis and t.shape[0] == big.shape[0] and t.shape[axis] in (extent, extent + big.halo):
            if t is not big:
                t.halo = t.shape[axis] - extent
            banded.append(t)
        else:
            fixed += t.bytes_pp
    before = fixed + sum(t.bytes_pp for t in banded)
    budget = target.sbuf_usable_bytes_per_partition
    if before <= budget or extent < 2:
        return None
    buffers, band = 2, _solve(banded, fixed, extent, budget, 2)
    single = _solve(banded, fixed, extent, budget, 1)
    if band < 1:
        buffers, band = 1, single
    if band < 1:
        return None
    band = _balanced(band, extent)
    bands = math.ceil(extent / band)

    def size(t: Tile, rows: int) -> int:
        return t.bytes_pp * (rows + t.halo) // t.shape[axis]

    after = fixed + sum(size(t, band) * (buffers if (t.loaded or t.stored) else 1) for t in banded)
    loads = [e for e in trace if e.engine == "dma" and e.direction == "load"]
    btrace = _banded_trace(trace, {t.key: t for t in banded}, axis, extent, band, big.halo)
    bloads = [e for e in btrace if e.engine == "dma" and e.direction == "load"]
    return RetilePlan(
        axis=axis, extent=extent, band=band, bands=bands, halo=big.halo, buffers=buffers, budget=budget,
        before_bytes=before, after_bytes=after, single_buffer_band=_balanced(single, extent) if single else None,
        tiles=[{"tensor": t.key, "line": t.line, "shape": list(t.shape), "dtype": t.dtype,
                "bytes_before": t.bytes_pp, "bytes_after": size(t, band),
                "buffers": buffers if (t.loaded or t.stored) else 1} for t in banded],
        load_bytes_before=sum(e.bytes for e in loads), load_bytes_after=sum(e.bytes for e in bloads),
        dma_before=sum(1 for e in trace if e.engine == "dma"), dma_after=sum(1 for e in btrace if e.engine == "dma"),
        est_before_us=_time_us(run, trace, target), est_after_us=_time_us(run, btrace, target))


def _kib(n: float) -> str:
    return f"{n / 1024:.1f} KiB"


def _total(n: float) -> str:
    return f"{n / 2**20:.2f} MiB" if n >= 2**20 else _kib(n)


def _name(t: dict) -> str:
    return f"the temporary at line {t['line']}" if t["tensor"].startswith("line ") else f"`{t['tensor']}`"


def plan_text(p: RetilePlan) -> str:
    """The plan as a reviewer would write it: sizes, bytes, the halo's cost and the trade-off."""
    inp = next((t for t in p.tiles if t["tensor"] and t["bytes_before"] and
                t["shape"][p.axis] == p.extent + p.halo and p.halo), None)
    last = p.extent - (p.bands - 1) * p.band
    lines = [f"Band axis {p.axis} (the first free axis, {p.extent} rows) into {p.bands} bands of {p.band} rows"
             + (f" (the last {last})" if last != p.band else "")
             + (f" plus {p.halo} halo rows (the stencil reads {p.halo + 1} rows per output row, so each band loads "
                f"{p.band + p.halo} input rows; the next band re-reads the {p.halo} shared rows)" if p.halo else "")
             + "."]
    parts = ", ".join(f"{_name(t)} {_kib(t['bytes_before'])} -> {_kib(t['bytes_after'])}"
                      + (f" x{t['buffers']}" if t["buffers"] > 1 else "") for t in p.tiles)
    lines.append(f"Per partition: {_kib(p.before_bytes)} as written -> {_kib(p.after_bytes)} with the plan "
                 f"({parts}; {'double-buffered loads/stores' if p.buffers == 2 else 'single-buffered'}), "
                 f"against {_kib(p.budget)} usable.")
    if p.halo:
        lines.append(f"Cost of the halo: HBM reads grow from {_total(p.load_bytes_before)} to "
                     f"{_total(p.load_bytes_after)} ({p.reread_percent:+.1f}%), in {p.dma_after} DMAs instead of "
                     f"{p.dma_before}" + (f" ({_name(inp)} is the tile with the halo)." if inp else "."))
    if p.est_after_us is not None and p.est_before_us is not None:
        lines.append(f"Cost model on the banded instruction stream: {p.est_after_us:.1f} us "
                     f"(the unbanded stream, which does not fit, costs {p.est_before_us:.1f} us).")
    if p.buffers == 2 and p.single_buffer_band and p.single_buffer_band > p.band:
        lines.append(f"Trade-off: single-buffered bands could be {p.single_buffer_band} rows (fewer, larger DMAs "
                     f"and less halo re-read), but each band's load would then wait for the previous band's compute; "
                     f"{p.band}-row double-buffered bands overlap DMA with compute.")
    return " ".join(lines)
