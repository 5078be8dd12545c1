"""Reading and writing tile and tensor values: bounds (out-of-bounds accesses become violations), masks,
uninitialized reads, unwritten elements, and the affine-range bookkeeping of which iteration wrote what."""

from __future__ import annotations

import numpy as np

from ..findings import Severity
from . import block_life, context, liveness, provenance
from .dtypes import sentinel
from .indexing import Mask, mask_for
from .tensor import _WHOLE_KEYS, SimShapeError, Storage, Tensor
from .views import locate, resolve  # noqa: F401 (resolve: dma_geometry imports it from here)


# -- access ----------------------------------------------------------------------------------------
def describe(t: Tensor) -> str:
    st = t.st
    nm = st.name or f"{st.buffer} tile"
    return f"{nm}{list(st.shape)}"


def box(t: Tensor) -> tuple[tuple[int, int], ...]:
    """Bounding box of the view in storage coordinates ((start, stop) per storage dim)."""
    if t.fancy is not None:
        return tuple((int(a.min()), int(a.max()) + 1) if a.size else (0, 0) for a in t.fancy)
    out = []
    for e in t.desc:
        if type(e) is tuple:
            start, step, n = e
            out.append((start, start + step * (n - 1) + 1) if n else (start, start))
        else:
            out.append((e, e + 1))
    return tuple(out)


def _oob(t: Tensor, valid: np.ndarray, m, line, what: str) -> None:
    bad = ~valid if m is None else (~valid & m)
    if bad.any():
        st = t.st
        st.ctx.report("SIM108", line,
                      f"{what} {describe(t)} at {_fmt_box(box(t))} reaches outside the tensor "
                      f"({int(bad.sum())} elements out of bounds, not masked).",
                      tensor=st.name, shape=list(st.shape), box=[list(b) for b in box(t)],
                      out_of_bounds_elements=int(bad.sum()))


def _fmt_box(b) -> str:
    return "[" + ", ".join(f"{a}:{z}" for a, z in b) + "]"


def _valid_mask(t: Tensor, inner) -> np.ndarray:
    v = np.zeros(t.shape, bool)
    if inner is not None:
        v[inner] = True
    return v


def read(t: Tensor, m: np.ndarray | None, line, *, exempt_affine: bool = False) -> np.ndarray:
    """Values of the view in storage dtype (fp32 for floats); unchecked positions hold sentinels."""
    st = t.st
    ctx = st.ctx
    if st.blk is not None:
        block_life.touch(st, t)
    if st.ivx >= 0 or st.alias is not None:
        liveness.used(st)
    h, key, inner, ok = locate(t)  # h: st, or the block of a block-dimension tile that holds the view
    if t.fancy is not None:
        valid = inner
        if not ok:
            _oob(t, valid, m, line, "read of")
        out = h.data[key]
        if not ok:
            out = np.where(valid, out, sentinel(st.dt))
        w = h.written[key] if not h.all_written else None
        check_m = m if ok else (valid if m is None else valid & m)
    elif ok:
        out = h.data if key is Ellipsis else h.data[key]
        w = None if h.all_written else h.written[key]
        check_m = m
    else:
        valid = _valid_mask(t, inner)
        _oob(t, valid, m, line, "read of")
        out = np.full(t.shape, sentinel(st.dt), dtype=st.dt.store)
        if inner is not None:
            out[inner] = h.data[key]
        w = None
        if not h.all_written:
            w = np.zeros(t.shape, bool)
            if inner is not None:
                w[inner] = h.written[key]
            w |= ~valid
        check_m = m
    if w is not None:
        bad = ~w if check_m is None else (~w & check_m)
        if bad.any():
            ctx.unwritten_read = True  # the sanitizer: NaN from here are no new fault
            if ctx.poison is not None and (st.holes or not bad.all()):
                # an instruction over a partly written tile (a masked-off tail): the result inherits the
                # unwritten positions (unwritten.py); a tile nothing was written to is reported right here
                ctx.poison.append((bad, t, line))
            else:
                report_uninitialized(bad, t, line)
    if h.wtag is not None and ctx.tag and not exempt_affine and ok and t.fancy is None:
        _affine_read(t, key, m, line, h)
    log = st.log
    if log is not None and log.writer is not None:  # an HBM tensor some store wrote: mark it read
        provenance.on_read(st, key)
    return out


