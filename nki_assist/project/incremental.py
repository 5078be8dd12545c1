"""The Python-level pass of one document, kept between its versions (the language server's edits).

Each top-level statement group is parsed on its own (padded with newlines, so positions are the file's) and
kept while its text and place are unchanged; the module's ast is their bodies joined. The index reuses the
facts of unchanged function bodies, and pyflakes runs per top-level function (with every module-level
name bound) plus once over the module with function bodies stubbed out, so an edit inside one kernel
re-analyses that kernel only. `tests/project/test_incremental_python.py` checks that every result equals
the whole-file one.
"""

from __future__ import annotations

import ast
import copy
import re
from typing import Any

_START = re.compile(r"[^\s#)\]}]")


class PythonMemo:
    """One document's reusable Python-level work (kept on its `ParseCache.extra`)."""

    def __init__(self) -> None:
        self.segments: dict[tuple[int, str], ast.Module] = {}
        self.scoped: dict[tuple[int, str], bool] = {}  # segment -> has a `global`/`nonlocal` statement
        self.exact = True  # per-function pyflakes equals whole-module pyflakes for the current tree
        self.bodies: dict[Any, Any] = {}  # (FunctionDef node, module context) -> body facts
        self.flakes: dict[Any, list] = {}  # (FunctionDef node, module names) -> pyflakes messages
        self._used_bodies: dict[Any, Any] = {}
        self._used_flakes: dict[Any, list] = {}

    # ---- the tree ----------------------------------------------------------------------------------
    def tree(self, text: str, path: str) -> ast.Module:
        """The module's ast, from the unchanged segments' trees and the changed ones parsed again.
        Raises SyntaxError like ast.parse (a split that does not parse falls back to the whole text)."""
        lines = text.split("\n")
        starts = [i for i, ln in enumerate(lines) if ln[:1] and _START.match(ln[:1])
                  and not (i and lines[i - 1].startswith("@"))]
        if not starts or starts[0] != 0:
            starts.insert(0, 0)
        used: dict[tuple[int, str], ast.Module] = {}
        scoped: dict[tuple[int, str], bool] = {}
        body: list[ast.stmt] = []
        try:
            for a, b in zip(starts, starts[1:] + [len(lines)]):
                seg = "\n".join(lines[a:b])
                key = (a, seg)
                mod = self.segments.get(key)
                if mod is None:
                    mod = ast.parse("\n" * a + seg, filename=path)
                    scoped[key] = any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(mod))
                else:
                    scoped[key] = self.scoped[key]
                used[key] = mod
                body.extend(mod.body)
        except SyntaxError:
            self.segments, self.scoped, self.exact = {}, {}, False
            return ast.parse(text, filename=path)
        self.segments, self.scoped = used, scoped
        tree = ast.Module(body=body, type_ignores=[])
        self.exact = not any(scoped.values()) and not _star_import(tree)
        return tree

    # ---- round bookkeeping -------------------------------------------------------------------------
    def body_facts(self, key: Any, make) -> Any:
        value = self.bodies.get(key)
        if value is None:
            value = make()
        self._used_bodies[key] = value
        return value

    def finish_index(self) -> None:
        self.bodies, self._used_bodies = self._used_bodies, {}

    # ---- pyflakes ------------------------------------------------------------------------------------
    def pyflakes(self, tree: ast.Module, path: str) -> list:
        """pyflakes' messages for the module, per top-level function where that is exact (no `*` import, no
        `global`), else over the whole module."""
        from pyflakes import checker

        if not self.exact or not self.segments:  # a `*` import or a `global`: analyse the whole module
            return list(checker.Checker(tree, filename=path).messages)
        names = frozenset(module_names(tree))
        skeleton, functions = [], []
        for st in tree.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and st.body:
                stub = copy.copy(st)
                stub.body = [ast.Pass(lineno=st.body[0].lineno, col_offset=st.body[0].col_offset,
                                      end_lineno=st.body[0].lineno, end_col_offset=st.body[0].col_offset)]
                skeleton.append(stub)
                functions.append(st)
            else:
                skeleton.append(st)
        out = list(checker.Checker(ast.Module(body=skeleton, type_ignores=[]), filename=path).messages)
        for fn in functions:
            key = (fn, names)
            msgs = self.flakes.get(key)
            if msgs is None:
                header = [_bind(n) for n in sorted(names - {fn.name})]
                first = fn.body[0].lineno
                msgs = [m for m in checker.Checker(ast.Module(body=header + [fn], type_ignores=[]),
                                                   filename=path).messages if m.lineno >= first]
            self._used_flakes[key] = msgs
            out.extend(msgs)
        self.flakes, self._used_flakes = self._used_flakes, {}
        return out


def _star_import(tree: ast.Module) -> bool:
    stack = list(tree.body)
    while stack:
        st = stack.pop()
        if isinstance(st, ast.ImportFrom) and any(a.name == "*" for a in st.names):
            return True
        if isinstance(st, (ast.If, ast.Try, ast.With)):
            stack += st.body + getattr(st, "orelse", []) + getattr(st, "finalbody", [])
            stack += [s for h in getattr(st, "handlers", []) for s in h.body]
    return False


def _bind(name: str) -> ast.stmt:
    """`name = None` at line 1 (a module-level binding the function may read)."""
    return ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store(), lineno=1, col_offset=0, end_lineno=1,
                                        end_col_offset=len(name))],
                      value=ast.Constant(value=None, lineno=1, col_offset=0, end_lineno=1, end_col_offset=4),
                      lineno=1, col_offset=0, end_lineno=1, end_col_offset=4)


def module_names(tree: ast.Module) -> set[str]:
    """Every name bound at module level (under if/try/with/for too)."""
    out: set[str] = set()
    stack: list[ast.AST] = list(tree.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)  # its body is its own scope
            stack.extend(getattr(n, "decorator_list", []))
            continue
        if isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in n.names}
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
        elif isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
        stack.extend(ast.iter_child_nodes(n))
    return out
