"""Source facts of the running program: the argument expressions of a call at a file:line."""

from __future__ import annotations

import ast
import linecache

_TREES: dict[str, ast.AST | None] = {}


def _tree(path: str):
    if path not in _TREES:
        try:
            _TREES[path] = ast.parse("".join(linecache.getlines(path)) or open(path, encoding="utf-8").read())
        except (OSError, SyntaxError, ValueError):
            _TREES[path] = None
    return _TREES[path]


def call_exprs(path: str | None, line: int | None, n_args: int, skip: int = 0) -> list[str | None]:
    """The source of each positional argument of the call at `path:line` that passes `n_args` (+ `skip`)."""
    tree = _tree(path) if path and line else None
    best = None
    if tree is not None:
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and node.lineno <= line <= (node.end_lineno or node.lineno)
                    and len(node.args) == n_args + skip and not any(isinstance(a, ast.Starred) for a in node.args)):
                if best is None or (node.lineno, node.col_offset) > (best.lineno, best.col_offset):
                    best = node
    if best is None:
        return [None] * n_args
    return [ast.unparse(a) for a in best.args[skip:]]