def report_uninitialized(bad: np.ndarray, t: Tensor, line, *, untracked: bool = False) -> None:
    """SIM111. `untracked`: the values could not be followed further (an operand layout the simulator does not
    map back), so whether they reach a result is unknown: a warning, not an error about the kernel."""
    st = t.st
    n_bad = int(np.count_nonzero(bad))
    msg = (f"reads {n_bad} never-written element(s) of {describe(t)} at {_fmt_box(box(t))}"
           + (f" (allocated on line {st.line})" if st.line else ""))
    extra = {}
    if untracked:
        msg += ("; the simulator could not follow them through this instruction, so it cannot tell whether "
                "they reach an output")
        extra = {"untracked": True, "_severity": Severity.WARNING}
    st.ctx.report("SIM111", line, msg, tensor=st.name, uninitialized_elements=n_bad, allocated_line=st.line,
                  **extra)


def mark_unwritten(t: Tensor, positions: np.ndarray) -> bool:
    """Clear the written flag of `positions` (a mask in the view's shape); False when the view is not a
    plain slice of its storage (the caller then reports instead of propagating)."""
    st = t.st
    if t.fancy is not None or positions.shape != tuple(t.shape):
        return False
    h, key, _inner, ok = locate(t)
    if not ok:
        return False
    if h.all_written:
        h.written = np.ones(h.shape, dtype=bool)
        h.all_written = False
    region = h.written if key is Ellipsis else h.written[key]
    if region.shape != positions.shape or (key is not Ellipsis and not np.shares_memory(region, h.written)):
        return False
    region[positions] = False
    st.holes = True
    return True


def write(t: Tensor, value, m: np.ndarray | None, line, *, accumulate: bool = False,
          exempt_affine: bool = False) -> None:
    """Store `value` (already in storage dtype) into the view; `accumulate` adds in place (PSUM)."""
    st = t.st
    ctx = st.ctx
    if st.blk is not None:
        block_life.touch(st, t)
    if st.ivx >= 0 or st.alias is not None:
        liveness.used(st)
    shape = t.shape
    value = np.asarray(value)
    if value.shape != shape:
        try:
            value = np.broadcast_to(value, shape)
        except ValueError:
            raise SimShapeError(f"cannot write a value of shape {list(value.shape)} into "
                                f"{describe(t)} view of shape {list(shape)}") from None
    h, key, inner, ok = locate(t)  # h: st, or the block of a block-dimension tile that holds the view
    if t.fancy is not None:
        valid = inner
        if not ok:
            _oob(t, valid, m, line, "write to")
        sel = valid if m is None else (valid & m)
        if m is not None:
            st.holes = True
            if st.role == "output":
                _skipped(st)[tuple(a[valid & ~m] for a in key)] = True
        idx = tuple(a[sel] for a in key)
        if st.log is not None:
            provenance.on_store(st, None, None, value[sel], line, fancy=idx)
        if accumulate:
            np.add.at(h.data, idx, value[sel])
        else:
            h.data[idx] = value[sel]
        if not h.all_written:
            h.written[idx] = True
        return
    if not ok:
        valid = _valid_mask(t, inner)
        _oob(t, valid, m, line, "write to")
        if inner is None:
            return
        value = value[inner]
        m = None if m is None else m[inner]
    if st.log is not None:
        provenance.on_store(st, key, m, value, line)
    data = h.data
    if m is None:
        if accumulate:
            data[key] += value
        else:
            data[key] = value
        if not h.all_written:
            if h is not st:
                if key == _whole_key(h.shape):
                    h.all_written, h.written = True, None
                else:
                    h.written[key] = True
            elif t.is_whole():
                st.all_written = True
                st.written = None
                base = st.alias
                while base is not None:  # a reshaped alias covers its whole original too
                    base.all_written, base.written, base = True, None, base.alias
            else:
                st.written[key] = True
    else:
        st.holes = True
        if st.role == "output":
            region = _skipped(st)[key]
            if isinstance(region, np.ndarray) and region.shape == m.shape:
                region[~m] = True
        if not m.any():
            return
        sub = data[key]
        if accumulate:
            sub[m] += value[m]
        else:
            sub[m] = value[m]
        if not h.all_written:
            h.written[key][m] = True
    if ctx.tag and ctx.legacy and not exempt_affine and st.seq < ctx.aff_start:
        _affine_write(st, key, m, line, h)


