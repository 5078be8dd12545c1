"""What counts as "written": unwritten positions flow through instructions instead of being reported at
every read.

Legacy kernels load a ragged tail with `mask=`, compute on the whole tile and store under the same mask;
the partitions the load skipped hold garbage that never reaches HBM. So a value computed from never-written
inputs is itself unwritten, per element, and becomes a finding (SIM111) only where it can reach a result:
- an unmasked store or an HBM write (dma.py reads its source without collecting),
- an instruction that mixes written and unwritten inputs into one output element: a reduction over a
  partly written partition, a matmul contracting over partly written partitions.
A tile nothing was ever written to (no masked write left holes in it) is reported at its first read: that
is an uninitialized accumulator, not a masked-off tail (access.read).

While an instruction runs, `access.read` appends (unwritten positions in the view's shape, view, line) to
`ctx.poison`; the functions here place those positions into the instruction's output.
"""

from __future__ import annotations

import numpy as np

from . import context
from .access import mark_unwritten, report_uninitialized


def begin() -> bool:
    """Start collecting for one instruction; False when an enclosing instruction already collects."""
    ctx = context.current()
    if ctx is None or ctx.poison is not None:
        return False
    ctx.poison = []
    return True


def end(owner: bool) -> list:
    """Stop collecting (only the owner does) and return what was collected."""
    ctx = context.current()
    if not owner or ctx is None:
        return []
    poison, ctx.poison = ctx.poison or [], None
    return poison


class collect:
    """`with unwritten.collect() as poison:` around an instruction's reads; `poison` holds what they found
    once the block ends (empty when an enclosing instruction collects instead, or when `enabled` is False)."""

    __slots__ = ("owner", "poison", "enabled")

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self.poison: list = []

    def __enter__(self) -> list:
        self.owner = begin() if self.enabled else False
        return self.poison

    def __exit__(self, *exc) -> bool:
        self.poison.extend(end(self.owner))
        return False


def _align(bad: np.ndarray, shape: tuple) -> np.ndarray | None:
    """A view's unwritten positions in an instruction's shape (NKI broadcasts from the partition axis)."""
    b = bad
    if b.ndim < len(shape) and b.shape and b.shape[0] == shape[0]:
        b = b.reshape(b.shape + (1,) * (len(shape) - b.ndim))
    try:
        return np.broadcast_to(b, shape)
    except ValueError:
        if b.size == int(np.prod(shape)):
            return b.reshape(shape)
        return None


def union(poison: list, shape: tuple, entries=None) -> tuple[np.ndarray, list]:
    """(unwritten positions in `shape`, entries that do not fit it)."""
    pos = np.zeros(shape, bool)
    unplaced = []
    for e in poison:
        if entries is not None and not any(e[1] is t for t in entries):
            continue
        b = _align(e[0], shape)
        if b is None:
            unplaced.append(e)
        else:
            pos |= b
    return pos, unplaced


def report(entries, *, untracked: bool = False) -> None:
    for bad, t, line in entries:
        report_uninitialized(bad, t, line, untracked=untracked)


def place(out, pos: np.ndarray, poison: list) -> None:
    """Mark `pos` (in out's shape) unwritten in out; when out is not a plain view the values cannot be
    followed further: say so (a warning), without claiming they reach an output."""
    if out is None or not pos.any():
        return
    if not mark_unwritten(out, pos):
        report(poison, untracked=True)


def elementwise(out, poison: list) -> None:
    """Each output element depends on the same element of each input."""
    shape = tuple(out.shape)
    pos, unplaced = union(poison, shape)
    report(unplaced, untracked=True)
    place(out, pos, poison)


def reduction(out, poison: list, in_shape: tuple, axes: tuple[int, ...], active=None) -> None:
    """Output groups reduce `axes` of `in_shape`: a group entirely unwritten stays unwritten; a group mixing
    written and unwritten elements is reported (its result looks valid but is not). `active`: the elements
    the instruction reads (its mask); masked-off elements count as neither."""
    in_shape = tuple(in_shape)
    bad, unplaced = union(poison, in_shape)
    report(unplaced, untracked=True)
    if not bad.any():
        return
    act = np.ones(in_shape, bool) if active is None else np.broadcast_to(np.asarray(active, bool), in_shape)
    bad = bad & act
    allb = (bad | ~act).all(axis=axes, keepdims=True) & act.any(axis=axes, keepdims=True)
    mixed = bad.any(axis=axes, keepdims=True) & ~allb
    if mixed.any():
        hit = np.broadcast_to(mixed, in_shape) & bad
        report([(b, t, line) for b, t, line in poison
                 if (a := _align(b, in_shape)) is not None and (a & hit).any()])
    if out is None or not allb.any():
        return
    _place_groups(out, allb, poison)


