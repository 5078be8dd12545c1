"""One walk over a tree-sitter Python tree that turns NKI kernels into facts (nki_model).

Statements are visited once, in source order, with the enclosing loop stack; expressions are
scanned once per statement. Constant folding (consts.py) runs against a per-kernel Env whose names
are bound once; names assigned more than once stay symbols.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .. import nki_api
from ..hardware import DTYPE_BYTES
from . import consts
from .consts import Env, Folder, Lin, ParDim, Tup
from .nki_branches import shape_branches
from .nki_model import (
    ALLOC_APIS, MATMUL_APIS, ApiRef, Allocation, Assert, Assignment, Call, Loop, Matmul, NkiKernel,
    Operand, Param, Return, Subtraction,
)

KERNEL_DECORATORS = {
    "nki.jit": "nki.jit", "torch_neuronx.nki_jit": "nki_jit", "nki_jit": "nki_jit",
    "nki.baremetal": "nki.baremetal", "nki.benchmark": "nki.benchmark", "nki.profile": "nki.profile",
    "nki.simulate_kernel": "nki.simulate_kernel", "jax_neuronx.nki_call": "nki_call",
}
LOOP_KINDS = {
    "nl.affine_range": "affine_range", "nl.sequential_range": "sequential_range",
    "nl.static_range": "static_range", "nl.dynamic_range": "dynamic_range", "range": "range",
}
# argument roles: (returns-style, dst-style), from the API catalogue
ROLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = nki_api.roles()
_DEFAULT_ROLES = (("x", "y", "z"), ("dst", "data", "data2"))
_REDUCE_APIS = {"nl.mean", "nl.sum", "nl.average"}
_DATA_ROLES = ("data", "x", "src", "data1")
_STMT_TYPES = {
    "expression_statement", "for_statement", "while_statement", "if_statement", "with_statement",
    "try_statement", "function_definition", "decorated_definition", "return_statement",
    "assert_statement", "block",
}
_TAG_HINT = re.compile(rb"mean|sum|square|\*|reduce|power|multiply|average")
_LIGHT_APIS = frozenset({
    "nl.par_dim", "nl.affine_range", "nl.sequential_range", "nl.static_range", "nl.dynamic_range", "nl.ds",
    "nl.arange", "nl.mgrid", "nki.jit",
})
_CHECKED_KWARGS = frozenset({"mask", "dst_rmw_op", "platform_target", "accumulate"})
_SCAN_LEAVES = frozenset({"integer", "float", "string", "true", "false", "none", "comment"})
_RANK = {"float32": 4, "tfloat32": 3, "float16": 2, "bfloat16": 2}


@lru_cache(maxsize=4096)
def canonical_api(full: str) -> str:
    if full.startswith("neuronxcc."):
        full = full[len("neuronxcc."):]
    for pre, rep in (("nki.language.", "nl."), ("nki.isa.", "nisa."), ("nki.typing.", "nt.")):
        if full.startswith(pre):
            return rep + full[len(pre):]
    if full == "nki.language":
        return "nl"
    if full == "nki.isa":
        return "nisa"
    return full


def is_nki_api(api: str) -> bool:
    return api.startswith(("nl.", "nisa.", "nki.", "nt.")) or api in ("nki_jit", "torch_neuronx.nki_jit")


@dataclass
class Tile:
    shape: tuple | None  # folded values (int | Lin | None)
    dtype: str | None
    buffer: str | None
    param: bool = False


@dataclass
class _Ctx:
    kernel: NkiKernel
    env: Env
    loops: list[Loop] = field(default_factory=list)
    tiles: dict[str, Tile] = field(default_factory=dict)
    assigns: dict[str, list[int]] = field(default_factory=dict)
    multi: set[str] = field(default_factory=set)
    tags: dict[str, str] = field(default_factory=dict)
    aranges: dict[str, Any] = field(default_factory=dict)
    # index grids: name -> (axis, axes of its space, extent or None); mgrid bound to one name -> extents
    grids: dict[str, list[tuple[int, int, Any]]] = field(default_factory=dict)
    mgrids: dict[str, list] = field(default_factory=dict)
    loop_names: dict[int, set[str]] = field(default_factory=dict)


class Extractor:
    def __init__(self, src: bytes, imports: dict[str, str], module_env: Env):
        self.src = src
        self.imports = imports
        self.module_env = module_env
        self._lines = src.split(b"\n")
        self.folder = Folder(src, self.resolve)
        self._calls_by_node: dict[int, Call] = {}
        self._api_memo: dict[str, str | None] = {}  # dotted -> api (imports are final before any lookup)
        self._head_memo: dict[tuple[int, int], tuple[str | None, str | None]] = {}  # call -> (dotted, api)
        self._args_memo: dict[tuple[int, int], tuple[list, dict]] = {}  # call -> (positional, keyword nodes)
        # calls that are a whole expression statement, marked when the statement is visited
        # (Node.parent is slow in tree-sitter: it searches down from the root)
        self._bare_calls: set[tuple[int, int]] = set()
        if src.isascii():  # byte offsets are character offsets: slice a str, no per-node decode
            self._str = src.decode("ascii")
            self.text = self._text_ascii  # type: ignore[method-assign]
            self.pos = self._pos_ascii  # type: ignore[method-assign]
            self.folder.text = self._text_ascii  # type: ignore[method-assign]

    # ---- positions -------------------------------------------------------------------------
    def col(self, point) -> int:
        row, byte_col = point
        if row >= len(self._lines):
            return byte_col + 1
        line = self._lines[row]
        if line.isascii():
            return byte_col + 1
        return len(line[:byte_col].decode("utf-8", "replace")) + 1

    def pos(self, node) -> tuple[int, int, int, int]:
        s, e = node.start_point, node.end_point
        return s[0] + 1, self.col(s), e[0] + 1, self.col(e)

    def text(self, node) -> str:
        return self.src[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def _text_ascii(self, node) -> str:
        return self._str[node.start_byte:node.end_byte]

    @staticmethod
    def _pos_ascii(node) -> tuple[int, int, int, int]:
        s, e = node.start_point, node.end_point
        return s[0] + 1, s[1] + 1, e[0] + 1, e[1] + 1

    # ---- names -----------------------------------------------------------------------------
    def resolve(self, name: str) -> str | None:
        mod = self.imports.get(name)
        if mod is not None:
            return mod
        return {"nl": "nki.language", "nisa": "nki.isa"}.get(name)

    def api_of(self, dotted: str) -> str | None:
        try:
            return self._api_memo[dotted]
        except KeyError:
            api = self._api_memo[dotted] = self._api_of(dotted)
            return api

    def _api_of(self, dotted: str) -> str | None:
        head, _, rest = dotted.partition(".")
        mod = self.imports.get(head)
        if mod is None and head in ("nl", "nisa"):
            mod = self.resolve(head)
        if mod is None:
            return dotted if dotted in ("range", "min", "max") else None
        api = canonical_api(f"{mod}.{rest}" if rest else mod)
        return api if is_nki_api(api) else None

    # ---- functions ---------------------------------------------------------------------------
    def function(self, fn, decorator: str | None) -> NkiKernel:
        name_node = fn.child_by_field_name("name")
        body = fn.child_by_field_name("body")
        line, col, end_line, _ = self.pos(fn)
        k = NkiKernel(name=self.text(name_node) if name_node else "<lambda>", line=line, end_line=end_line,
                      decorator=decorator, col=col)
        if name_node is not None:
            _, k.col, _, k.name_end_col = self.pos(name_node)
        ctx = _Ctx(kernel=k, env=Env(parent=self.module_env))
        k._env = ctx.env  # type: ignore[attr-defined]
        self._params(fn.child_by_field_name("parameters"), ctx)
        if body is None:
            return k
        self._scan_assigns(body, ctx.assigns)
        ctx.multi = {n for n, p in ctx.assigns.items() if len(p) > 1}
        self._block(body, ctx)
        k.shape_branches = shape_branches(body, self.text, {p.name for p in k.params})
        k.divisors = ctx.env.divisors
        k.upper_bounds = ctx.env.upper
        return k

    def _params(self, params, ctx: _Ctx, record: bool = True) -> None:
        if params is None:
            return
        for p in params.named_children:
            node = p
            if p.type in ("default_parameter", "typed_default_parameter"):
                node = p.child_by_field_name("name")
            elif p.type in ("typed_parameter", "list_splat_pattern", "dictionary_splat_pattern"):
                node = next((c for c in p.named_children if c.type == "identifier"), None)
            if node is None or node.type != "identifier":
                continue
            name = self.text(node)
            line, col, _, _ = self.pos(node)
            if record:
                ctx.kernel.params.append(Param(name, line, col))
                ctx.tiles[name] = Tile(None, None, "hbm", param=True)
            ctx.env.values[name] = Lin.sym(name)  # defaults can be overridden by callers

    def _scan_assigns(self, node, out: dict[str, list[int]]) -> None:
        """Statement-level pre-pass: where each name is (re)bound, so 'bound once' is known."""
        for st in node.named_children:
            t = st.type
            if t == "expression_statement":
                for c in st.named_children:
                    while c is not None and c.type in ("assignment", "augmented_assignment"):
                        for n in self._target_names(c.child_by_field_name("left")):
                            out.setdefault(n, []).append(c.start_byte)
                        if c.type == "augmented_assignment":
                            n0 = self._base_name(c.child_by_field_name("left"))
                            if n0:  # x += ... rebinding counts twice
                                out.setdefault(n0, []).append(c.start_byte)
                        c = c.child_by_field_name("right")
            elif t == "for_statement":
                for n in self._target_names(st.child_by_field_name("left")):
                    out.setdefault(n, []).extend((st.start_byte, st.start_byte))
                self._scan_assigns(st.child_by_field_name("body"), out)
                alt = st.child_by_field_name("alternative")
                if alt is not None:
                    self._scan_assigns(alt, out)
            elif t in ("if_statement", "while_statement", "with_statement", "try_statement",
                       "elif_clause", "else_clause", "except_clause", "finally_clause", "block",
                       "with_clause", "ERROR"):
                self._scan_assigns(st, out)
            elif t in ("function_definition", "decorated_definition"):
                fn = st if t == "function_definition" else st.child_by_field_name("definition")
                if fn is not None and fn.child_by_field_name("name") is not None:
                    out.setdefault(self.text(fn.child_by_field_name("name")), []).append(st.start_byte)

    def _target_names(self, node) -> list[str]:
        if node is None:
            return []
        if node.type == "identifier":
            return [self.text(node)]
        if node.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple", "list"):
            out = []
            for c in node.named_children:
                out += self._target_names(c)
            return out
        return []

    def _base_name(self, node) -> str | None:
        while node is not None and node.type in ("subscript", "attribute"):
            node = node.child_by_field_name("value" if node.type == "subscript" else "object")
        return self.text(node) if node is not None and node.type == "identifier" else None

    # ---- statements ----------------------------------------------------------------------------
    def _block(self, node, ctx: _Ctx) -> None:
        for st in node.named_children:
            self._stmt(st, ctx)

    def _stmt(self, st, ctx: _Ctx) -> None:
        t = st.type
        if t == "expression_statement":
            self._mark_bare(st)
            for c in st.named_children:
                self._stmt_expr_node(c, ctx)
        elif t == "for_statement":
            self._for(st, ctx)
        elif t == "while_statement":
            cond = st.child_by_field_name("condition")
            self._scan_stmt_expr(cond, ctx)
            line, col, end_line, _ = self.pos(st)
            loop = Loop(None, "while", None, self.text(cond) if cond else "", line, col, end_line,
                        id=len(ctx.kernel.loops) + 1, start_byte=st.start_byte, end_byte=st.end_byte)
            ctx.kernel.loops.append(loop)
            ctx.loop_names[loop.id] = self._loop_names(loop, ctx)
            ctx.loops.append(loop)
            self._block(st.child_by_field_name("body"), ctx)
            ctx.loops.pop()
        elif t in ("if_statement", "elif_clause"):
            cond = st.child_by_field_name("condition")
            names = self._scan_stmt_expr(cond, ctx)
            if cond is not None and cond.type in ("comparison_operator", "boolean_operator", "identifier",
                                                  "binary_operator"):
                ctx.kernel.guarded_names |= names
                ctx.kernel.guard_lines.add(st.start_point[0] + 1)
            for c in st.named_children:
                if c.type in ("block", "elif_clause", "else_clause"):
                    self._stmt(c, ctx)
        elif t in ("block", "else_clause", "finally_clause", "except_clause", "with_clause", "ERROR"):
            for c in st.named_children:
                if c.type in _STMT_TYPES or c.type in ("elif_clause", "else_clause", "except_clause",
                                                        "finally_clause", "ERROR"):
                    self._stmt(c, ctx)
                elif c.type in ("assignment", "augmented_assignment", "call"):
                    self._stmt_expr_node(c, ctx)
                elif c.is_named and t == "ERROR":
                    self._scan_stmt_expr(c, ctx)
        elif t == "with_statement":
            for c in st.named_children:
                if c.type == "with_clause":
                    self._scan_stmt_expr(c, ctx)
                elif c.type == "block":
                    self._block(c, ctx)
        elif t == "try_statement":
            for c in st.named_children:
                self._stmt(c, ctx)
        elif t == "function_definition":
            # nested helpers (fori_loop bodies, closures) belong to the kernel's facts
            self._params(st.child_by_field_name("parameters"), ctx, record=False)
            body = st.child_by_field_name("body")
            if body is not None:
                self._block(body, ctx)
        elif t == "decorated_definition":
            d = st.child_by_field_name("definition")
            if d is not None:
                self._stmt(d, ctx)
        elif t == "return_statement":
            names = self._scan_stmt_expr(st, ctx)
            line, col, _, end_col = self.pos(st)
            vals = st.named_children
            rnames: list[str] = []
            for v in vals:
                if v.type == "identifier":
                    rnames.append(self.text(v))
                elif v.type in ("tuple", "expression_list", "list"):
                    rnames += [self.text(c) for c in v.named_children if c.type == "identifier"]
            ctx.kernel.returns.append(Return(rnames, line, col, end_col))
            del names
        elif t == "assert_statement":
            self._assert(st, ctx)
        else:
            self._scan_stmt_expr(st, ctx)

    def _mark_bare(self, st) -> None:
        for c in st.named_children:
            if c.type == "call":
                self._bare_calls.add((c.start_byte, c.end_byte))

    def _stmt_expr_node(self, c, ctx: _Ctx) -> None:
        if c.type == "assignment":
            self._assign(c, ctx)
        elif c.type == "augmented_assignment":
            self._augassign(c, ctx)
        else:
            self._scan_stmt_expr(c, ctx)

    def _scan_stmt_expr(self, node, ctx: _Ctx, target: str | None = None) -> set[str]:
        names: set[str] = set()
        if node is not None:
            self._scan(node, ctx, names, target)
            ctx.kernel.used_names |= names
        return names

    def _for(self, st, ctx: _Ctx) -> None:
        left, right = st.child_by_field_name("left"), st.child_by_field_name("right")
        self._scan_stmt_expr(right, ctx)
        kind, trip, trip_expr, fdivs = "iter", None, self.text(right) if right else "", []
        if right is not None and right.type == "call":
            api = self._call_api(right)
            if api in LOOP_KINDS:
                kind = LOOP_KINDS[api]
                pos, kw = self._call_args(right)
                if len(pos) == 1:
                    start_n, stop_n, step_n = None, pos[0], None
                elif len(pos) >= 2:
                    start_n, stop_n = pos[0], pos[1]
                    step_n = pos[2] if len(pos) > 2 else None
                else:
                    start_n, stop_n, step_n = kw.get("start"), kw.get("stop"), kw.get("step")
                step_n = step_n if step_n is not None else kw.get("step")
                f = self.folder.fold
                start = f(start_n, ctx.env) if start_n is not None else 0
                stop = f(stop_n, ctx.env) if stop_n is not None else None
                step = f(step_n, ctx.env) if step_n is not None else 1
                trip = consts.trip_count(start, stop, step)
                trip_expr = ", ".join(self.text(c) for c in pos) if pos else trip_expr
                for n in (start_n, stop_n):
                    if n is not None:
                        fdivs += self._floor_divs(n, ctx)
        line, col, end_line, _ = self.pos(st)
        var_names = self._target_names(left)
        loop = Loop(var_names[0] if var_names else None, kind, trip, trip_expr, line, col, end_line,
                    id=len(ctx.kernel.loops) + 1, start_byte=st.start_byte, end_byte=st.end_byte,
                    floor_divs=fdivs)
        ctx.kernel.loops.append(loop)
        for n in var_names:
            ctx.env.values[n] = Lin.sym(n)
        ctx.loop_names[loop.id] = self._loop_names(loop, ctx) | set(var_names)
        ctx.loops.append(loop)
        self._block(st.child_by_field_name("body"), ctx)
        ctx.loops.pop()
        alt = st.child_by_field_name("alternative")
        if alt is not None:
            self._stmt(alt, ctx)

    def _floor_divs(self, node, ctx: _Ctx) -> list:
        """`num // den` inside a trip expression, directly or through names bound to one."""
        out = []
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type == "binary_operator" and self.text(n.child_by_field_name("operator")) == "//":
                num = self.folder.fold(n.child_by_field_name("left"), ctx.env)
                den = consts.as_int(self.folder.fold(n.child_by_field_name("right"), ctx.env))
                if den and den > 1:
                    out.append((self.text(n.child_by_field_name("left")), num, den))
                continue
            if n.type == "identifier":
                v = ctx.env.lookup(self.text(n))
                if isinstance(v, Lin):
                    for term, _ in v.terms:
                        fd = self._find_floordiv(term, ctx.env)
                        if fd is not None and consts.as_int(fd.den):
                            out.append((consts.display(fd.num), fd.num, consts.as_int(fd.den)))
                continue
            stack.extend(n.named_children)
        return out

    @staticmethod
    def _find_floordiv(term: str, env: Env | None):
        while env is not None:
            if term in env.floordivs:
                return env.floordivs[term]
            env = env.parent
        return None

    def _assert(self, st, ctx: _Ctx) -> None:
        line, col, _, _ = self.pos(st)
        ctx.kernel.asserts.append(Assert(self.text(st), line, col))
        names = self._scan_stmt_expr(st, ctx)
        ctx.kernel.guarded_names |= names
        cond = st.named_children[0] if st.named_children else None
        self.assert_facts(cond, ctx.env)

    def assert_facts(self, cond, env: Env) -> None:
        if cond is None:
            return
        if cond.type == "boolean_operator" and self.text(cond.child_by_field_name("operator")) == "and":
            self.assert_facts(cond.child_by_field_name("left"), env)
            self.assert_facts(cond.child_by_field_name("right"), env)
            return
        if cond.type == "parenthesized_expression" and cond.named_children:
            self.assert_facts(cond.named_children[0], env)
            return
        if cond.type != "comparison_operator":
            return
        parts = cond.named_children
        ops = [self.text(c) for c in cond.children if not c.is_named]
        if len(parts) < 2 or not ops:
            return
        # chains like 0 < M <= 128: check each adjacent pair
        for i, op in enumerate(ops[: len(parts) - 1]):
            lhs, rhs = parts[i], parts[i + 1]
            a, b = self.folder.fold(lhs, env), self.folder.fold(rhs, env)
            if op == "==" and lhs.type == "binary_operator" and \
                    self.text(lhs.child_by_field_name("operator")) == "%" and consts.as_int(b) == 0:
                num = self.folder.fold(lhs.child_by_field_name("left"), env)
                den = consts.as_int(self.folder.fold(lhs.child_by_field_name("right"), env))
                if isinstance(num, Lin) and den:
                    # a derived size (`L = LX - 128; assert L % 512 == 0`) is keyed by its whole form
                    env.divisors.setdefault(num.single or consts.lin_key(num), set()).add(den)
            elif op in ("<=", "<") and isinstance(a, Lin) and a.single and consts.as_int(b) is not None:
                env.upper[a.single] = consts.as_int(b) - (1 if op == "<" else 0)
            elif op in (">=", ">") and isinstance(b, Lin) and b.single and consts.as_int(a) is not None:
                env.upper[b.single] = consts.as_int(a) - (1 if op == ">" else 0)
            elif op == "==" and isinstance(a, Lin) and a.single and consts.is_num(b):
                env.values[a.single] = b

    # ---- assignments -----------------------------------------------------------------------------
    def _assign(self, node, ctx: _Ctx) -> None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if right is not None and right.type == "assignment":  # a = b = value
            self._assign(right, ctx)
            inner = right
            while inner.child_by_field_name("right") is not None and inner.child_by_field_name("right").type == "assignment":
                inner = inner.child_by_field_name("right")
            right = inner.child_by_field_name("right")
        if left is None or right is None:
            return
        target = self.text(left) if left.type == "identifier" else None
        reads = self._scan_stmt_expr(right, ctx, target)
        idx_names = self._index_names(left, ctx)
        reads |= idx_names
        self._bind(left, right, ctx)
        self._record_write(left, right, "=", reads, idx_names, node, ctx)

    def _augassign(self, node, ctx: _Ctx) -> None:
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None:
            return
        reads = self._scan_stmt_expr(right, ctx)
        idx_names = self._index_names(left, ctx)
        base = self._base_name(left)
        reads |= idx_names | ({base} if base else set())
        ctx.kernel.used_names |= {base} if base else set()
        op = self.text(node.child_by_field_name("operator"))
        if left.type == "identifier" and base:
            ctx.env.values[base] = Lin.sym(base)
        self._record_write(left, right, op, reads, idx_names, node, ctx)

    def _index_names(self, left, ctx: _Ctx) -> set[str]:
        names: set[str] = set()
        node = left
        while node.type in ("subscript", "attribute"):
            if node.type == "subscript":
                for s in node.children_by_field_name("subscript"):
                    self._scan(s, ctx, names, None)
                node = node.child_by_field_name("value")
            else:
                node = node.child_by_field_name("object")
        ctx.kernel.used_names |= names
        return names

    def _dep_loops(self, names: set[str], ctx: _Ctx) -> frozenset[int]:
        loops = ctx.loops
        if not loops or not names:
            return frozenset()
        loop_names = ctx.loop_names
        return frozenset([lp.id for lp in loops if not names.isdisjoint(loop_names[lp.id])])

    @staticmethod
    def _loop_names(lp: Loop, ctx: _Ctx) -> set[str]:
        """The loop variable plus every name (re)bound inside the loop body."""
        out = {lp.var} if lp.var else set()
        for n, ps in ctx.assigns.items():
            for p in ps:
                if lp.start_byte <= p < lp.end_byte:
                    out.add(n)
                    break
        return out

    def _record_write(self, left, right, op: str, reads: set[str], idx_names: set[str], node, ctx: _Ctx) -> None:
        base = self._base_name(left)
        if base is None:
            for n in self._target_names(left):
                self._add_write(n, node, op, False, reads, frozenset(), right, ctx)
            return
        self._add_write(base, node, op, left.type != "identifier", reads, self._dep_loops(idx_names, ctx), right, ctx)

    def _add_write(self, name, node, op, subscript, reads, dep, right, ctx: _Ctx, value_kind=None, api=None) -> None:
        line, col, end_line, end_col = self.pos(node)
        if value_kind is None:
            value_kind, api = self._value_kind(right, ctx)
        # a Python number the kernel computes at trace time (an address counter), not a tensor
        scalar = (not subscript and op != "call" and name not in ctx.tiles and api is None
                  and right is not None and self._tile_of(right, ctx) is None
                  and not any(n in ctx.tiles for n in reads if n != name))
        ctx.kernel.assignments.append(Assignment(
            name=name, line=line, col=col, end_line=end_line, end_col=end_col, loops=list(ctx.loops),
            op=op, subscript=subscript, reads=frozenset(reads), index_dep_loops=dep, value_kind=value_kind,
            value_api=api, value_text=self.text(right)[:200] if right is not None else "",
            start_byte=node.start_byte, scalar=scalar))

    def _value_kind(self, node, ctx: _Ctx) -> tuple[str | None, str | None]:
        if node is None:
            return None, None
        while node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[0]
        if node.type == "binary_operator":
            op = self.text(node.child_by_field_name("operator"))
            return {"+": "add", "-": "sub", "*": "mul", "@": "matmul"}.get(op, "other"), None
        if node.type == "call":
            rec = self._calls_by_node.get(node.start_byte)
            api = rec.api if rec is not None else None
            if api is None:
                return "other", None
            if api in MATMUL_APIS:
                return "matmul", api
            if api in ALLOC_APIS:
                return "alloc", api
            if api in ("nl.load", "nisa.dma_copy"):
                return "load", api
            if api in ("nl.add",):
                return "add", api
            if api == "nisa.tensor_tensor":
                return ("add" if rec.op == "nl.add" else "other"), api
            return "other", api
        return "other", None

    def _kwarg_api(self, call, key: str, idx: int, ctx: _Ctx) -> str | None:
        args = call.child_by_field_name("arguments")
        if args is None:
            return None
        pos = []
        for c in args.named_children:
            if c.type == "keyword_argument":
                if self.text(c.child_by_field_name("name")) == key:
                    return self._op_name(c.child_by_field_name("value"))
            else:
                pos.append(c)
        return self._op_name(pos[idx]) if len(pos) > idx else None

    def _op_name(self, node) -> str | None:
        if node is None:
            return None
        d = self.folder.dotted(node)
        if d is None:
            return None
        return self.api_of(d) or d

    def _bind(self, left, right, ctx: _Ctx) -> None:
        """Constant, tile, tag and arange bindings for `left = right`."""
        env, folder = ctx.env, self.folder
        if left.type == "identifier":
            name = self.text(left)
            tag = self._tag(right, ctx)
            if tag:
                ctx.tags[name] = tag
            else:
                ctx.tags.pop(name, None)
            # nl.arange(n)[:, None] / nl.arange(n)
            ar = self._arange_size(right, ctx)
            if ar is None and right.type == "call" and self._call_api(right) == "nl.ds":
                ds_args = self._call_args(right)[0]  # `sl = nl.ds(start, size)`: indexing with sl spans `size`
                ar = self.folder.fold(ds_args[1], ctx.env) if len(ds_args) >= 2 else None
            if ar is not None:
                ctx.aranges[name] = ar
            refs = self._grid_refs(right, ctx) if (ctx.grids or ctx.mgrids or "arange" in self.text(right)) else []
            if refs:  # `ix = offset + nl.arange(128)[:, None]` is an index grid too
                ctx.grids[name] = refs
            else:
                ctx.grids.pop(name, None)
            if right.type == "subscript" and self._is_api(right.child_by_field_name("value"), "nl.mgrid"):
                ctx.mgrids[name] = [self._slice_extent(sl, None, ctx)
                                    for sl in right.children_by_field_name("subscript")]
            else:
                ctx.mgrids.pop(name, None)
            tile = self._tile_of(right, ctx)
            if tile is not None:
                ctx.tiles[name] = tile
            if name in ctx.multi:
                env.values[name] = Lin.sym(name)
                return
            if right.type == "subscript":
                val = right.child_by_field_name("value")
                if val.type == "attribute" and self.text(val.child_by_field_name("attribute")) == "shape":
                    shape = self._shape_of(val.child_by_field_name("object"), ctx)
                    i = consts.as_int(folder.fold(right.child_by_field_name("subscript"), env))
                    if shape is not None and i is not None and -len(shape) <= i < len(shape) and shape[i] is not None:
                        env.values[name] = shape[i]
                    else:
                        env.values[name] = Lin.sym(name)
                    return
            if right.type == "call" and right.start_byte in self._calls_by_node:
                env.values[name] = Lin.sym(name)  # a tile, not a number
                return
            v = folder.fold(right, env)
            env.values[name] = v if v is not None else Lin.sym(name)
            return
        if left.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple"):
            targets = left.named_children
            names = [self.text(t) if t.type == "identifier" else None for t in targets]
            vals: list[Any] = [None] * len(targets)
            if right.type == "attribute" and self.text(right.child_by_field_name("attribute")) == "shape":
                obj = right.child_by_field_name("object")
                shape = self._shape_of(obj, ctx)
                if shape is not None and len(shape) == len(targets):
                    vals = list(shape)
                elif obj.type == "identifier" and ctx.tiles.get(self.text(obj)) is not None:
                    # K, N = a.shape: the tensor's shape is now (K, N) in symbols
                    tile = ctx.tiles[self.text(obj)]
                    syms = tuple(Lin.sym(n) if n else None for n in names)
                    if tile.shape is None:
                        tile.shape = syms
            elif right.type in ("tuple", "expression_list", "list") and len(right.named_children) == len(targets):
                vals = [folder.fold(c, env) for c in right.named_children]
            elif right.type == "subscript" and self._is_api(right.child_by_field_name("value"), "nl.mgrid"):
                slices = right.children_by_field_name("subscript")
                for i, s in enumerate(slices):
                    if i < len(names) and names[i]:
                        ctx.aranges[names[i]] = self._slice_extent(s, None, ctx)
                        ctx.grids[names[i]] = [(i, len(slices), ctx.aranges[names[i]])]
            for n, v in zip(names, vals):
                if n is None:
                    continue
                ctx.tags.pop(n, None)
                env.values[n] = v if (v is not None and n not in ctx.multi) else Lin.sym(n)

    def _is_api(self, node, api: str) -> bool:
        d = self.folder.dotted(node) if node is not None else None
        return bool(d) and self.api_of(d) == api

    def _arange_size(self, node, ctx: _Ctx) -> Any:
        if node.type == "subscript":
            node = node.child_by_field_name("value")
        if node.type != "call" or self._call_api(node) != "nl.arange":
            return None
        pos = self._call_args(node)[0]
        if len(pos) == 1:
            return self.folder.fold(pos[0], ctx.env)
        if len(pos) >= 2:
            return consts.add(self.folder.fold(pos[1], ctx.env), self.folder.fold(pos[0], ctx.env), -1)
        return None

    def _arange_place(self, node, ctx: _Ctx) -> tuple[int, int, Any] | None:
        """(axis, axes, extent) of `nl.arange(n)[:, None]`-style placements (extent None when not a constant)."""
        call = node.child_by_field_name("value") if node.type == "subscript" else node
        if call is None or call.type != "call" or self._call_api(call) != "nl.arange":
            return None
        pos = self._call_args(call)[0]
        ext = None
        if len(pos) == 1:
            ext = self.folder.fold(pos[0], ctx.env)
        elif len(pos) >= 2:
            ext = consts.add(self.folder.fold(pos[1], ctx.env), self.folder.fold(pos[0], ctx.env), -1)
        if node.type != "subscript":
            return 0, 1, ext
        items = [c for c in node.children_by_field_name("subscript")]
        slots = [i for i, c in enumerate(items) if c.type == "slice"]
        if len(slots) != 1:
            return None
        return slots[0], len(items), ext

    def _grid_refs(self, node, ctx: _Ctx) -> list[tuple[int, int, Any]]:
        """The index grids an index expression uses (`t * P + i_p`, `i.p`, `nl.arange(n)[None, :]`)."""
        out: list[tuple[int, int, Any]] = []
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type == "identifier" and self.text(n) in ctx.grids:
                out += ctx.grids[self.text(n)]
                continue
            if n.type == "attribute":
                obj, attr = n.child_by_field_name("object"), n.child_by_field_name("attribute")
                if obj is not None and obj.type == "identifier" and self.text(obj) in ctx.mgrids:
                    ext = ctx.mgrids[self.text(obj)]
                    axis = "pxyz".find(self.text(attr)) if attr is not None else -1
                    if 0 <= axis < len(ext):
                        out.append((axis, len(ext), ext[axis]))
                    continue
            if n.type in ("subscript", "call"):
                place = self._arange_place(n, ctx)
                if place is not None:
                    out.append(place)
                    continue
            stack.extend(n.named_children)
        return out

    def _grid_shape(self, idx: list, ctx: _Ctx) -> tuple | None:
        """Shape of an index-grid access: the broadcast of the grids it uses, one axis per grid axis (the
        extent along an axis no index uses is 1). None when the index is not a pure index-grid access."""
        if not ctx.grids and not ctx.mgrids and not any(self._arange_place(s, ctx) for s in idx):
            return None
        refs: list[tuple[int, int, Any]] = []
        for s in idx:
            if s.type in ("slice", "ellipsis") or (s.type == "call" and self._call_api(s) == "nl.ds"):
                return None
            refs += self._grid_refs(s, ctx)
        if not refs or len({nd for _, nd, _ in refs}) != 1:
            return None
        dims: list[Any] = [1] * refs[0][1]
        seen: set[int] = set()
        for axis, _nd, ext in refs:
            if axis in seen:
                continue  # `i * 128 + i_p` and `i_p` again: the same axis
            seen.add(axis)
            dims[axis] = _int(ext) if _int(ext) is not None else (ext if isinstance(ext, Lin) else None)
        return tuple(dims)

    # ---- tiles, shapes, regions ----------------------------------------------------------------------
    def _shape_of(self, node, ctx: _Ctx) -> tuple | None:
        if node.type == "identifier":
            t = ctx.tiles.get(self.text(node))
            return t.shape if t else None
        return None

    def _tile_of(self, node, ctx: _Ctx) -> Tile | None:
        """The tile a right-hand side evaluates to, when it is a tile."""
        while node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[0]
        if node.type in ("identifier", "subscript"):
            name, shape, dtype, buf, param = self._region(node, ctx)
            if name is None or (shape is None and dtype is None and buf is None):
                return None
            return Tile(shape, dtype, "sbuf" if param else buf, False) if node.type == "subscript" and param else \
                Tile(shape, dtype, buf, param if node.type == "identifier" else False)
        if node.type == "binary_operator":
            for side in ("left", "right"):
                t = self._tile_of(node.child_by_field_name(side), ctx)
                if t is not None:
                    return Tile(t.shape, t.dtype, "sbuf")
            return None
        if node.type != "call":
            return None
        api = self._call_api(node)
        if api is None:
            return None
        call = self._calls_by_node.get(node.start_byte)
        if call is None:
            return None
        if api in ALLOC_APIS:
            a = call._alloc  # type: ignore[attr-defined]
            return Tile(a._shape_vals, a.dtype, a.buffer) if a is not None else None  # type: ignore[attr-defined]
        if api in MATMUL_APIS and not call.dst_style:
            mm = ctx.kernel.matmuls[-1] if ctx.kernel.matmuls and ctx.kernel.matmuls[-1].call is call else None
            if mm is not None and mm.M is not None and mm.N is not None:
                return Tile((mm.M, mm.N), "float32", "psum")
            return Tile(None, "float32", "psum")
        if api in ("nl.load", "nl.load_transpose2d") and not call.dst_style:
            src = call.operand("src")
            dt = call._kw_dtype  # type: ignore[attr-defined]
            shape = call._src_shape_vals  # type: ignore[attr-defined]
            if api == "nl.load_transpose2d" and shape:
                shape = tuple(reversed(shape))
            return Tile(shape, dt or (src.dtype if src else None), "sbuf")
        if call.dst_style:
            return None
        # compute call returning a tile: same shape as its first tile operand
        first = next((o for o in call.operands if o.role in _DATA_ROLES + ("y", "data2")), None)
        if first is None:
            return None
        dt = call._kw_dtype or first.dtype  # type: ignore[attr-defined]
        shape = call._first_shape_vals  # type: ignore[attr-defined]
        if api in ("nl.transpose", "nisa.nc_transpose") and shape:
            shape = tuple(reversed(shape))
        if api in ("nl.max", "nl.min", "nl.sum", "nl.mean") or api == "nisa.tensor_reduce":
            shape = (shape[0], 1) if shape else None
        return Tile(shape, dt, "sbuf")

    def _call_api(self, node) -> str | None:
        return self._call_head(node)[1]

    def _call_head(self, node) -> tuple[str | None, str | None]:
        """(dotted callee, normalised api) of a call node, computed once per node."""
        key = (node.start_byte, node.end_byte)
        head = self._head_memo.get(key)
        if head is None:
            fn = node.child_by_field_name("function")
            d = self.folder.dotted(fn) if fn is not None else None
            head = self._head_memo[key] = (d, self.api_of(d) if d else None)
        return head

    def _call_args(self, node) -> tuple[list, dict]:
        """(positional argument nodes incl. comments, {keyword: value node}) of a call, once per node."""
        key = (node.start_byte, node.end_byte)
        got = self._args_memo.get(key)
        if got is None:
            args = node.child_by_field_name("arguments")
            pos: list = []
            kw: dict = {}
            if args is not None:
                text = self.text
                for c in args.named_children:
                    if c.type == "keyword_argument":
                        kw[text(c.child_by_field_name("name"))] = c.child_by_field_name("value")
                    else:
                        pos.append(c)
            got = self._args_memo[key] = (pos, kw)
        return got

    def _region(self, node, ctx: _Ctx):
        """(name, shape values, dtype, buffer, is_param) for `x` or `x[...]`."""
        if node.type == "identifier":
            name = self.text(node)
            t = ctx.tiles.get(name)
            if t is None:
                return name, None, None, None, False
            return name, t.shape, t.dtype, t.buffer, t.param
        if node.type == "subscript":
            base = node.child_by_field_name("value")
            if base.type != "identifier":
                return None, None, None, None, False
            name = self.text(base)
            t = ctx.tiles.get(name)
            if t is None:
                return name, None, None, None, False
            idx = node.children_by_field_name("subscript")
            return name, self._slice_shape(t.shape, idx, ctx), t.dtype, t.buffer, t.param
        if node.type == "call":  # x.ap(...), x.reshape(...), x.view(...)
            fn = node.child_by_field_name("function")
            if fn is not None and fn.type == "attribute":
                obj = fn.child_by_field_name("object")
                name, _, dtype, buf, param = self._region(obj, ctx)
                if name in ctx.tiles:
                    return name, None, dtype, buf, param
        return None, None, None, None, False

    def _slice_shape(self, base: tuple | None, idx: list, ctx: _Ctx) -> tuple | None:
        grid = self._grid_shape(idx, ctx)
        if grid is not None:
            return grid
        out: list[Any] = []
        dims = list(base) if base is not None else None
        di = 0
        n_real = sum(1 for s in idx if s.type != "ellipsis")
        for s in idx:
            if s.type == "ellipsis":
                if dims is None:
                    return None
                take = len(dims) - n_real
                out += dims[di:di + take]
                di += take
                continue
            d = dims[di] if dims is not None and di < len(dims) else None
            di += 1
            if s.type == "slice":
                out.append(self._slice_extent(s, d, ctx))
                continue
            size = self._index_extent(s, ctx)
            if size is not None:
                out.append(size)
            # plain integer/scalar index: dimension dropped
        if dims is not None:
            out += dims[di:]
        elif not out:
            return None
        elif len(idx) < 2:
            out.append(None)  # `x[a:b]` of a tensor of unknown rank: trailing dims may follow (free size unknown)
        return tuple(out)

    def _slice_extent(self, s, dim: Any, ctx: _Ctx) -> Any:
        parts: list[Any] = [None, None, None]
        i = 0
        for c in s.children:
            if c.type == ":":
                i += 1
            elif c.is_named and i < 3:
                parts[i] = c
        f = self.folder.fold
        start = f(parts[0], ctx.env) if parts[0] is not None else 0
        stop = f(parts[1], ctx.env) if parts[1] is not None else dim
        step = f(parts[2], ctx.env) if parts[2] is not None else 1
        if stop is None or start is None:
            return None
        ext = consts.add(stop, start, -1)
        st = consts.as_int(step)
        if st and st != 1 and consts.is_num(ext):
            return -(-ext // st)
        return ext

    def _index_extent(self, s, ctx: _Ctx) -> Any:
        """Extent of a non-slice index: nl.ds(start, size), an arange expression, or None (scalar)."""
        if s.type == "call" and self._call_api(s) == "nl.ds":
            pos = self._call_args(s)[0]
            if len(pos) >= 2:
                return self.folder.fold(pos[1], ctx.env)
            return None
        sz = self._arange_size(s, ctx)
        if sz is not None:
            return sz
        if not ctx.aranges:
            return None
        stack = [s]
        while stack:
            n = stack.pop()
            if n.type == "identifier" and self.text(n) in ctx.aranges:
                return ctx.aranges[self.text(n)]
            stack.extend(n.named_children)
        return None

    # ---- expressions -------------------------------------------------------------------------------
    def _scan(self, node, ctx: _Ctx, names: set[str], target: str | None) -> None:
        t = node.type
        if t == "identifier":
            names.add(self.text(node))
            return
        if t in _SCAN_LEAVES:
            return
        if t == "call":
            self._call(node, ctx, names, target)
            return
        if t == "attribute":
            d = self.folder.dotted(node)
            if d is not None:
                api = self.api_of(d)
                if api is not None:
                    line, col, end_line, end_col = self.pos(node)
                    ctx.kernel.api_refs.append(ApiRef(api, line, col, end_line, end_col))
                    return
                names.add(d.split(".", 1)[0])
                return
            self._scan(node.child_by_field_name("object"), ctx, names, None)
            return
        if t == "keyword_argument":
            v = node.child_by_field_name("value")
            if v is not None:
                self._scan(v, ctx, names, None)
            return
        if t == "binary_operator" and self.text(node.child_by_field_name("operator")) == "-":
            self._subtraction(node, node.child_by_field_name("left"), node.child_by_field_name("right"), ctx)
        elif t == "expression_statement":
            self._mark_bare(node)
        for c in node.named_children:
            self._scan(c, ctx, names, None)

    def _scan_names(self, node, out: set[str]) -> None:
        """Identifiers read in an expression (no fact recording)."""
        stack = [node]
        while stack:
            n = stack.pop()
            if n.type == "identifier":
                out.add(self.text(n))
            elif n.type == "attribute":
                stack.append(n.child_by_field_name("object"))
            elif n.type == "keyword_argument":
                v = n.child_by_field_name("value")
                if v is not None:
                    stack.append(v)
            else:
                stack.extend(n.named_children)

    def _subtraction(self, node, a, b, ctx: _Ctx) -> None:
        if a is None or b is None:
            return
        ta, tb = self._tag(a, ctx), self._tag(b, ctx)
        if not ta or not tb:
            return
        dtypes = tuple(ctx.tiles[n].dtype if n in ctx.tiles else None
                       for n in (self.text(a), self.text(b)))
        line, col, end_line, end_col = self.pos(node)
        ctx.kernel.subtractions.append(Subtraction(line, col, end_line, end_col, ta, tb, dtypes, self.text(node)[:120]))

    def _tag(self, node, ctx: _Ctx) -> str | None:
        """Variance-pattern tags: square, mean, mean_sq (E[x^2]), sq_mean (E[x]^2)."""
        if node.type == "identifier":
            return ctx.tags.get(self.text(node))
        if not ctx.tags and _TAG_HINT.search(self.src, node.start_byte, node.end_byte) is None:
            return None
        while node.type == "parenthesized_expression" and node.named_children:
            node = node.named_children[0]
        t = node.type
        if t == "identifier":
            return ctx.tags.get(self.text(node))
        if t == "subscript":
            return self._tag(node.child_by_field_name("value"), ctx)
        if t == "binary_operator":
            op = self.text(node.child_by_field_name("operator"))
            a, b = node.child_by_field_name("left"), node.child_by_field_name("right")
            if op == "*" and self.text(a) == self.text(b):
                return _square_of(self._tag(a, ctx))
            if op == "**" and consts.as_int(self.folder.fold(b, ctx.env)) == 2:
                return _square_of(self._tag(a, ctx))
            if op in ("*", "/"):
                if consts.is_num(self.folder.fold(b, ctx.env)) or b.type == "identifier" and self._tag(b, ctx) is None:
                    return self._tag(a, ctx) if op == "/" or self._tag(a, ctx) else self._tag(b, ctx)
                if op == "*" and consts.is_num(self.folder.fold(a, ctx.env)):
                    return self._tag(b, ctx)
            return None
        if t != "call":
            return None
        api = self._call_api(node)
        if api is None:
            return None
        pos, kw = self._call_args(node)
        dst_style = "dst" in kw or (node.start_byte, node.end_byte) in self._bare_calls
        roles = ROLES.get(api, _DEFAULT_ROLES)[1 if dst_style else 0]
        bound = dict(zip(roles, pos)) | kw
        data = next((bound[r] for r in _DATA_ROLES if r in bound), None)
        op = self._op_name(bound.get("op") or bound.get("op0"))
        if api == "nl.square" or op == "nl.square" or (api in ("nl.multiply", "nisa.tensor_tensor") and
                                                         (api == "nl.multiply" or op == "nl.multiply") and
                                                         len(pos) >= 2 and self.text(pos[-2 if dst_style else 0]) ==
                                                         self.text(pos[-1 if dst_style else 1])):
            return _square_of(self._tag(data, ctx)) if data is not None else "square"
        if api in ("nl.multiply", "nisa.tensor_tensor") and "data1" in bound and "data2" in bound and \
                self.text(bound["data1"]) == self.text(bound["data2"]) and op == "nl.multiply":
            return _square_of(self._tag(bound["data1"], ctx))
        if api == "nl.power" and len(pos) >= 2 and consts.as_int(self.folder.fold(pos[1], ctx.env)) == 2:
            return _square_of(self._tag(pos[0], ctx))
        if api in _REDUCE_APIS or (api == "nisa.tensor_reduce" and op in ("nl.add", "nl.mean")):
            return _mean_of(self._tag(data, ctx)) if data is not None else "mean"
        if api in ("nl.multiply", "nisa.tensor_scalar") and data is not None:
            return self._tag(data, ctx)
        return None

    def _call(self, node, ctx: _Ctx, names: set[str], target: str | None) -> None:
        dotted, api = self._call_head(node)
        args = node.child_by_field_name("arguments")
        inner: set[str] = set()
        if args is not None:
            for c in args.named_children:
                self._scan(c, ctx, inner, None)
        names |= inner
        if api is None or api in ("range", "min", "max"):
            if dotted is None:
                fn = node.child_by_field_name("function")
                if fn is not None:
                    self._scan(fn, ctx, names, None)
            elif "." not in dotted:
                if api is None:
                    ctx.kernel.called_functions.add(dotted)
                if dotted in ("min", "max"):
                    ctx.kernel.guarded_names |= inner
                    ctx.kernel.guard_lines.add(node.start_point[0] + 1)
            else:
                names.add(dotted.split(".", 1)[0])
            return
        self._nki_call(node, api, args, ctx, inner, target)

    def _nki_call(self, node, api: str, args, ctx: _Ctx, inner: set[str], target: str | None) -> None:
        pos, kw = self._call_args(node)
        pos = [c for c in pos if c.type != "comment"]
        line, col, end_line, end_col = self.pos(node)
        bare = (node.start_byte, node.end_byte) in self._bare_calls
        dst_style = "dst" in kw or (api.startswith("nisa.") and bare and target is None) or \
            (api == "nl.load" and len(pos) >= 2)
        if api == "nl.store":
            dst_style = False
        call = Call(api=api, args=[self.text(p) for p in pos], kwargs={k: self.text(v) for k, v in kw.items()},
                    line=line, col=col, end_line=end_line, end_col=end_col, loops=list(ctx.loops),
                    target=target, names=frozenset(inner), dst_style=dst_style)
        ctx.kernel.api_refs.append(ApiRef(api, line, col, end_line, end_col))
        for k, v in kw.items():
            if k not in _CHECKED_KWARGS:
                continue
            kl, kc, kel, kec = self.pos(v.parent)
            ctx.kernel.api_refs.append(ApiRef(api, kl, kc, kel, kec, kwarg=k))
            if k == "mask":
                ctx.kernel.guard_lines.add(line)
        if api in _LIGHT_APIS:  # index/loop helpers: recorded, nothing to resolve
            call._src_shape_vals = call._first_shape_vals = call._alloc = call._kw_dtype = None  # type: ignore[attr-defined]
            ctx.kernel.calls.append(call)
            return
        roles = ROLES.get(api, _DEFAULT_ROLES)[1 if dst_style else 0]
        bound: dict[str, Any] = dict(zip(roles, pos))
        bound.update(kw)
        # what the call reads: for dst-style calls the destination's own names do not count
        read_names = set(inner)
        if dst_style and bound.get("dst") is not None:
            read_names = set()
            for r, n in bound.items():
                if r != "dst" and n is not None:
                    self._scan_names(n, read_names)
            if bound["dst"].type == "subscript":
                for sub in bound["dst"].children_by_field_name("subscript"):
                    self._scan_names(sub, read_names)
        call.dep_loops = self._dep_loops(read_names, ctx)
        first_shape = src_shape = None
        for role, n in bound.items():
            if n is None or n.type not in ("identifier", "subscript", "call"):
                continue
            if role in ("op", "op0", "op1"):
                continue
            name, shape, dtype, buf, param = self._region(n, ctx)
            if name is None or (n.type == "identifier" and name not in ctx.tiles):
                continue
            call.operands.append(Operand(role, self.text(n), name, _disp(shape), dtype, buf, param))
            if first_shape is None and role in _DATA_ROLES + ("y", "data2"):
                first_shape = shape
            if role == "src":
                src_shape = shape
        call._src_shape_vals = src_shape  # type: ignore[attr-defined]
        call._first_shape_vals = first_shape  # type: ignore[attr-defined]
        call.op = self._op_name(bound.get("op") or bound.get("op0"))
        call._alloc = None  # type: ignore[attr-defined]
        call._kw_dtype = consts.canonical_dtype(self.folder.fold(kw["dtype"], ctx.env)) if "dtype" in kw else None  # type: ignore[attr-defined]
        ctx.kernel.calls.append(call)
        self._calls_by_node[node.start_byte] = call
        if api in ALLOC_APIS:
            call._alloc = self._allocation(call, api, pos, kw, target, ctx)  # type: ignore[attr-defined]
        elif api in MATMUL_APIS:
            self._matmul(call, api, kw, ctx)
        elif api in ("nl.load",) and not dst_style and target:
            self._implicit_load(call, kw, target, ctx)
        if api == "nl.subtract" and len(pos) >= 2:
            self._subtraction(node, pos[0], pos[1], ctx)
        elif api == "nisa.tensor_tensor" and call.op == "nl.subtract" and "data1" in bound and "data2" in bound:
            self._subtraction(node, bound["data1"], bound["data2"], ctx)
        if dst_style and "dst" in bound and bound["dst"] is not None:
            dnode = bound["dst"]
            dname = self._base_name(dnode)
            if dname:
                reads = read_names - ({dname} if dname not in inner_data_names(bound, self) else set())
                idx = self._index_names(dnode, ctx) if dnode.type == "subscript" else set()
                kind = "matmul" if api in MATMUL_APIS else ("add" if call.op == "nl.add" else "other")
                self._add_write(dname, node, "call", dnode.type == "subscript", reads | idx,
                                self._dep_loops(idx, ctx), None, ctx, value_kind=kind, api=api)
                tag = self._tag(node, ctx)
                if tag:
                    ctx.tags[dname] = tag
        self._tag_reduce_res(node, api, bound, ctx)

    def _tag_reduce_res(self, node, api: str, bound, ctx: _Ctx) -> None:
        """`activation(_reduce)(op=square, ..., reduce_op=add, reduce_res=s)`: `s` sums the squares (E[x^2])."""
        rr = bound.get("reduce_res")
        if api not in ("nisa.activation", "nisa.activation_reduce") or rr is None:
            return
        rname = self._base_name(rr)
        if rname and self._op_name(bound.get("reduce_op")) in ("nl.add", None):
            tag = self._tag(node, ctx)
            if tag:
                ctx.tags[rname] = _mean_of(tag)

    def _allocation(self, call: Call, api: str, pos, kw, target, ctx: _Ctx) -> Allocation | None:
        f = self.folder.fold
        like = api.endswith("_like")
        shape_vals: tuple | None = None
        if like:
            src = pos[0] if pos else kw.get("a")
            if src is not None:
                _, shape_vals, dt_like, buf_like, _ = self._region(src, ctx)
        else:
            sn = pos[0] if pos else kw.get("shape")
            sv = f(sn, ctx.env) if sn is not None else None
            if isinstance(sv, Tup):
                shape_vals = sv.items
            elif sv is not None:
                shape_vals = (sv,)
        dt_idx = 2 if api == "nl.full" else 1
        dnode = kw.get("dtype") or (pos[dt_idx] if len(pos) > dt_idx and not like else None)
        dtype = consts.canonical_dtype(f(dnode, ctx.env)) if dnode is not None else None
        if dtype is None and like and pos:
            dtype = dt_like
        bnode = kw.get("buffer")
        if bnode is not None:
            buffer = consts.canonical_buffer(f(bnode, ctx.env)) or "unknown"
            if buffer == "unknown":  # direct allocation: `ncc.psum.mod_alloc(...)`, `nki.compiler.sbuf.alloc(fn)`
                direct = _DIRECT_ALLOC.match(self.text(bnode))
                buffer = direct.group(1) if direct else buffer
        else:
            buffer = "sbuf"
        pdim = None
        if shape_vals is not None:
            pdim = next((i for i, d in enumerate(shape_vals) if isinstance(d, ParDim)), None)
            if pdim is None and buffer in ("sbuf", "psum", "unknown"):
                pdim = 0
            shape_vals = tuple(d.value if isinstance(d, ParDim) else d for d in shape_vals)
        line, col, end_line, end_col = call.line, call.col, call.end_line, call.end_col
        a = _make_alloc(target, line, col, end_line, end_col, api, shape_vals, dtype, buffer, pdim, ctx)
        ctx.kernel.allocations.append(a)
        return a

    def _implicit_load(self, call: Call, kw, target: str, ctx: _Ctx) -> None:
        shape_vals = call._src_shape_vals  # type: ignore[attr-defined]
        src = call.operand("src")
        dtype = consts.canonical_dtype(self.folder.fold(kw["dtype"], ctx.env)) if "dtype" in kw else None
        dtype = dtype or (src.dtype if src else None)
        if shape_vals is None:
            return
        a = _make_alloc(target, call.line, call.col, call.end_line, call.end_col, call.api, shape_vals, dtype,
                        "sbuf", 0, ctx, implicit=True)
        ctx.kernel.allocations.append(a)

    def _matmul(self, call: Call, api: str, kw, ctx: _Ctx) -> None:
        if api == "nl.matmul":
            x, y = call.operand("x"), call.operand("y")
            tx = self.folder.fold(kw["transpose_x"], ctx.env) is True if "transpose_x" in kw else False
            xs = x.shape if x else None
            ys = y.shape if y else None
            K = M = N = None
            if xs and len(xs) == 2:
                K, M = (xs[0], xs[1]) if tx else (xs[1], xs[0])
            if ys and len(ys) == 2:
                N = ys[1]
                K = K if K is not None else ys[0]
            mm = Matmul(call, x, y, call.operand("dst"), _int(K), _int(M), _int(N), bool(tx))
        else:
            st, mv = call.operand("stationary"), call.operand("moving")
            K = st.shape[0] if st and st.shape else (mv.shape[0] if mv and mv.shape else None)
            M = st.free_elems if st else None
            N = mv.free_elems if mv else None
            pm = kw.get("perf_mode")
            if pm is not None and "double_row" in self.text(pm):  # [K, 2, M] x [K, 2, N]: 2 rows per partition
                M = M // 2 if isinstance(M, int) else M
                N = N // 2 if isinstance(N, int) else N
            mm = Matmul(call, st, mv, call.operand("dst"), _int(K), _int(M), _int(N))
        ctx.kernel.matmuls.append(mm)
        if not call.dst_style and call.target and mm.M is not None and mm.N is not None:
            a = _make_alloc(call.target, call.line, call.col, call.end_line, call.end_col, api,
                            (mm.M, mm.N), "float32", "psum", 0, ctx, implicit=True)
            ctx.kernel.allocations.append(a)


def inner_data_names(bound: dict, ex: "Extractor") -> set[str]:
    """Names read by the non-destination operands of a dst-style call."""
    out: set[str] = set()
    for r, n in bound.items():
        if r != "dst" and n is not None:
            ex._scan_names(n, out)
    return out


_DIRECT_ALLOC = re.compile(r"^[\w.]*?\b(psum|sbuf)\.(?:mod_alloc|alloc)\s*\(")


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _disp(shape: tuple | None) -> tuple | None:
    if shape is None:
        return None
    display = consts.display
    return tuple([display(d) for d in shape])


def _square_of(tag: str | None) -> str:
    return "sq_mean" if tag == "mean" else "square"


def _mean_of(tag: str | None) -> str:
    return "mean_sq" if tag == "square" else "mean"


def _make_alloc(name, line, col, end_line, end_col, api, shape_vals, dtype, buffer, pdim, ctx: _Ctx,
                implicit: bool = False) -> Allocation:
    shape = _disp(shape_vals)
    elem = DTYPE_BYTES.get(dtype) if dtype else None
    partitions = None
    blocks = free = bpp = None
    block_dims: tuple = ()
    if shape is not None and pdim is not None and pdim < len(shape):
        partitions = shape[pdim]
        block_dims = shape[:pdim]
        blocks = _prod(block_dims)
        fe = _prod(shape[pdim + 1:]) if len(shape) > pdim + 1 else 1
        if fe is not None and elem is not None:
            free = fe * elem
        if free is not None and blocks is not None:
            bpp = blocks * free
    a = Allocation(name=name, line=line, col=col, end_line=end_line, end_col=end_col, api=api, shape=shape,
                   dtype=dtype, buffer=buffer, partition_dim=pdim, block_dims=block_dims,
                   bytes_per_partition=bpp if buffer in ("sbuf", "psum", "unknown") else None,
                   loop_depth=len(ctx.loops), loops=list(ctx.loops), partitions=partitions,
                   free_bytes=free, blocks=blocks, implicit=implicit)
    a._shape_vals = shape_vals  # type: ignore[attr-defined]
    return a


def _prod(dims) -> int | None:
    n = 1
    for d in dims:
        if not isinstance(d, int):
            return None
        n *= d
    return n
