"""Fold C constant expressions (`#define` bodies, constexpr initialisers, array sizes).

The text is turned into a Python expression and evaluated on its AST with C semantics where they
differ (integer division truncates toward zero, `%` keeps the dividend's sign). Anything unknown
yields None: callers keep the source text as a symbol.
"""

from __future__ import annotations

import ast
import math
import re
from functools import lru_cache

from .cuda_model import CUDA_TYPE_BYTES

Number = int | float

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_NUMBER = re.compile(r"(?<![\w.])(0[xX][0-9a-fA-F]+|\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?)([uUlLfF]*)(?!\w)")
_SIZEOF = re.compile(r"\bsizeof\s*\(\s*([A-Za-z_][\w ]*?)\s*\)")
_CAST = re.compile(r"\(\s*(?:const\s+)?(?:unsigned\s+|signed\s+)?(?:int|long|long long|short|float|double|size_t|int64_t|int32_t|uint32_t|uint64_t|unsigned)\s*\)")
_CXX_CAST = re.compile(r"\bstatic_cast\s*<[^<>]*>\s*")
_MAX_TEXT = 400


class FunctionMacro:
    __slots__ = ("params", "body")

    def __init__(self, params: list[str], body: str):
        self.params = params
        self.body = body


def _to_python(text: str) -> str | None:
    text = _COMMENT.sub(" ", text).strip()
    if not text or len(text) > _MAX_TEXT or "?" in text or "\\" in text or '"' in text:
        return None
    text = _SIZEOF.sub(lambda m: str(CUDA_TYPE_BYTES.get(" ".join(m.group(1).split()), "__unknown__")), text)
    text = _CXX_CAST.sub("", text)
    text = _CAST.sub(" ", text)
    text = _NUMBER.sub(lambda m: _number(m.group(1), m.group(2)), text)
    text = text.replace("&&", " and ").replace("||", " or ")
    text = re.sub(r"!(?!=)", " not ", text)
    return text.strip()


def _number(digits: str, suffix: str) -> str:
    if digits.lower().startswith("0x"):
        return str(int(digits, 16))
    if "f" in suffix.lower() and "." not in digits and "e" not in digits.lower():
        return digits + ".0"
    if len(digits) > 1 and digits.startswith("0") and digits.isdigit():
        return str(int(digits, 8))
    return digits


def fold(text: str, env: dict[str, Number], macros: dict[str, FunctionMacro] | None = None,
         _depth: int = 0) -> Number | None:
    """Value of a C constant expression, or None when it is not knowable from `env`."""
    text = text.strip()
    if text.isdigit():
        return int(text, 8) if len(text) > 1 and text[0] == "0" else int(text)
    if text.isidentifier():
        return env.get(text)
    tree = _compile(text)
    if tree is None:
        return None
    try:
        return _eval(tree, env, macros or {}, _depth)
    except (_Unknown, ArithmeticError, ValueError, TypeError, RecursionError, OverflowError):
        return None


@lru_cache(maxsize=4096)
def _compile(text: str) -> ast.AST | None:
    py = _to_python(text)
    if py is None:
        return None
    try:
        return ast.parse(py, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


class _Unknown(Exception):
    pass


def _cdiv(a: Number, b: Number) -> Number:
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return a / b


def _cmod(a: Number, b: Number) -> Number:
    if isinstance(a, int) and isinstance(b, int):
        return int(math.fmod(a, b))
    return math.fmod(a, b)


_BIN = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: _cdiv, ast.Mod: _cmod, ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
    ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b,
}
_CMP = {
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
}
_FUNCS = {"min": min, "max": max, "std::min": min, "std::max": max}


def _eval(node: ast.AST, env: dict[str, Number], macros: dict[str, FunctionMacro], depth: int) -> Number:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise _Unknown(node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
        a = _eval(node.left, env, macros, depth)
        b = _eval(node.right, env, macros, depth)
        if isinstance(node.op, ast.LShift) and (not isinstance(b, int) or b > 64):
            raise _Unknown("shift")
        if isinstance(node.op, (ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor)) and not (
                isinstance(a, int) and isinstance(b, int)):
            raise _Unknown("bitop")
        return _BIN[type(node.op)](a, b)
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, env, macros, depth)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.Invert) and isinstance(v, int):
            return ~v
        if isinstance(node.op, ast.Not):
            return int(not v)
        raise _Unknown("unary")
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP:
        return int(_CMP[type(node.ops[0])](_eval(node.left, env, macros, depth),
                                           _eval(node.comparators[0], env, macros, depth)))
    if isinstance(node, ast.BoolOp):
        vals = [_eval(v, env, macros, depth) for v in node.values]
        return int(all(vals) if isinstance(node.op, ast.And) else any(vals))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        args = [_eval(a, env, macros, depth) for a in node.args]
        fn = _FUNCS.get(node.func.id)
        if fn is not None and args:
            return fn(*args)
        macro = macros.get(node.func.id)
        if macro is not None and len(macro.params) == len(args) and depth < 8:
            local = dict(env)
            local.update(zip(macro.params, args))
            value = fold(macro.body, local, macros, depth + 1)
            if value is None:
                raise _Unknown(node.func.id)
            return value
    raise _Unknown(type(node).__name__)
