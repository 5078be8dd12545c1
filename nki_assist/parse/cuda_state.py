"""Walker state and helpers of the CUDA front end (see parse/cuda.py)."""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Iterable

from .cuda_consts import Number
from .cuda_model import CudaKernel, EpilogueHint

from .cuda_model import CUDA_TYPE_BYTES

MAX_DEPTH = 400  # deeper nesting is skipped (Python recursion), with a note
_BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim")
_IDENT = re.compile(r"(?<![\w.])[A-Za-z_]\w*")  # identifiers, not field names after `.`
_BUILTIN_REF = re.compile(r"\b(threadIdx|blockIdx|blockDim|gridDim)\s*\.\s*([xyz])\b")
_RELATIONAL = re.compile(r"(?<![<>\-])(?:<=?|>=?)(?![<>=])|<=|>=")
_FMA_NAMES = frozenset({"fmaf", "fma", "__fmaf_rn", "__fmaf_rz", "__fmaf_ieee_rn", "__fma_rn", "__hfma",
                        "__hfma2", "fmaf_rn"})
_ADD_NAMES = frozenset({"__hadd", "__hadd2", "__fadd_rn", "__dadd_rn"})
_SKIP = frozenset({"comment", "preproc_include", "string_literal", "raw_string_literal", "char_literal",
                   "template_argument_list", "type_descriptor", "using_declaration", "alias_declaration",
                   "namespace_alias_definition", "concatenated_string", "static_assert_declaration"})


@lru_cache(maxsize=8192)
def refs(text: str) -> frozenset[str]:
    """Identifiers in an expression; CUDA builtins as `threadIdx.x`. Cached: expressions repeat."""
    found = set(_IDENT.findall(text))
    if "thread_rank" in text:  # cooperative groups: block.thread_rank() is a thread index
        found.add("thread_rank")
    if "Idx" in text or "Dim" in text:
        found.discard("threadIdx"), found.discard("blockIdx"), found.discard("blockDim"), found.discard("gridDim")
        for b, axis in _BUILTIN_REF.findall(text):
            found.add(f"{b}.{axis}")
    return frozenset(found)


class _KernelState:
    __slots__ = ("k", "env", "types", "shared", "global_ptrs", "deps", "thread_vars", "grid_vars",
                 "loop_stack", "cond_stack", "ret_guards", "decl_pos", "fragments", "hints", "acc_seen",
                 "scale_re", "override", "scalar_shared", "aliases", "scale_factors")

    def __init__(self, k: CudaKernel, env: dict[str, Number]):
        self.k = k
        self.env = dict(env)
        self.types: dict[str, str] = {}
        self.shared: dict[str, str] = {}
        self.global_ptrs: dict[str, str] = {}
        self.deps: dict[str, set[str]] = {}
        self.thread_vars: set[str] = set()
        self.grid_vars: set[str] = set()
        self.loop_stack: list[int] = []
        self.cond_stack: list[tuple[set[str], bool, bool, str]] = []  # refs, relational, thread-dep., text
        self.scalar_shared: set[str] = set()
        self.aliases: dict[str, str] = {}  # tx -> threadIdx.x
        self.ret_guards: set[str] = set()
        self.decl_pos: dict[str, int] = {}
        self.fragments: dict[str, tuple[str, str | None]] = {}
        self.hints: dict[str, list[EpilogueHint]] = {}
        self.acc_seen: set[str] = set()
        self.scale_re: re.Pattern | None = None
        self.override: str | None = None  # access kind forced for the current call argument
        self.scale_factors: dict[str, tuple[str, int]] = {}  # name -> (initializer or "parameter", line)

    def is_thread(self, names: Iterable[str]) -> bool:
        tv = self.thread_vars
        return any(n.startswith("threadIdx.") or n in tv or n == "thread_rank" for n in names)

    def closure(self, names: set[str], limit: int = 64) -> set[str]:
        seen = set(names)
        todo = list(names)
        while todo and len(seen) < limit:
            for d in self.deps.get(todo.pop(), ()):
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        return seen



_BUILTIN_HEADS = frozenset({b"threadId", b"blockIdx", b"blockDim", b"gridDim."})
_BUILTIN_FIELDS = tuple(f"{b}.{a}" for b in _BUILTINS for a in "xyz")


