"""The CUDA walker core: one pass over the tree-sitter tree, dispatching each node type to the collector that
records its facts (parse/cuda_facts/: decls, statements, branches, loops, calls, shared, assign)."""

from __future__ import annotations

import re

from .cuda_consts import FunctionMacro, Number, fold
from .cuda_facts import assign, branches, calls, decls, loops, shared, statements
from .cuda_model import CudaFile, CudaSyntaxError
from .cuda_state import _SKIP, MAX_DEPTH, _KernelState

# Expression nodes whose subtree holds no fact unless its text has one of these tokens.
_PRUNABLE = frozenset({"binary_expression", "parenthesized_expression", "unary_expression", "cast_expression",
                       "argument_list", "condition_clause", "init_declarator", "subscript_argument_list",
                       "sizeof_expression", "comma_expression", "initializer_list", "qualified_identifier"})
_INTERESTING = re.compile(rb"[(\[=?]|Idx|Dim|\+\+|--|asm")


class _Walker:
    def __init__(self, src: bytes, out: CudaFile, has_error: bool):
        self.src = src
        self.out = out
        self.has_error = has_error
        self.env: dict[str, Number] = {}
        self.macros: dict[str, FunctionMacro] = {}
        self.ks: _KernelState | None = None
        self.host_env: dict[str, Number] | None = None
        self.host_dims: dict[str, list[str]] = {}
        self.unroll_pragmas: dict[int, str] = {}  # line -> `#pragma unroll` argument (blanked in src)
        self.pending_template: list[str] = []
        self.stmt = None
        self.depth = 0
        self.deep_note = False
        self.ascii_rows: set[int] | None = None
        self.line_bytes = src.split(b"\n")

    # -- helpers ---------------------------------------------------------------------------------
    def text(self, node) -> str:
        return self.src[node.start_byte:node.end_byte].decode("utf-8", "replace")

    @staticmethod
    def line(node) -> int:
        return node.start_point[0] + 1

    def column(self, node) -> int:
        row, col = node.start_point
        raw = self.line_bytes[row][:col] if row < len(self.line_bytes) else b""
        return (col if raw.isascii() else len(raw.decode("utf-8", "replace"))) + 1

    def fold(self, text: str) -> Number | None:
        env = self.ks.env if self.ks else (self.host_env if self.host_env is not None else self.env)
        return fold(text, env, self.macros)

    # -- walk ------------------------------------------------------------------------------------
    def run(self, root) -> None:
        if self.has_error:
            self._collect_errors(root)
        self.visit(root)
        for launch in self.out.launches:
            for k in self.out.kernels:
                if k.name == launch.kernel and k.qualifier == "global":
                    k.launches.append(launch)
        self.out.defines = {k: v for k, v in self.env.items()}
        device = {k.name for k in self.out.kernels if k.qualifier == "device"}
        for k in self.out.kernels:
            k.calls = [c for c in k.calls if c[0] in device]

    def visit(self, node) -> None:
        handler = _HANDLERS.get(node.type)
        if handler is not None:
            handler(self, node)
        else:
            self.children(node)

    def children(self, node) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            if not self.deep_note:
                self.deep_note = True
                self.out.notes.append(f"nesting deeper than {MAX_DEPTH} at line {self.line(node)}; facts below it skipped")
        else:  # anonymous tokens, leaves and fact-free subtrees need no visit
            get = _HANDLERS.get
            for c in node.named_children:
                if c.child_count:
                    t = c.type
                    if t in _SKIP:
                        continue
                    if t in _PRUNABLE and not _INTERESTING.search(self.src, c.start_byte, c.end_byte):
                        continue  # e.g. `row * N + col`: no call, subscript, builtin or assignment inside
                    handler = get(t)
                    if handler is None:
                        self.children(c)
                    else:
                        handler(self, c)
        self.depth -= 1

    def _collect_errors(self, root) -> None:
        """ERROR and MISSING nodes, descending only into subtrees that contain one."""
        stack = [root]
        while stack and len(self.out.syntax_errors) < 50:
            node = stack.pop()
            if node.type == "ERROR" or node.is_missing:
                self._syntax_error(node)
                if node.type != "ERROR":
                    continue
            stack.extend(c for c in reversed(node.children) if c.has_error or c.is_missing)
        self.out.syntax_errors.sort()

    def _syntax_error(self, node) -> None:
        if len(self.out.syntax_errors) >= 50:
            return
        if node.is_missing:
            msg = f"missing {node.type!r}"
        else:
            snippet = " ".join(self.text(node).split())[:60]
            msg = f"cannot parse: {snippet!r}" if snippet else "cannot parse here"
        self.out.syntax_errors.append(CudaSyntaxError(self.line(node), self.column(node), msg))



_HANDLERS = {
    "preproc_def": decls.preproc_def,
    "preproc_function_def": decls.preproc_function_def,
    "template_declaration": decls.template_declaration,
    "function_definition": decls.function_definition,
    "declaration": decls.declaration,
    "expression_statement": statements.statement,
    "return_statement": statements.statement,
    "for_statement": loops.loop,
    "while_statement": loops.loop,
    "do_statement": loops.loop,
    "for_range_loop": loops.loop,
    "if_statement": branches.if_statement,
    "conditional_expression": branches.conditional,
    "field_expression": statements.field_expression,
    "call_expression": calls.call,
    "gnu_asm_expression": calls.gnu_asm,
    "subscript_expression": shared.subscript,
    "update_expression": assign.update_expression,
    "assignment_expression": assign.assignment,
}
