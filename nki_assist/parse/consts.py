"""Constant propagation over tree-sitter Python expressions.

Values are Python ints/floats, `Lin` (a linear form over unknown symbols, so that slice extents like
`(i+1)*128 - i*128` still fold to 128), `ParDim`, `Tup`, or `Ref` (a dotted name such as
`nl.bfloat16`). `None` means "not knowable". Unknown names stay symbols, never guesses.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable

# nl.tile_size.* (tiling-overview.rst; psum_fmax is the pre-0.4 name of psum_bank_fmax)
TILE_SIZE = {
    "pmax": 128,
    "gemm_stationary_fmax": 128,
    "gemm_moving_fmax": 512,
    "psum_fmax": 512,
    "psum_bank_fmax": 512,
    "psum_num_banks": 8,
    "bn_stats_fmax": 512,
}

DTYPES = (
    "float32", "tfloat32", "float32r", "bfloat16", "float16", "float8_e4m3", "float8_e4m3fn",
    "float8_e5m2", "float8_e8m0fnu", "int32", "uint32", "int16", "uint16", "int8", "uint8",
    "bool_", "float8_e5m2_x4", "float8_e4m3fn_x4", "float4_e2m1fn_x4",
)
_DTYPE_ALIASES = {"float": "float32", "fp32": "float32", "bf16": "bfloat16", "fp16": "float16",
                  "half": "float16", "single": "float32", "bool": "bool_"}
BUFFERS = {"sbuf": "sbuf", "psum": "psum", "hbm": "hbm", "shared_hbm": "shared_hbm",
           "private_hbm": "private_hbm"}


@dataclass(frozen=True)
class Lin:
    """sum(coef * term) + const, terms are symbol names (or opaque sub-expressions as text)."""

    terms: tuple[tuple[str, Any], ...]
    const: Any = 0

    @staticmethod
    def sym(name: str) -> "Lin":
        return Lin(((name, 1),), 0)

    def __str__(self) -> str:
        if self.single is not None:
            return self.single
        parts = []
        for t, c in self.terms:
            t = t if t.isidentifier() else f"({t})"
            parts.append(t if c == 1 else f"{c}*{t}")
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts).replace("+ -", "- ")

    @property
    def single(self) -> str | None:
        """The symbol name when the form is exactly one bare symbol."""
        if len(self.terms) == 1 and self.terms[0][1] == 1 and self.const == 0:
            return self.terms[0][0]
        return None


@dataclass(frozen=True)
class ParDim:
    value: Any


@dataclass(frozen=True)
class Tup:
    items: tuple


@dataclass(frozen=True)
class Ref:
    """A dotted reference that is not a number (nl.bfloat16, nl.sbuf, nl.exp, a.dtype)."""

    dotted: str


@dataclass(frozen=True)
class FloorDiv:
    """Metadata for an opaque term `num // den` with a symbolic numerator."""

    num: Any
    den: Any


def lin_key(lin: Lin) -> str:
    """A stable key for a linear form (assert facts about `LX - 128` as a whole)."""
    return "lin:" + str(Lin(tuple(sorted(lin.terms)), lin.const))


def _lin(v: Any) -> Lin | None:
    if isinstance(v, Lin):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return Lin((), v)
    return None


def _norm(terms: dict[str, Any], const: Any) -> Any:
    if len(terms) <= 1:  # the common case: no sort needed
        for t, c in terms.items():
            return Lin(((t, c),), const) if c != 0 else const
        return const
    items = tuple(sorted((t, c) for t, c in terms.items() if c != 0))
    if not items:
        return const
    return Lin(items, const)


def add(a: Any, b: Any, sign: int = 1) -> Any:
    la, lb = _lin(a), _lin(b)
    if la is None or lb is None:
        return None
    terms = dict(la.terms)
    for t, c in lb.terms:
        terms[t] = terms.get(t, 0) + sign * c
    return _norm(terms, la.const + sign * lb.const)


def mul(a: Any, b: Any) -> Any:
    if is_num(a) and is_num(b):
        return a * b
    if is_num(b):
        a, b = b, a
    if is_num(a) and isinstance(b, Lin):
        return _norm({t: c * a for t, c in b.terms}, b.const * a)
    if isinstance(a, Lin) and isinstance(b, Lin):
        return Lin.sym(f"{a} * {b}")
    return None


def is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def display(v: Any) -> int | str:
    """Shape element for facts: an int when known, else the symbol text."""
    if isinstance(v, ParDim):
        v = v.value
    i = as_int(v)
    if i is not None:
        return i
    if isinstance(v, Lin):
        return str(v)
    return "?" if v is None else str(v)


def canonical_dtype(v: Any) -> str | None:
    if isinstance(v, Ref):
        name = v.dotted.rsplit(".", 1)[-1]
    elif isinstance(v, str):
        name = v
    else:
        return None
    name = _DTYPE_ALIASES.get(name, name)
    return name if name in DTYPES else None


def canonical_buffer(v: Any) -> str | None:
    if isinstance(v, Ref):
        name = v.dotted.rsplit(".", 1)[-1]
    elif isinstance(v, str):
        name = v.lower()
    else:
        return None
    return BUFFERS.get(name)


@dataclass
class Env:
    """Name bindings visible to folding plus assert-derived facts about symbols."""

    values: dict[str, Any] = field(default_factory=dict)
    parent: "Env | None" = None
    divisors: dict[str, set[int]] = field(default_factory=dict)  # assert K % 128 == 0
    upper: dict[str, int] = field(default_factory=dict)  # assert M <= 128
    floordivs: dict[str, FloorDiv] = field(default_factory=dict)  # opaque term -> num // den

    def lookup(self, name: str) -> Any:
        env: Env | None = self
        while env is not None:
            if name in env.values:
                return env.values[name]
            env = env.parent
        return _MISSING

    def divisible(self, lin: Any, den: int) -> bool:
        """True when asserts prove `lin % den == 0` (the whole form asserted, or every term and the constant)."""
        lin = _lin(lin)
        if lin is None or den == 0:
            return False
        if lin.terms and any(d % den == 0 for d in self._all_divisors(lin_key(lin))):
            return True
        if as_int(lin.const) is None or as_int(lin.const) % den:
            return False
        for t, c in lin.terms:
            ci = as_int(c)
            if ci is not None and ci % den == 0:
                continue
            ds = self._all_divisors(t)
            if not any(d % den == 0 for d in ds):
                return False
        return True

    def _all_divisors(self, sym: str) -> set[int]:
        out: set[int] = set()
        env: Env | None = self
        while env is not None:
            out |= env.divisors.get(sym, set())
            env = env.parent
        return out

    def bound(self, sym: str) -> int | None:
        env: Env | None = self
        while env is not None:
            if sym in env.upper:
                return env.upper[sym]
            env = env.parent
        return None


_MISSING = object()
_PLAIN_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_LITERAL_PART = re.compile(r"(?:^|\.)(?:True|False|None)(?:\.|$)")  # keywords, not identifiers


class Folder:
    """Evaluates expression nodes against an Env. `resolve` maps a dotted name to its module path."""

    def __init__(self, src: bytes, resolve: Callable[[str], str | None]):
        self.src = src
        self.resolve = resolve

    def text(self, node) -> str:
        return self.src[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def dotted(self, node) -> str | None:
        """`a.b.c` for identifier/attribute chains, else None."""
        t = node.type
        if t == "identifier":
            return self.text(node)
        if t != "attribute":
            return None
        s = self.text(node)
        if _PLAIN_DOTTED.fullmatch(s) and not _LITERAL_PART.search(s):
            return s  # the common `nl.load` case: the source text is the chain (no spaces, parens, literals)
        parts = []
        while node.type == "attribute":
            parts.append(self.text(node.child_by_field_name("attribute")))
            node = node.child_by_field_name("object")
        if node.type != "identifier":
            return None
        parts.append(self.text(node))
        return ".".join(reversed(parts))

    def fold(self, node, env: Env) -> Any:
        try:
            return self._fold(node, env, 0)
        except (ZeroDivisionError, OverflowError, ValueError, TypeError, RecursionError):
            return None

    def _fold(self, node, env: Env, depth: int) -> Any:
        if depth > 60:
            return None
        t = node.type
        # most frequent node types first (the branches are mutually exclusive)
        if t == "identifier":
            name = self.text(node)
            v = env.lookup(name)
            if v is not _MISSING:
                return v
            mod = self.resolve(name)
            return Ref(mod) if mod else Lin.sym(name)
        if t == "binary_operator":
            return self._binary(node, env, depth)
        if t == "integer":
            s = self.text(node).replace("_", "").lower()
            return int(s, 0) if not s.endswith(("l", "j")) else None
        if t == "attribute":
            return self._attribute(node, env, depth)
        if t == "float":
            return float(self.text(node).replace("_", ""))
        if t in ("true", "false"):
            return t == "true"
        if t == "string":
            s = self.text(node)
            return s.strip("\"'") if not s.startswith(("f", "b", "r")) else None
        if t == "parenthesized_expression":
            inner = node.named_children
            return self._fold(inner[0], env, depth + 1) if inner else None
        if t == "unary_operator":
            v = self._fold(node.child_by_field_name("argument"), env, depth + 1)
            op = self.text(node.child_by_field_name("operator"))
            if op == "-":
                return mul(-1, v)
            return v if op == "+" else None
        if t in ("tuple", "list", "expression_list"):
            return Tup(tuple(self._fold(c, env, depth + 1) for c in node.named_children))
        if t == "call":
            return self._call(node, env, depth)
        if t == "subscript":
            base = self._fold(node.child_by_field_name("value"), env, depth + 1)
            idx = node.child_by_field_name("subscript")
            if isinstance(base, Tup) and idx is not None:
                i = as_int(self._fold(idx, env, depth + 1))
                if i is not None and -len(base.items) <= i < len(base.items):
                    return base.items[i]
            return None
        if t == "conditional_expression":
            parts = node.named_children
            if len(parts) == 3:
                cond = self._fold(parts[1], env, depth + 1)
                if isinstance(cond, bool):
                    return self._fold(parts[0] if cond else parts[2], env, depth + 1)
            return None
        return None

    def _attribute(self, node, env: Env, depth: int) -> Any:
        dotted = self.dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        mod = self.resolve(head)
        if mod is None:
            v = env.lookup(head)
            if v is not _MISSING and isinstance(v, Tup) and rest == "shape":
                return v
            return Lin.sym(dotted) if rest not in ("dtype", "shape") else Ref(dotted)
        full = f"{mod}.{rest}" if rest else mod
        last = full.rsplit(".", 1)[-1]
        if ".tile_size." in full and last in TILE_SIZE:
            return TILE_SIZE[last]
        return Ref(full)

    def _binary(self, node, env: Env, depth: int) -> Any:
        op = self.text(node.child_by_field_name("operator"))
        a = self._fold(node.child_by_field_name("left"), env, depth + 1)
        b = self._fold(node.child_by_field_name("right"), env, depth + 1)
        if op == "+":
            if isinstance(a, Tup) and isinstance(b, Tup):
                return Tup(a.items + b.items)
            return add(a, b)
        if op == "-":
            return add(a, b, -1)
        if op == "*":
            return mul(a, b)
        if is_num(a) and is_num(b):
            if op == "//":
                return a // b
            if op == "/":
                return a / b
            if op == "%":
                return a % b
            if op == "**":
                return a**b if abs(b) < 64 else None
            if op == "<<":
                return a << b if b < 64 else None
            if op == ">>":
                return a >> b
            return None
        if op == "//" and isinstance(a, Lin) and is_num(b):
            b_int = as_int(b)
            if b_int == 1:
                return a
            if b_int and env.divisible(a, b_int):
                # exact division: keep it linear. A term whose coefficient is not a multiple of the
                # divisor is divisible through its symbol (assert L % 512 == 0): it becomes the opaque
                # symbol `L // 512`, never `(1 // 512) * L` = 0.
                terms: dict[str, Any] = {}
                for t, c in a.terms:
                    ci = as_int(c)
                    if ci is not None and ci % b_int == 0:
                        terms[t] = terms.get(t, 0) + ci // b_int
                    else:
                        q = f"{t if t.isidentifier() else f'({t})'} // {b_int}"
                        terms[q] = terms.get(q, 0) + c
                return _norm(terms, a.const // b_int)
            term = f"{a} // {b}"
            env.floordivs[term] = FloorDiv(a, b)
            return Lin.sym(term)
        if op in ("//", "/", "%") and a is not None and b is not None:
            return Lin.sym(f"{display(a)} {op} {display(b)}")
        return None

    def _call(self, node, env: Env, depth: int) -> Any:
        fn = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        name = self.dotted(fn) if fn is not None else None
        if name is None or args is None:
            return None
        pos = [c for c in args.named_children if c.type != "keyword_argument"]
        head = name.split(".", 1)[0]
        mod = self.resolve(head)
        full = (mod + name[len(head):]) if mod else name
        last = full.rsplit(".", 1)[-1]
        if last == "par_dim" and len(pos) == 1:
            return ParDim(self._fold(pos[0], env, depth + 1))
        if full in ("min", "max") and pos:
            vals = [self._fold(p, env, depth + 1) for p in pos]
            if all(is_num(v) for v in vals):
                return (min if full == "min" else max)(vals)
            # min(M, 128) is at most 128 even when M is a symbol
            nums = [v for v in vals if is_num(v)]
            if full == "min" and nums:
                return Lin.sym(f"min({', '.join(str(display(v)) for v in vals)})")
            return None
        if full in ("int", "abs") and len(pos) == 1:
            v = self._fold(pos[0], env, depth + 1)
            if is_num(v):
                return int(v) if full == "int" else abs(v)
            return v if full == "int" else None
        if full in ("math.ceil", "math.floor") and len(pos) == 1:
            v = self._fold(pos[0], env, depth + 1)
            return (math.ceil if full.endswith("ceil") else math.floor)(v) if is_num(v) else None
        if full == "len" and len(pos) == 1:
            v = self._fold(pos[0], env, depth + 1)
            return len(v.items) if isinstance(v, Tup) else None
        return None


def min_upper(v: Any) -> int | None:
    """An upper bound for `min(X, 128)`-style symbols, else None."""
    if isinstance(v, Lin) and v.single and v.single.startswith("min("):
        nums = []
        for part in v.single[4:-1].split(","):
            try:
                nums.append(int(part.strip()))
            except ValueError:
                pass
        return min(nums) if nums else None
    return None


def trip_count(start: Any, stop: Any, step: Any) -> int | None:
    s, e, st = as_int(start), as_int(stop), as_int(step)
    if s is None or e is None or not st:
        return None
    return max(0, -(-(e - s) // st)) if st > 0 else max(0, -(-(s - e) // -st))
