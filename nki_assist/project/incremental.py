"""The Python-level pass of one document, kept between its versions (the language server's edits).

The file is parsed whole; its top-level statement groups (by text and place) key the results kept from the
last version: the index facts of each function body, and pyflakes' messages per top-level function (run
with every module-level name bound; the module itself is analysed once more with function bodies stubbed
out). An edit inside one kernel re-analyses that kernel only. `tests/project/test_incremental_python.py` checks that every result equals
the whole-file one.
"""

from __future__ import annotations

import ast
import bisect
import copy
from functools import cache
from typing import Any

from ..parse.pyast import child_nodes


class PythonMemo:
    """One document's reusable Python-level work (kept on its `ParseCache.extra`). It holds results keyed by
    the text of the top-level statement they come from, never syntax trees: a document's memory stays what
    its results need."""

    def __init__(self) -> None:
        self.scoped: dict[tuple[int, str], bool] = {}  # segment -> has a `global`/`nonlocal` statement
        self.bodies: dict[Any, Any] = {}  # (segment, def position, module context) -> body facts
        self.flakes: dict[Any, list] = {}  # (segment, def position, module names) -> pyflakes messages
        self._used_bodies: dict[Any, Any] = {}
        self._used_flakes: dict[Any, list] = {}
        self._starts: list[int] = []  # first line (decorators included) of each top-level statement
        self._keys: list[tuple[int, str]] = []
        self.exact = False  # per-function pyflakes equals whole-module pyflakes for the current tree

    # ---- the tree ----------------------------------------------------------------------------------
    def tree(self, text: str, path: str) -> ast.Module:
        """The module's ast (parsed whole: raises SyntaxError like ast.parse), with each top-level statement's
        text and place noted so that the results of unchanged ones are found again."""
        tree = ast.parse(text, filename=path)
        lines = text.split("\n")
        starts, keys = [], []
        for st in tree.body:
            first = min([st.lineno] + [d.lineno for d in getattr(st, "decorator_list", [])])
            last = st.end_lineno or st.lineno
            starts.append(first)
            keys.append((first, "\n".join(lines[first - 1:last])))
        self._starts, self._keys = starts, keys
        scoped: dict[tuple[int, str], bool] = {}
        for st, key in zip(tree.body, keys):
            prev = self.scoped.get(key)
            scoped[key] = prev if prev is not None else \
                any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(st))
        self.scoped = scoped
        self.exact = not any(scoped.values()) and not _star_import(tree)
        return tree

    def key_for(self, node: ast.AST) -> tuple[int, str] | None:
        """The top-level statement group a node of the current tree lies in."""
        if not self._keys:
            return None
        i = bisect.bisect_right(self._starts, getattr(node, "lineno", 1)) - 1
        return self._keys[i] if i >= 0 else None

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
        if not self.exact or not self._keys:  # a `*` import or a `global`: analyse the whole module
            return flakes(tree, path)
        lines = binding_lines(tree)  # every module-level name, with the line of the binding pyflakes sees
        names = frozenset(lines)
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
        out = flakes(ast.Module(body=skeleton, type_ignores=[]), path)
        for fn in functions:
            key = (self.key_for(fn), fn.lineno, fn.col_offset, names)
            msgs = self.flakes.get(key)
            if msgs is None:
                header = [_bind(n) for n in sorted(names - {fn.name})]
                first = fn.body[0].lineno
                msgs = [m for m in flakes(ast.Module(body=header + [fn], type_ignores=[]), path)
                        if m.lineno >= first]
            self._used_flakes[key] = msgs
            out.extend(_relined(m, lines) for m in msgs)
        self.flakes, self._used_flakes = self._used_flakes, {}
        return out


def flakes(tree: ast.Module, path: str) -> list:
    """pyflakes' messages for `tree`, leaving no reference cycle behind. pyflakes ties each node it visits to
    its parent (`node._pyflakes_parent`) and each scope to the bindings used in it (`binding.used`), so the
    tree and the checker were garbage only a full collection frees; the language server freezes what a check
    leaves and collects only when documents close (lsp_server/memory.py), so every check's tree stayed
    resident until then (47k objects for the 1,000-line benchmark file). Untied, they go with the check."""
    flake = _untying_checker()(tree, filename=path)
    messages = flake.messages
    flake.untie()
    return messages


