"""The one evaluator of integer size expressions over a syntax tree (`M // TILE_M`, `cdiv(N, 64)`,
`nl.tile_size.pmax * 2`, `K % 128 == 0`).

Its callers differ only in what they allow and how they fail, so each describes that once as an `Arith`:
  - numerics/sizeexpr.py    spec expressions: an allow-list, bounded results, errors that say why (ExprError)
  - project/index.py        module constants folded while indexing: lenient, None when unknown (`fold`)
  - numerics/distinct_size  the kernel's own dimension arithmetic, comparisons and asserts included
An expression is walked node by node; nothing is ever passed to eval().
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable


class Unknown(Exception):
    """The expression reads something this evaluation does not know or allow; the message says what."""


BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b, ast.Div: lambda a, b: a / b,
}
COMPARES: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
}


def _plain_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


@dataclass(frozen=True)
class Arith:
    """What one kind of evaluation allows, and how it answers what it does not know."""

    binops: dict[type, Callable[[Any, Any], Any]] = field(default_factory=lambda: dict(BINOPS))
    constants: tuple[type, ...] = (int, float)  # literal types taken as they are (bools never count as numbers)
    functions: dict[str, Callable[..., Any]] = field(default_factory=dict)
    logic: bool = False  # comparisons, and/or/not
    unary_plus: bool = True  # `+x`
    numbers_only: bool = False  # an operator on anything but plain numbers is unknown (not a TypeError)
    max_depth: int | None = None  # deeper is unknown
    # name -> value; raise Unknown (or the caller's own error) when the name is not known
    name: Callable[[ast.Name, dict[str, Any]], Any] = lambda node, env: _env_name(node, env)
    attribute: Callable[[ast.Attribute], Any] | None = None  # e.g. nl.tile_size.pmax; None: unknown
    check: Callable[[ast.BinOp, Any, Any], None] | None = None  # before an operator applies (zero divisors)
    result: Callable[[Any], Any] = lambda v: v  # every operator's and function's result passes here (bounds)
    call_failed: Callable[[str, Exception], Any] | None = None  # a function raised: re-raise as the caller's error


def _env_name(node: ast.Name, env: dict[str, Any]) -> Any:
    if node.id in env:
        return env[node.id]
    raise Unknown(node.id)


def value(node: ast.AST, env: dict[str, Any], arith: Arith, depth: int = 0) -> Any:
    """The value of `node` with the names of `env`; raises Unknown (or what `arith`'s hooks raise)."""
    if arith.max_depth is not None and depth > arith.max_depth:
        raise Unknown("too deep")
    if isinstance(node, ast.Constant):
        if isinstance(node.value, arith.constants) and (not isinstance(node.value, bool) or bool in arith.constants):
            return node.value
        raise Unknown(repr(node.value))
    if isinstance(node, ast.Name):
        return arith.name(node, env)
    if isinstance(node, ast.Attribute):
        if arith.attribute is None:
            raise Unknown(type(node).__name__)
        return arith.attribute(node)
    if isinstance(node, ast.UnaryOp) and (isinstance(node.op, ast.USub) or (arith.unary_plus and isinstance(node.op, ast.UAdd))):
        v = value(node.operand, env, arith, depth + 1)
        if arith.numbers_only and not _plain_number(v):
            raise Unknown("not a number")
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in arith.binops:
        a, b = value(node.left, env, arith, depth + 1), value(node.right, env, arith, depth + 1)
        if arith.numbers_only and not (_plain_number(a) and _plain_number(b)):
            raise Unknown("not a number")
        if arith.check is not None:
            arith.check(node, a, b)
        return arith.result(arith.binops[type(node.op)](a, b))
    if arith.logic and isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not value(node.operand, env, arith, depth + 1)
    if arith.logic and isinstance(node, ast.BoolOp):
        vals = [value(v, env, arith, depth + 1) for v in node.values]
        return all(vals) if isinstance(node.op, ast.And) else any(vals)
    if arith.logic and isinstance(node, ast.Compare) and all(type(o) in COMPARES for o in node.ops):
        left = value(node.left, env, arith, depth + 1)
        for op, right in zip(node.ops, node.comparators):
            r = value(right, env, arith, depth + 1)
            if not COMPARES[type(op)](left, r):
                return False
            left = r
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in arith.functions \
            and node.args and not node.keywords:
        args = [value(a, env, arith, depth + 1) for a in node.args]
        try:
            return arith.result(arith.functions[node.func.id](*args))
        except (ValueError, OverflowError, TypeError) as exc:
            if arith.call_failed is None:
                raise
            return arith.call_failed(node.func.id, exc)
    raise Unknown(type(node).__name__)
