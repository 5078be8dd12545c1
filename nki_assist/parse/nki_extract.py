"""The walker core: one walk over a tree-sitter Python tree that turns NKI kernels into facts (nki_model).

This module holds positions, text, name resolution, call heads/arguments and the statement dispatch; the
facts of each kind are recorded by a collector in parse/nki_facts/ (loops, asserts, writes, calls,
allocations, matmul, tags, shapes), which receives the walker as `ex`.

Statements are visited once, in source order, with the enclosing loop stack; expressions are
scanned once per statement. Constant folding (consts.py) runs against a per-kernel Env whose names
are bound once; names assigned more than once stay symbols.
"""

from __future__ import annotations

import inspect
import re

from .consts import Env, Folder, Lin
from .nki_branches import shape_branches
from .nki_facts import asserts, calls, loops, tags, writes

# a call whose name says it asserts (nki-library's `kernel_assert(cond, msg)`): a guard like `assert cond`
ASSERT_HELPER = re.compile(r"(?:^|_)assert(?:_|$)", re.I)
from .nki_facts.common import (  # noqa: F401 (re-exported)
    _SCAN_LEAVES,
    _STMT_TYPES,
    KERNEL_DECORATORS,
    ROLES,
    Tile,
    _Ctx,
    canonical_api,
    inner_data_names,
    is_nki_api,
)
from .nki_model import ApiRef, Call, Loop, NkiKernel, Param, Return
from .nki_walk import NkiWalker


class Extractor(NkiWalker):
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
        self._kwarg_of: dict[tuple[int, int], object] = {}  # keyword value -> its `name=value` node
        # calls that are a whole expression statement, marked when the statement is visited
        # (Node.parent is slow in tree-sitter: it searches down from the root)
        self._bare_calls: set[tuple[int, int]] = set()
        if src.isascii():  # byte offsets are character offsets: slice a str, no per-node decode
            self._str = src.decode("ascii")
            self.text = self._text_ascii  # type: ignore[method-assign]
            self.pos = self._pos_ascii  # type: ignore[method-assign]
            self.folder.text = self._text_ascii  # type: ignore[method-assign]

    def close(self) -> None:
        """Drop the memos and the bound methods that point back at the walker (a reference cycle), so
        a parse's garbage is freed at once rather than by the cyclic collector."""
        self.__dict__.clear()

    # ---- functions ---------------------------------------------------------------------------
    def _docstring(self, body) -> str:
        """The function's docstring (a string literal as its first statement), '' when it has none."""
        first = next((c for c in body.named_children if c.type != "comment"), None)
        if first is None or first.type != "expression_statement" or first.named_child_count != 1:
            return ""
        lit = first.named_children[0]
        if lit.type != "string":
            return ""
        # the literal's text without prefix and quotes (escapes kept: the rules read words and numbers); no
        # `ast` here, which the review's threads would call concurrently
        m = re.fullmatch(r"(?s)[rRuU]?(\"\"\"|'''|\"|')(.*)\1", self.text(lit))
        return inspect.cleandoc(m.group(2)) if m else ""

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
        k.docstring = self._docstring(body)
        self._scan_assigns(body, ctx.assigns)
        ctx.multi = {n for n, p in ctx.assigns.items() if len(p) > 1}
        self._block(body, ctx)
        base = fn.start_byte  # byte offsets become relative to the `def`: facts do not move with the text above
        for lp in k.loops:
            lp.start_byte, lp.end_byte = lp.start_byte - base, lp.end_byte - base
        for a in k.assignments:
            a.start_byte -= base
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
                ctx.kernel.params.append(Param(name, line, col, splat=p.type in ("list_splat_pattern",
                                                                              "dictionary_splat_pattern")))
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
            loops.for_statement(self, st, ctx)
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
                ctx.nested += 1
                try:
                    self._block(body, ctx)
                finally:
                    ctx.nested -= 1
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
            if not ctx.nested:  # a closure's return hands a value to the kernel, it is no kernel output
                ctx.kernel.returns.append(Return(rnames, line, col, end_col))
            del names
        elif t == "assert_statement":
            asserts.assert_statement(self, st, ctx)
        else:
            self._scan_stmt_expr(st, ctx)

    def _mark_bare(self, st) -> None:
        for c in st.named_children:
            if c.type == "call":
                self._bare_calls.add((c.start_byte, c.end_byte))

    def _stmt_expr_node(self, c, ctx: _Ctx) -> None:
        if c.type == "assignment":
            writes.assign(self, c, ctx)
        elif c.type == "augmented_assignment":
            writes.augassign(self, c, ctx)
        else:
            self._scan_stmt_expr(c, ctx)

    def _scan_stmt_expr(self, node, ctx: _Ctx, target: str | None = None) -> set[str]:
        names: set[str] = set()
        if node is not None:
            self._scan(node, ctx, names, target)
            ctx.kernel.used_names |= names
        return names

    # ---- assignments -----------------------------------------------------------------------------

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

    # ---- tiles, shapes, regions ----------------------------------------------------------------------

    # ---- expressions -------------------------------------------------------------------------------
    def _scan(self, node, ctx: _Ctx, names: set[str], target: str | None) -> None:
        t = node.type
        if t == "identifier":
            names.add(self.text(node))
            return
        if t == "string":  # an f-string reads the names it interpolates
            for c in node.named_children:
                if c.type == "interpolation" and c.named_children:
                    self._scan(c.named_children[0], ctx, names, None)
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
            tags.subtraction(self, node, node.child_by_field_name("left"), node.child_by_field_name("right"), ctx)
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
                    ctx.kernel.local_calls.append((dotted, node.start_point[0] + 1, frozenset(inner)))
                    names.add(dotted)  # a parameter that is called (`activation_fn(x)`) is read
                    if ASSERT_HELPER.search(dotted) and args is not None and args.named_children:
                        # `kernel_assert(cond, msg)`: a library assert helper guards like `assert cond`
                        ctx.kernel.guarded_names |= inner
                        asserts.assert_facts(self, args.named_children[0], ctx.env)
                if dotted in ("min", "max"):
                    ctx.kernel.guarded_names |= inner
                    ctx.kernel.guard_lines.add(node.start_point[0] + 1)
            else:
                names.add(dotted.split(".", 1)[0])
            return
        calls.nki_call(self, node, api, args, ctx, inner, target)