def _whole_key(shape) -> tuple:
    k = _WHOLE_KEYS.get(shape)
    if k is None:
        k = _WHOLE_KEYS[shape] = tuple(slice(0, d, 1) for d in shape)
    return k


def _skipped(st: Storage) -> np.ndarray:
    """Output elements a masked store addressed and its mask excluded (the kernel chose not to write them)."""
    if st.skipped is None:
        st.skipped = np.zeros(st.shape, bool)
    return st.skipped


# -- legacy affine_range hazards -------------------------------------------------------------------
def _diverging(ctx, old_tag: int):
    old = ctx.paths[old_tag]
    for (ua, ia), (ub, ib) in zip(old, ctx.affine_path):
        if ua != ub:
            return None
        if ia != ib:
            return ua, ia, ib
    return None


def _tags(region, m):
    sel = region if m is None else region[m]
    if sel.size == 0:
        return ()
    mx = sel.max()
    if mx == 0:
        return ()
    mn = sel.min()
    if mn == mx:
        return (int(mx),)
    return [int(x) for x in np.unique(sel)]


def _affine_write(st: Storage, key, m, line, h: Storage) -> None:
    ctx = st.ctx
    if h.wtag is None:
        h.wtag = np.zeros(h.shape, np.int32)
    region = h.wtag[key]
    cur = ctx.tag
    for tg in _tags(region, m):
        if tg == cur or tg == 0:
            continue
        d = _diverging(ctx, tg)
        if d is not None and not ctx.seen("SIM110", line):
            ctx.report("SIM109", line,
                       f"iterations {d[1]} and {d[2]} of an nl.affine_range loop write the same elements of "
                       f"{st.name or st.buffer + ' tile'}{list(st.shape)}; affine_range iterations must write "
                       f"disjoint locations (err_unexpected_output_dependencies).",
                       tensor=st.name, iterations=[d[1], d[2]])
            break
    if isinstance(region, np.ndarray) and region.ndim:
        if m is None:
            region[...] = cur
        else:
            region[m] = cur
    else:
        h.wtag[key] = cur


def _affine_read(t: Tensor, key, m, line, h: Storage) -> None:
    st = t.st
    ctx = st.ctx
    region = h.wtag[key]
    if not isinstance(region, np.ndarray):
        region = np.asarray(region)
    cur = ctx.tag
    for tg in _tags(region, m):
        if tg == cur or tg == 0:
            continue
        d = _diverging(ctx, tg)
        if d is not None:
            ctx.report("SIM110", line,
                       f"iteration {d[2]} of an nl.affine_range loop reads {describe(t)} written by iteration "
                       f"{d[1]}: a loop-carried dependency in a loop declared independent.",
                       tensor=st.name, writer_iteration=d[1], reader_iteration=d[2])
            return


def tile_mask(mask, shape):
    """Legacy mask (Mask / None) -> boolean array of the operand shape."""
    if mask is None:
        return None

    if not isinstance(mask, (Mask, np.ndarray, bool, np.bool_)):
        raise context.UnsupportedAPI("mask= built from something other than nl.arange/affine predicates")
    try:
        return mask_for(mask, shape)
    except ValueError:
        raise SimShapeError(f"mask of shape {list(np.shape(getattr(mask, 'arr', mask)))} does not fit an "
                            f"operand of shape {list(shape)}") from None