def _is_exit(node) -> bool:
    if node.type in ("return_statement", "break_statement", "continue_statement"):
        return True
    if node.type == "compound_statement":
        kids = node.named_children
        return len(kids) == 1 and kids[0].type in ("return_statement", "break_statement", "continue_statement")
    return False


def _is_self_update(name: str, right, w) -> bool:
    """`x = x + e`, `x = fmaf(a, b, x)`, `x = __hadd(x, e)`."""
    if right is None:
        return False
    if right.type == "binary_expression":
        op = w.text(right.child_by_field_name("operator"))
        if op in ("+", "-"):
            return "".join(w.text(right.child_by_field_name("left")).split()) == name
        return False
    if right.type == "call_expression":
        fn = w.text(right.child_by_field_name("function")).split("::")[-1]
        args = right.child_by_field_name("arguments")
        kids = ["".join(w.text(a).split()) for a in args.named_children] if args is not None else []
        if fn in _FMA_NAMES and len(kids) == 3:
            return kids[2] == name
        if fn in _ADD_NAMES and kids:
            return name in kids
    return False


def _base_name(expr: str) -> str | None:
    m = re.match(r"\s*&?\s*\(?\s*([A-Za-z_]\w*)", expr)
    return m.group(1) if m else None


def _elem_bytes(dtype: str) -> int | None:

    base = " ".join(dtype.replace("const", "").replace("volatile", "").split())
    return CUDA_TYPE_BYTES.get(base)


def _trip(kind: str, step: str, init: str, op: str, bound: str, fold_fn) -> tuple[str | None, int | None]:
    """Trip-count expression (and value when every part folds) of a counted for-loop."""
    def p(x: str) -> str:
        x = x.strip()
        return x if re.fullmatch(r"[\w.]+", x) else f"({x})"

    s, i, b = fold_fn(step), fold_fn(init), fold_fn(bound)
    text, count = None, None
    if kind == "add" and op in ("<", "<=", "!="):
        span = p(bound) if init.strip() in ("0", "0u") else f"{p(bound)} - {p(init)}"
        if op == "<=":
            span = f"{span} + 1"
        text = span if step.strip() == "1" else f"ceil({p(span)} / {p(step)})"
        if None not in (s, i, b) and s > 0:
            count = max(0, math.ceil((b - i + (1 if op == "<=" else 0)) / s))
    elif kind == "sub" and op in (">", ">="):
        span = f"{p(init)} - {p(bound)}" + (" + 1" if op == ">=" else "")
        text = span if step.strip() == "1" else f"ceil({p(span)} / {p(step)})"
        if None not in (s, i, b) and s > 0:
            count = max(0, math.ceil((i - b + (1 if op == ">=" else 0)) / s))
    elif kind in ("shr", "div", "shl", "mul") and op in ("<", "<=", ">", ">=", "!="):
        shrink = kind in ("shr", "div")
        if shrink and bound.strip() in ("0", "0u"):
            text = f"floor(log2({init.strip()})) + 1"
        elif shrink:
            text = f"ceil(log2({p(init)} / {p(bound)}))" + (" + 1" if op == ">=" else "")
        else:
            text = f"ceil(log2({p(bound)} / {p(init)}))" + (" + 1" if op == "<=" else "")
        if isinstance(i, int) and isinstance(b, int) and isinstance(s, int) and i > 0 and s > 0:
            count = _simulate(i, b, s, kind, op)
    if count is not None:
        count = int(count)
    return text, count


def _simulate(v: int, bound: int, step: int, kind: str, op: str, limit: int = 70) -> int | None:
    """Exact trip count of a shifting/scaling loop with known integers (None if it does not end)."""
    test = {"<": lambda x: x < bound, "<=": lambda x: x <= bound, ">": lambda x: x > bound,
            ">=": lambda x: x >= bound, "!=": lambda x: x != bound}[op]
    n = 0
    while test(v):
        n += 1
        if n > limit:
            return None
        nxt = {"shr": v >> step, "div": v // step, "shl": v << step, "mul": v * step}[kind]
        if nxt == v:
            return None
        v = nxt
    return n
