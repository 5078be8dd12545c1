"""Small helpers over Python's own `ast` (the simulator and a few rules read kernel source with it)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable


def dotted_name(node: ast.AST | None) -> str:
    """`nl.float8_e4m3` -> "nl.float8_e4m3"; a call stands for its callee (`nki.jit(...)` -> "nki.jit");
    "" when the node is not a (dotted) name."""
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def python_syntax_error(text: str, path: str = "<file>") -> tuple[int, int, str] | None:
    """Where CPython stops on `text`: (line, column, message), or None when it compiles to an AST."""
    try:
        ast.parse(text, filename=path)
    except SyntaxError as exc:
        return exc.lineno or 1, exc.offset or 1, exc.msg or "invalid syntax"
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, pathological nesting
        return 1, 1, str(exc) or type(exc).__name__
    return None


# fields that hold only operator / context singletons (`Load()`, `Add()`, `Eq()`): nodes without children that no
# reader of a tree looks for, which `ast.iter_child_nodes` yields anyway
_LEAF_FIELDS = frozenset({"ctx", "op", "ops"})
_CHILDREN: dict[type, Callable[[ast.AST], list[ast.AST]]] = {}
_BRANCHES: dict[type, Callable[[ast.AST], list[ast.AST]]] = {}


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """`list(ast.iter_child_nodes(node))`, the same nodes in the same order, without its generator."""
    try:
        return _CHILDREN[type(node)](node)
    except KeyError:
        return _list_with(_CHILDREN, node, ())
    except AttributeError:  # a node built without one of its fields
        return _children(node, type(node)._fields)


def branch_nodes(node: ast.AST) -> list[ast.AST]:
    """The child nodes of `node` in `ast.iter_child_nodes` order, less the operator and context singletons;
    about three times faster."""
    try:
        return _BRANCHES[type(node)](node)
    except KeyError:
        return _list_with(_BRANCHES, node, _LEAF_FIELDS)
    except AttributeError:
        return _children(node, tuple(f for f in type(node)._fields if f not in _LEAF_FIELDS))


def _list_with(listers: dict, node: ast.AST, leave_out: frozenset[str] | tuple) -> list[ast.AST]:
    kind = type(node)
    listers[kind] = _lister(kind, tuple(f for f in kind._fields if f not in leave_out))
    return branch_nodes(node) if listers is _BRANCHES else child_nodes(node)


# the kinds of field ASDL signatures name (`Call(expr func, expr* args, keyword* keywords)`, a node class's
# docstring) that hold a plain value, never a node: the lister of a node type reads its other fields only
_VALUE_TYPES = frozenset({"identifier", "string", "constant", "int", "bytes", "object"})
_SIGNATURE = re.compile(r"(\w+)\((.*)\)")


def _lister(kind: type, names: tuple[str, ...]) -> Callable[[ast.AST], list[ast.AST]]:
    """A function listing a `kind` node's child nodes in `names` order: `_children` unrolled for the type, its
    value fields (names, numbers, strings) left out. Field access is direct: a node missing a field raises
    AttributeError, which the callers answer with `_children`."""
    kinds: dict[str, str] = {}
    sig = _SIGNATURE.fullmatch((kind.__doc__ or "").strip().split("\n")[0])
    if sig is not None and sig.group(1) == kind.__name__:
        for part in filter(None, (p.strip() for p in sig.group(2).split(","))):
            typ, _, name = part.partition(" ")
            kinds[name] = typ.rstrip("*?")
        if list(kinds) != list(kind._fields):
            kinds = {}
    lines = ["def children(n):", "    out = []"]
    for name in names:
        if kinds.get(name) in _VALUE_TYPES:
            continue
        lines += [f"    v = n.{name}",
                  "    if isinstance(v, AST):", "        out.append(v)",
                  "    elif type(v) is list:", "        for x in v:",
                  "            if isinstance(x, AST):", "                out.append(x)"]
    lines.append("    return out")
    scope = {"AST": ast.AST}
    exec("\n".join(lines), scope)  # noqa: S102 (source made here from the node class's field names)
    return scope["children"]


def _children(node: ast.AST, names: tuple[str, ...]) -> list[ast.AST]:
    out: list[ast.AST] = []
    AST = ast.AST
    for name in names:
        value = getattr(node, name, None)
        if isinstance(value, AST):
            out.append(value)
        elif type(value) is list:
            for item in value:
                if isinstance(item, AST):
                    out.append(item)
    return out
