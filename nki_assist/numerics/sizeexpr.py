"""Arithmetic over size symbols for launch descriptions (`cdiv(N, 64)`, `M * N`, `rows // 4 + 1`).

Parsed with `ast` and evaluated by walking a small allow-list of nodes: numbers, names bound by the
caller, + - * / // % **, unary minus, and the functions below. Nothing is ever passed to eval();
an expression is at most 200 characters and 32 levels deep, and integer results are bounded, so a
spec cannot make the parent compute for long or allocate much.
"""

from __future__ import annotations

import ast
import math
from typing import Callable

from ..parse import intexpr

MAX_CHARS = 200
MAX_DEPTH = 32
MAX_MAGNITUDE = 2**63  # larger values are no launch dimension, buffer size or kernel scalar


class ExprError(ValueError):
    """The expression is not allowed or cannot be evaluated; the message says why."""


def _cdiv(a: float, b: float) -> int:
    if b == 0:
        raise ExprError("cdiv by zero")
    return -(-int(a) // int(b))


FUNCTIONS: dict[str, tuple[Callable, int]] = {  # name -> (function, arity; -1 = 1 or more)
    "cdiv": (_cdiv, 2), "ceil": (lambda x: math.ceil(x), 1), "floor": (lambda x: math.floor(x), 1),
    "min": (min, -1), "max": (max, -1), "int": (lambda x: int(x), 1), "float": (lambda x: float(x), 1),
    "sqrt": (lambda x: math.sqrt(x), 1), "abs": (abs, 1),
}
_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
           ast.Pow: lambda a, b: a ** b}


def parse(text: str) -> ast.expr:
    """The checked syntax tree of `text`; ExprError when it uses anything outside the allow-list."""
    if not isinstance(text, str):
        raise ExprError(f"{text!r} is not an expression string")
    if len(text) > MAX_CHARS:
        raise ExprError(f"expression has {len(text)} characters; at most {MAX_CHARS}")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ExprError(f"{text!r} does not parse: {getattr(exc, 'msg', exc)}") from None
    _check(tree, 0)
    return tree


def _check(node: ast.AST, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ExprError(f"expression nests deeper than {MAX_DEPTH} levels")
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExprError(f"{node.value!r}: only numbers are allowed as constants")
    elif isinstance(node, ast.Name):
        pass
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINOPS:
            raise ExprError(f"operator {type(node.op).__name__} is not allowed (use + - * / // % **)")
        _check(node.left, depth + 1)
        _check(node.right, depth + 1)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        _check(node.operand, depth + 1)
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
            raise ExprError(f"only these functions are allowed: {', '.join(FUNCTIONS)}")
        arity = FUNCTIONS[node.func.id][1]
        if (arity >= 0 and len(node.args) != arity) or not node.args:
            raise ExprError(f"{node.func.id}() takes {arity if arity >= 0 else '1 or more'} argument(s)")
        for a in node.args:
            _check(a, depth + 1)
    else:
        raise ExprError(f"{type(node).__name__} is not allowed in a size expression")


def names(text: str) -> set[str]:
    """The symbols an expression reads."""
    tree = parse(text)
    funcs = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in funcs}


def evaluate(expr: int | float | str, env: dict[str, int | float]) -> int | float:
    """The value of `expr` (a number or an expression string) with the symbols of `env`."""
    if isinstance(expr, bool):
        raise ExprError(f"{expr!r} is not a number or an expression")
    if isinstance(expr, (int, float)):
        return expr
    return _eval(parse(expr), env)


def _bounded(v: int | float) -> int | float:
    if isinstance(v, float) and not math.isfinite(v):
        raise ExprError("the value is not finite")
    if abs(v) > MAX_MAGNITUDE:
        raise ExprError(f"the value {v:.3g} is out of range")
    return v


def _unknown_symbol(node: ast.Name, env: dict[str, int | float]) -> int | float:
    if node.id not in env:
        raise ExprError(f"unknown symbol {node.id!r} (known: {', '.join(sorted(env)) or 'none'})")
    return env[node.id]


def _check_operands(node: ast.BinOp, a: int | float, b: int | float) -> None:
    if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and b == 0:
        raise ExprError("division by zero")
    if isinstance(node.op, ast.Pow) and (abs(b) > 64 or abs(a) > MAX_MAGNITUDE):
        raise ExprError("exponent out of range")


def _function_failed(name: str, exc: Exception) -> int | float:
    if isinstance(exc, ExprError):
        raise exc
    raise ExprError(f"{name}(): {exc}") from None


# parse() has already refused anything outside the allow-list; this says how the allowed nodes evaluate
_SPEC = intexpr.Arith(binops=_BINOPS, functions={name: fn for name, (fn, _) in FUNCTIONS.items()},
                      name=_unknown_symbol, check=_check_operands, result=_bounded, call_failed=_function_failed)


def _eval(node: ast.expr, env: dict[str, int | float]) -> int | float:
    return intexpr.value(node, env, _SPEC)


def evaluate_int(expr: int | float | str, env: dict[str, int | float]) -> int:
    """`evaluate`, requiring a whole number (a launch dimension, a shape, a byte count)."""
    v = evaluate(expr, env)
    if isinstance(v, float):
        if not v.is_integer():
            raise ExprError(f"{expr!r} = {v:g} is not a whole number (use cdiv(a, b) or // for integer division)")
        v = int(v)
    return v
