"""Small helpers over Python's own `ast` (the simulator and a few rules read kernel source with it)."""

from __future__ import annotations

import ast


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
_FIELDS: dict[type, tuple[str, ...]] = {}
_BRANCH_FIELDS: dict[type, tuple[str, ...]] = {}


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """`list(ast.iter_child_nodes(node))`, the same nodes in the same order, without its generator."""
    kind = type(node)
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(kind._fields)
    return _children(node, names)


def branch_nodes(node: ast.AST) -> list[ast.AST]:
    """The child nodes of `node` in `ast.iter_child_nodes` order, less the operator and context singletons;
    about three times faster (field names looked up once per node type)."""
    kind = type(node)
    names = _BRANCH_FIELDS.get(kind)
    if names is None:
        names = _BRANCH_FIELDS[kind] = tuple(f for f in kind._fields if f not in _LEAF_FIELDS)
    return _children(node, names)


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