@cache
def _untying_checker():
    from pyflakes.checker import Checker, _FieldsOrder  # deferred: only the Python-level pass needs pyflakes

    field_order = _FieldsOrder()  # pyflakes' order of a node's fields (iter before target, ...)

    class UntyingChecker(Checker):
        def __init__(self, tree, *args, **kwargs):
            self._visited: list[ast.AST] = []
            self._typing = _typing_names(tree)
            super().__init__(tree, *args, **kwargs)

        def CALL(self, node):
            # pyflakes' CALL tests the callee against typing's cast/TypeVar/TypedDict/NamedTuple (a walk up the
            # scopes each, at every call) and a `"...".format` call. The tests can hold only for a name some
            # import of typing binds (`cast`, `typing.cast`); for any other callee CALL is handleChildren.
            func = node.func
            cls = func.__class__
            if cls is ast.Name:
                typed = func.id in self._typing
            elif cls is ast.Attribute:
                value = func.value
                typed = func.attr == "format" or value.__class__ is ast.Name and value.id in self._typing
            else:
                typed = False
            if typed:
                return super().CALL(node)
            self.handleChildren(node)

        def handleNode(self, node, parent):
            # pyflakes' handleNode (the same in 3.2-3.4, the versions pyproject allows) plus the list `untie`
            # reads, with its two tests of the future-import rule swapped: the cheap `nodeDepth == 0` first,
            # not the `futuresAllowed` property (a generator over the scopes) at every node: a quarter of
            # pyflakes' time. tests/project/test_incremental_python.py compares the messages with pyflakes'.
            if node is None:
                return
            self._visited.append(node)
            if self.offset and getattr(node, 'lineno', None) is not None:
                node.lineno += self.offset[0]
                node.col_offset += self.offset[1]
            if self.nodeDepth == 0 and self.futuresAllowed and not isinstance(node, ast.ImportFrom) and \
                    not self.isDocstring(node):
                self.futuresAllowed = False
            self.nodeDepth += 1
            node._pyflakes_depth = self.nodeDepth
            node._pyflakes_parent = parent
            try:
                self.getNodeHandler(node.__class__)(node)
            finally:
                self.nodeDepth -= 1

        def handleChildren(self, tree, omit=None):
            # pyflakes' handleChildren (its iter_child_nodes order) without the generator, and without visiting
            # the nodes whose handler does nothing: the context and operator singletons (`ignore`) and a
            # constant outside an annotation (CONSTANT only defers a string annotation). None of them is a
            # binding's source nor an ancestor pyflakes looks up, so the messages are the same; a fifth of
            # the nodes pyflakes visited.
            handle = self.handleNode
            for name in field_order[tree.__class__]:
                if omit and name in omit:
                    continue
                field = getattr(tree, name, None)
                if isinstance(field, AST):
                    cls = field.__class__
                    if cls in _IGNORED or cls is Constant and not self._in_annotation:
                        continue
                    handle(field, tree)
                elif isinstance(field, list):
                    for item in field:
                        if isinstance(item, AST):
                            cls = item.__class__
                            if cls in _IGNORED or cls is Constant and not self._in_annotation:
                                continue
                            handle(item, tree)

        def untie(self) -> None:
            for node in self._visited:
                node.__dict__.pop("_pyflakes_parent", None)
            for scope in self.deadScopes + self.scopeStack:
                scope.clear()  # bindings point back at their scope
            self.__dict__.clear()  # its handler cache holds bound methods of itself

    # the node types pyflakes handles with `handleChildren` itself (ASSIGN, FOR, ATTRIBUTE, ...) get the one above
    for attr, value in vars(Checker).items():
        if value is Checker.handleChildren:
            setattr(UntyingChecker, attr, UntyingChecker.handleChildren)
    return UntyingChecker


AST, Constant = ast.AST, ast.Constant
# node types whose pyflakes handler is `ignore` and that never stand at module level (so they play no part in
# the future-import test): expression contexts and operators
_IGNORED = frozenset(t for base in (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)
                     for t in base.__subclasses__())


def _typing_names(tree: ast.AST) -> frozenset[str]:
    """The names any import in `tree` binds to typing or typing_extensions (pyflakes' TYPING_MODULES) or to
    something from them: only a name so bound can be typing's for pyflakes (`_is_typing`)."""
    out: set[str] = set()
    stack = [tree]
    while stack:
        st = stack.pop()
        if isinstance(st, ast.Import):
            out.update((a.asname or a.name).split(".")[0] for a in st.names
                       if a.name.split(".")[0] in ("typing", "typing_extensions"))
        elif isinstance(st, ast.ImportFrom):
            if (st.module or "").split(".")[0] in ("typing", "typing_extensions"):
                out.update(a.asname or a.name for a in st.names)
        else:
            for part in ("body", "orelse", "finalbody", "handlers", "cases"):
                sub = getattr(st, part, None)
                if type(sub) is list:
                    stack.extend(sub)
    return frozenset(out)


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


def _relined(message, lines: dict[str, int]):
    """A per-function message as the whole-module run gives it. "local variable 'x' defined in enclosing scope
    on line N" names the module's binding of x, which the per-function run only has as a line-1 stand-in (and
    a kept message may predate an edit that moved it)."""
    from pyflakes.messages import UndefinedLocal

    if isinstance(message, UndefinedLocal) and message.message_args[0] in lines:
        message = copy.copy(message)
        message.message_args = (message.message_args[0], lines[message.message_args[0]])
    return message


def binding_lines(tree: ast.Module) -> dict[str, int]:
    """Every name bound at module level (under if/try/with/for too) -> the line of its last binding in source
    order: the binding pyflakes' deferred function bodies see (the node it records: the import statement, the
    stored name, the def or class line). A stack, not recursion: a module-level expression may nest deeply."""
    out: dict[str, int] = {}
    stack: list[ast.AST | tuple[str, int]] = list(reversed(tree.body))
    while stack:
        n = stack.pop()
        if isinstance(n, tuple):  # a def's or class's name, bound after its decorators are read
            out[n[0]] = n[1]
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.append((n.name, n.lineno))  # its body is its own scope
            stack.extend(reversed(n.decorator_list))
        elif isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out[(a.asname or a.name).split(".")[0]] = n.lineno
        elif isinstance(n, ast.Assign):  # pyflakes binds the targets after reading the value
            stack.extend(reversed(n.targets))
            stack.append(n.value)
        else:
            if isinstance(n, ast.ExceptHandler) and n.name:
                out[n.name] = n.lineno
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out[n.id] = n.lineno
            stack.extend(reversed(child_nodes(n)))
    return out


def _bind(name: str) -> ast.stmt:
    """`name = None` at line 1 (a module-level binding the function may read)."""
    return ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store(), lineno=1, col_offset=0, end_lineno=1,
                                        end_col_offset=len(name))],
                      value=ast.Constant(value=None, lineno=1, col_offset=0, end_lineno=1, end_col_offset=4),
                      lineno=1, col_offset=0, end_lineno=1, end_col_offset=4)