def _place_groups(out, groups: np.ndarray, poison: list) -> None:
    """Put per-group flags (the input shape with reduced axes kept as 1) into the output's shape."""
    shape = tuple(out.shape)
    g = groups
    if g.size == int(np.prod(shape)):
        place(out, g.reshape(shape), poison)
        return
    try:
        place(out, np.broadcast_to(g, shape), poison)
        return
    except ValueError:
        pass
    if shape and g.shape and g.shape[0] == shape[0]:  # e.g. bn_stats: [P, F] -> [P, 6]
        flat = g.reshape(g.shape[0], -1)
        rows = flat.all(axis=1)
        if (flat.any(axis=1) == rows).all():
            place(out, np.broadcast_to(rows.reshape((shape[0],) + (1,) * (len(shape) - 1)), shape), poison)
            return
    report(poison, untracked=True)  # the output's layout does not map back onto the groups: say so


def free_axes(shape) -> tuple[int, ...]:
    return tuple(range(1, len(shape))) if len(shape) > 1 else (0,)


def transpose(out, poison: list, in_shape: tuple) -> None:
    """out = in.reshape(P, -1).T: a permutation, each output element is one input element."""
    bad, unplaced = union(poison, tuple(in_shape))
    report(unplaced, untracked=True)
    if bad.any():
        P = in_shape[0] if in_shape else 1
        place(out, bad.reshape(P, -1).T.reshape(tuple(out.shape)), poison)


def matmul(out, poison: list, stationary, moving, K: int) -> None:
    """out[m, n] = sum_k s[k, m] * mv[k, n]: unwritten when every product is, reported when some are."""
    bs, us = union(poison, tuple(stationary.shape), (stationary,))
    bm, um = union(poison, tuple(moving.shape), (moving,))
    report(us + um, untracked=True)
    if not (bs.any() or bm.any()):
        return
    gs = (~bs.reshape(K, -1)).astype(np.float32)
    gm = (~bm.reshape(K, -1)).astype(np.float32)
    clean = gs.T @ gm  # number of k whose product reads only written values
    allb = clean == 0
    mixed = (clean > 0) & (clean < K)
    if mixed.any():
        report([e for e in poison if e[1] is stationary or e[1] is moving])
    if out is not None and allb.any():
        place(out, allb.reshape(tuple(out.shape)) if allb.size == out.size else allb, poison)


def select(out, poison: list, cond: np.ndarray, on_true, on_false) -> None:
    """where(cond, t, f): an output position reads only the branch the predicate picks."""
    shape = tuple(out.shape)
    pos = np.zeros(shape, bool)
    c = np.broadcast_to(np.asarray(cond, bool), shape)
    for e in poison:
        b = _align(e[0], shape)
        if b is None:
            report([e], untracked=True)
            continue
        if e[1] is on_true:
            b = b & c
        elif e[1] is on_false:
            b = b & ~c
        pos |= b
    place(out, pos, poison)


def carry(dst, value, m=None, line=None) -> None:
    """A fresh op result bound into `dst` (`y[...] = nl.exp(x)`, `psum += nl.matmul(...)`): the positions it
    left unwritten stay unwritten in dst (positions outside its mask `m` keep dst's own state)."""
    st = value.st
    if st.all_written or st.written is None or value.fancy is not None:
        return
    bad = ~st.written
    if bad.shape != tuple(value.shape):
        return
    if m is not None and np.shape(m) == bad.shape:
        bad = bad & m
    a = _align(bad, tuple(dst.shape))
    if a is None or not a.any():
        return
    if not mark_unwritten(dst, a):
        report_uninitialized(bad, value, line, untracked=True)
