"""Engine arithmetic in fp32: ALU operators, activation functions, reductions.

Each entry is one numpy expression. Differences from the hardware are noted where they exist; the
ScalarE piece-wise polynomial approximations are *not* modelled (functions are exact fp32 numpy),
see docs/simulator.md "Fidelity gaps".
"""

from __future__ import annotations

import numpy as np

from .errors import UnsupportedAPI

F32 = np.float32


def erf(x: np.ndarray) -> np.ndarray:
    """erf in fp32 via float64 Abramowitz-Stegun 7.1.26 refined (max abs error ~1.2e-7; numpy has no erf)."""
    x64 = np.asarray(x, np.float64)
    s = np.sign(x64)
    a = np.abs(x64)
    # W. J. Cody-style rational approximation of erfc via exp(-x^2) * poly (Numerical Recipes erfcc).
    t = 1.0 / (1.0 + 0.5 * a)
    y = t * np.exp(-a * a - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
    return (s * (1.0 - y)).astype(F32)


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-x))).astype(F32)


def _gelu(x):
    return (0.5 * x * (1.0 + erf(x * F32(0.7071067811865476)))).astype(F32)


_GELU_C = F32(0.7978845608028654)  # sqrt(2/pi)


def _gelu_tanh(x):
    return (0.5 * x * (1.0 + np.tanh(_GELU_C * (x + F32(0.044715) * x * x * x)))).astype(F32)


def _gelu_dx(x):
    cdf = 0.5 * (1.0 + erf(x * F32(0.7071067811865476)))
    pdf = np.exp(-0.5 * x * x) * F32(0.3989422804014327)
    return (cdf + x * pdf).astype(F32)


def _silu_dx(x):
    s = _sigmoid(x)
    return (s * (1 + x * (1 - s))).astype(F32)


def _softplus(x):
    return np.logaddexp(F32(0), x).astype(F32)


def _mish(x):
    return (x * np.tanh(_softplus(x))).astype(F32)


def _rsqrt(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return (F32(1) / np.sqrt(x)).astype(F32)


def _recip(x):
    with np.errstate(divide="ignore"):
        return (F32(1) / x).astype(F32)


def _log(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x)


def _sqrt(x):
    with np.errstate(invalid="ignore"):
        return np.sqrt(x)


def _exp(x):
    with np.errstate(over="ignore"):
        return np.exp(x)


UNARY = {
    "exp": _exp, "log": _log, "tanh": np.tanh, "sigmoid": _sigmoid, "relu": lambda x: np.maximum(x, F32(0)),
    "gelu": _gelu, "gelu_apprx_tanh": _gelu_tanh, "gelu_dx": _gelu_dx, "silu": lambda x: x * _sigmoid(x),
    "silu_dx": _silu_dx, "softplus": _softplus, "mish": _mish, "erf": erf,
    "erf_dx": lambda x: (F32(1.1283791670955126) * np.exp(-x * x)).astype(F32),
    "rsqrt": _rsqrt, "sqrt": _sqrt, "reciprocal": _recip, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "arctan": np.arctan, "abs": np.abs, "negative": np.negative, "sign": np.sign, "square": np.square,
    "ceil": np.ceil, "floor": np.floor, "trunc": np.trunc, "copy": lambda x: np.array(x, copy=True),
    "identity": lambda x: np.array(x, copy=True), "exp2": np.exp2, "log2": np.log2,
    "logical_not": lambda x: (x == 0).astype(F32), "gelu_apprx_sigmoid": lambda x: x * _sigmoid(F32(1.702) * x),
}


def _div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(a, b)


def _int_only(fn, name):
    def op(a, b):
        a = np.asarray(a)
        b = np.asarray(b)
        if a.dtype.kind == "f" or b.dtype.kind == "f":
            raise TypeError(f"{name} needs integer operands (bitvec ops do not cast)")
        return fn(a, b)
    return op


class _Ops(dict):
    """An op table whose misses say which op (a tool limit naming it), never a bare KeyError."""

    def __init__(self, what: str, table: dict, fallback=None):
        super().__init__(table)
        self.what = what
        self.fallback = fallback

    def __missing__(self, name):
        fb = self.fallback(name) if self.fallback else None
        if fb is None:
            raise UnsupportedAPI(f"{name!r} as {self.what}", "the simulator has no model of this ALU op",
                                 limit=True)
        self[name] = fb
        return fb


def _unary_as_binary(name):
    """An ALU op that reads one input (abs, square, exp, ...) given in a two-operand slot (`op0=nl.abs`): it
    applies to the first input and the other operand is ignored, as the ISA's single-input ALU ops do."""
    f = UNARY.get(name)
    return None if f is None else (lambda a, b: f(np.asarray(a)))


BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": _div,
    "maximum": np.maximum, "minimum": np.minimum, "power": np.power, "fmod": np.fmod, "mod": np.mod,
    "equal": lambda a, b: (a == b).astype(F32), "not_equal": lambda a, b: (a != b).astype(F32),
    "greater": lambda a, b: (a > b).astype(F32), "greater_equal": lambda a, b: (a >= b).astype(F32),
    "less": lambda a, b: (a < b).astype(F32), "less_equal": lambda a, b: (a <= b).astype(F32),
    "logical_and": lambda a, b: ((a != 0) & (b != 0)).astype(F32),
    "logical_or": lambda a, b: ((a != 0) | (b != 0)).astype(F32),
    "logical_xor": lambda a, b: ((a != 0) ^ (b != 0)).astype(F32),
    "bitwise_and": _int_only(np.bitwise_and, "bitwise_and"), "bitwise_or": _int_only(np.bitwise_or, "bitwise_or"),
    "bitwise_xor": _int_only(np.bitwise_xor, "bitwise_xor"),
    "left_shift": _int_only(np.left_shift, "left_shift"), "right_shift": _int_only(np.right_shift, "right_shift"),
    "rsqrt": lambda a, b: _rsqrt(a),  # used as tensor_scalar op with a dummy operand in some kernels
}
BINARY = _Ops("a two-operand ALU op", BINARY, _unary_as_binary)

REDUCE = {
    "add": np.sum, "maximum": np.max, "minimum": np.min, "multiply": np.prod,
    "bitwise_and": np.bitwise_and.reduce, "bitwise_or": np.bitwise_or.reduce,
    "bitwise_xor": np.bitwise_xor.reduce,
}
REDUCE = _Ops("a reduction op", REDUCE)

# Names under which kernels pass numpy callables as operators.
NUMPY_NAMES = {
    np.add: "add", np.subtract: "subtract", np.multiply: "multiply", np.divide: "divide",
    np.true_divide: "divide", np.maximum: "maximum", np.minimum: "minimum", np.power: "power",
    np.max: "maximum", np.amax: "maximum", np.min: "minimum", np.amin: "minimum", np.sum: "add",
    np.prod: "multiply", np.exp: "exp", np.tanh: "tanh", np.log: "log", np.sqrt: "sqrt",
    np.abs: "abs", np.negative: "negative", np.sin: "sin", np.cos: "cos", np.square: "square",
    np.bitwise_and: "bitwise_and", np.bitwise_or: "bitwise_or", np.bitwise_xor: "bitwise_xor",
    np.equal: "equal", np.not_equal: "not_equal", np.greater: "greater", np.greater_equal: "greater_equal",
    np.less: "less", np.less_equal: "less_equal", np.fmod: "fmod", np.mod: "mod",
    np.left_shift: "left_shift", np.right_shift: "right_shift",
}


def f32(a) -> np.ndarray:
    a = np.asarray(a)
    return a if a.dtype == F32 else a.astype(F32)
