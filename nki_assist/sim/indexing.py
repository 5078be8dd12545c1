"""Legacy index expressions (`nl.arange`, `nl.mgrid`), masks and `nl.ds` dynamic slices.

An `Idx` is an affine expression `const + sum(coef * i_axis)` over aranges that each occupy one axis of a
broadcast space (`nl.arange(128)[:, None]` is axis 0 of 2). Comparisons give a `Mask` (a boolean array
in that space, combined with `&`, `|`, `~`). Non-affine arithmetic (`//`, `%`) materialises the values.
"""

from __future__ import annotations

import itertools
import operator

import numpy as np

_uid = itertools.count(1)


class Idx:
    """Affine index expression; `terms` is a tuple of (coef, n, pos, ndim)."""

    __slots__ = ("const", "terms", "ndim", "_arr", "_cache", "space")

    def __init__(self, const: int, terms: tuple, ndim: int, arr: np.ndarray | None = None, space=None):
        self.const = const
        self.terms = terms
        self.ndim = ndim
        self._arr = arr  # set only for a materialized (non-affine) expression
        self._cache = None  # values of an affine one (computing them must not make it non-affine)
        self.space = space  # the full grid shape when built from nl.mgrid (iota fills the whole grid)

    # -- construction ------------------------------------------------------------------------------
    @staticmethod
    def arange(start: int, stop: int | None = None, step: int = 1) -> "Idx":
        if stop is None:
            start, stop = 0, start
        n = max(0, -(-(stop - start) // step))
        return Idx(start, ((step, n, 0, 1),), 1)

    def __getitem__(self, key) -> "Idx":
        """`[:, None]` / `[None, :]` place a 1-D arange in a broadcast space."""
        if not isinstance(key, tuple):
            key = (key,)
        if self.ndim != 1 or self._arr is not None:
            raise TypeError("only a 1-D nl.arange can be placed with [:, None] / [None, :]")
        slots = [i for i, k in enumerate(key) if isinstance(k, slice)]
        if len(slots) != 1 or any(k is not None and not isinstance(k, slice) for k in key):
            raise TypeError("index an nl.arange with one ':' and Nones, e.g. nl.arange(128)[:, None]")
        pos = slots[0]
        return Idx(self.const, tuple((c, n, pos, len(key)) for c, n, _, _ in self.terms), len(key))

    @property
    def shape(self) -> tuple[int, ...]:
        if self._arr is not None:
            return self._arr.shape
        dims = [1] * self.ndim
        for _, n, pos, _ in self.terms:
            dims[pos] = n
        return tuple(dims)

    def values(self) -> np.ndarray:
        if self._arr is not None:
            return self._arr
        if self._cache is not None:
            return self._cache
        out = np.full(self.shape, self.const, dtype=np.int64)
        for coef, n, pos, nd in self.terms:
            shp = [1] * nd
            shp[pos] = n
            out = out + coef * np.arange(n, dtype=np.int64).reshape(shp)
        self._cache = out
        return out

    def single_axis(self):
        """(start, step, n, pos) when the expression is `start + step * i` over one axis, step > 0."""
        if self._arr is not None or len(self.terms) != 1:
            return None
        coef, n, pos, _ = self.terms[0]
        if coef <= 0:
            return None
        return self.const, coef, n, pos

    # -- arithmetic --------------------------------------------------------------------------------
    def _combine(self, other, sign: int) -> "Idx":
        if isinstance(other, Idx):
            space = self.space or other.space
            if self._arr is None and other._arr is None and self.ndim == other.ndim:
                terms = self.terms + tuple((sign * c, n, p, d) for c, n, p, d in other.terms)
                return Idx(self.const + sign * other.const, terms, self.ndim, space=space)
            return _materialized(self.values() + sign * other.values(), space)
        v = _as_int(other)
        if self._arr is not None:
            return _materialized(self._arr + sign * v, self.space)
        return Idx(self.const + sign * v, self.terms, self.ndim, space=self.space)

    def __add__(self, other):
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other):
        return self._combine(other, -1)

    def __rsub__(self, other):
        return (-self)._combine(other, 1)

    def __neg__(self):
        return self * -1

    def __mul__(self, other):
        if isinstance(other, Idx):
            return _materialized(self.values() * other.values(), self.space or other.space)
        v = _as_int(other)
        if self._arr is not None:
            return _materialized(self._arr * v, self.space)
        return Idx(self.const * v, tuple((c * v, n, p, d) for c, n, p, d in self.terms), self.ndim,
                   space=self.space)

    __rmul__ = __mul__

    def __floordiv__(self, other):
        return _materialized(self.values() // _vals(other), self.space)

    def __mod__(self, other):
        return _materialized(self.values() % _vals(other), self.space)

    # -- predicates --------------------------------------------------------------------------------
    def _cmp(self, other, op) -> "Mask":
        return Mask(op(self.values(), _vals(other)))

    def __lt__(self, o):
        return self._cmp(o, operator.lt)

    def __le__(self, o):
        return self._cmp(o, operator.le)

    def __gt__(self, o):
        return self._cmp(o, operator.gt)

    def __ge__(self, o):
        return self._cmp(o, operator.ge)

    def __eq__(self, o):  # noqa: D105 - NKI predicates use ==
        return self._cmp(o, operator.eq)

    def __ne__(self, o):
        return self._cmp(o, operator.ne)

    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError("an nl.arange expression has no truth value: control flow cannot depend on it "
                        "(err_control_flow_condition_depending_on_arange); use mask=")

    def __repr__(self):
        return f"Idx(shape={self.shape})"


def _materialized(arr, space=None) -> Idx:
    arr = np.asarray(arr)
    return Idx(0, (), arr.ndim, arr, space)


def _as_int(v) -> int:
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"index expressions combine only with integers, got {type(v).__name__}") from None


def _vals(v):
    return v.values() if isinstance(v, Idx) else v


class Mask:
    """A legacy `mask=` predicate: a boolean array in the broadcast space of its aranges."""

    __slots__ = ("arr",)

    def __init__(self, arr):
        self.arr = np.asarray(arr, dtype=bool)

    def __and__(self, o):
        return Mask(self.arr & _mask_arr(o))

    __rand__ = __and__

    def __or__(self, o):
        return Mask(self.arr | _mask_arr(o))

    __ror__ = __or__

    def __invert__(self):
        return Mask(~self.arr)

    def __bool__(self):
        raise TypeError("a mask has no truth value; combine predicates with & and |, not and/or")


def _mask_arr(o):
    if isinstance(o, Mask):
        return o.arr
    if isinstance(o, (bool, np.bool_)):
        return np.bool_(o)
    raise TypeError("masks combine only with masks")


class Grid(tuple):
    """What `nl.mgrid[...]` returns: unpacks like a tuple of Idx, and `.p` / `.x` / `.y` / `.z` name the
    partition axis and the free axes (`i = nl.mgrid[0:128, 0:512]; t[i.p, i.x]`)."""

    p = property(lambda self: self[0])
    x = property(lambda self: self[1])
    y = property(lambda self: self[2])
    z = property(lambda self: self[3])


class MGrid:
    """`nl.mgrid[0:128, 0:512]` -> one Idx per axis."""

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        nd = len(key)
        out = []
        sizes = []
        for pos, s in enumerate(key):
            if not isinstance(s, slice):
                raise TypeError("nl.mgrid takes slices, e.g. nl.mgrid[0:128, 0:512]")
            start = s.start or 0
            step = s.step or 1
            n = max(0, -(-(s.stop - start) // step))
            sizes.append(n)
            out.append(Idx(start, ((step, n, pos, nd),), nd))
        for ix in out:
            ix.space = tuple(sizes)
        return Grid(out) if nd > 1 else out[0]


class DynSlice:
    """`nl.ds(start, size)`: a slice of `size` elements from `start`."""

    __slots__ = ("start", "size", "step")

    def __init__(self, start, size, step=1):
        self.start = operator.index(start)
        self.size = operator.index(size)
        self.step = operator.index(step)

    def as_slice(self) -> slice:
        return slice(self.start, self.start + self.size * self.step, self.step)


def mask_for(mask, shape: tuple[int, ...]) -> np.ndarray | None:
    """Broadcast a mask (Mask, bool array, None) to an operand shape; None = everything active."""
    if mask is None:
        return None
    arr = mask.arr if isinstance(mask, Mask) else np.asarray(mask, dtype=bool)
    if arr.shape == shape:
        return arr
    if arr.ndim > len(shape):  # drop trailing singleton axes an arange space may carry
        arr = arr.reshape([d for d in arr.shape if d != 1] or [1])
    return np.broadcast_to(arr, shape)
