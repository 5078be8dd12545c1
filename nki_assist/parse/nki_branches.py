"""Shape special-casing facts: `if` tests that compare shape values to literal numbers, and what the
path taken for every other shape does (computes, raises, returns an input)."""

from __future__ import annotations

from functools import cache
from typing import Callable

from tree_sitter import QueryCursor

from .nki_model import ShapeBranch

_COMPUTE_HEADS = ("nl.", "nisa.", "nki.", "np.")
_NOT_COMPUTE = {"print", "len", "range", "min", "max", "int", "float", "abs", "isinstance", "tuple", "list"}
# allocating a tensor computes nothing: an unwritten output is still garbage
_ALLOC_TAILS = {"ndarray", "empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
                "par_dim", "arange", "mgrid", "ds"}
_NESTED = ("function_definition", "class_definition", "decorated_definition", "lambda")


def shape_branches(body, text: Callable, params: set[str]) -> list[ShapeBranch]:
    """ShapeBranch facts of a kernel body (nested function definitions are not entered)."""
    syms = _Symbols(body, text, params)
    out: list[ShapeBranch] = []
    _walk_block(body, text, params, syms, out)
    return out


class _Symbols:
    """The shape-symbol map, built on the first lookup: most kernels have no `if` that compares a name
    to a literal, and building it is a query over the whole body."""

    def __init__(self, body, text, params):
        self._args: tuple | None = (body, text, params)
        self._syms: dict[str, str] = {}

    def __contains__(self, name: str) -> bool:
        if self._args is not None:
            _shape_symbols(*self._args, self._syms)
            self._args = None
        return name in self._syms


@cache
def _query():
    import tree_sitter_python as tsp
    from tree_sitter import Language, Query

    return Query(Language(tsp.language()),
                 "(assignment) @a (function_definition) @d (class_definition) @d (lambda) @d")


def _shape_symbols(node, text, params, syms) -> None:
    """`R, D = x.shape` / `R = x.shape[0]` for kernel inputs `x`: symbol -> `x.shape[i]`.

    The first binding in the text wins; assignments inside nested definitions do not count. A
    tree-sitter query finds the assignments (a Python walk over every node cost ~10% of `check`)."""
    found = QueryCursor(_query()).captures(node)
    nested = [(d.start_byte, d.end_byte) for d in found.get("d", ())]
    for n in sorted(found.get("a", ()), key=lambda a: a.start_byte, reverse=True):
        if nested and any(s <= n.start_byte < e for s, e in nested):
            continue
        left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
        src = _shape_source(right, text, params)
        if src is not None and left is not None:
            if left.type == "identifier":
                syms[text(left)] = src
            elif left.type in ("pattern_list", "tuple_pattern", "list_pattern", "tuple"):
                for i, c in enumerate(left.named_children):
                    if c.type == "identifier":
                        syms[text(c)] = f"{src}[{i}]"


def _shape_source(node, text, params) -> str | None:
    """`x.shape` or `x.shape[i]` of a kernel input: its text; else None."""
    if node is None:
        return None
    if node.type == "attribute" and text(node.child_by_field_name("attribute")) == "shape":
        obj = node.child_by_field_name("object")
        return text(node) if obj is not None and obj.type == "identifier" and text(obj) in params else None
    if node.type == "subscript":
        return text(node) if _shape_source(node.child_by_field_name("value"), text, params) else None
    return None


def _literal(node, text):
    if node is None:
        return None
    if node.type == "integer":
        try:
            return int(text(node), 0)
        except ValueError:
            return None
    if node.type == "tuple" and node.named_children:
        vals = [_literal(c, text) for c in node.named_children]
        return tuple(vals) if all(isinstance(v, int) for v in vals) else None
    return None


def _comparisons(cond, text, params, syms):
    """(literals, all_eq) for a test made only of `shape == literal` joined by `and`, or of
    `shape != literal` joined by `or`; None for any other test."""
    parts, ops = [], set()

    def visit(n) -> bool:
        while n.type == "parenthesized_expression" and n.named_children:
            n = n.named_children[0]
        if n.type == "boolean_operator":
            ops.add(text(n.child_by_field_name("operator")))
            return visit(n.child_by_field_name("left")) and visit(n.child_by_field_name("right"))
        if n.type != "comparison_operator" or len(n.named_children) != 2:
            return False
        op = "".join(text(c) for c in n.children if not c.is_named).strip()
        if op not in ("==", "!="):
            return False
        a, b = n.named_children
        for x, y in ((a, b), (b, a)):
            lit = _literal(y, text)
            if lit is None:
                continue
            if x.type == "identifier" and text(x) in syms:
                parts.append((op, text(x), lit))
                return True
            if _shape_source(x, text, params):
                parts.append((op, text(x), lit))
                return True
        return False

    if cond is None or not visit(cond) or not parts:
        return None
    cmp_ops = {p[0] for p in parts}
    if cmp_ops == {"=="} and ops <= {"and"}:
        return [(s, v) for _, s, v in parts], True
    if cmp_ops == {"!="} and ops <= {"or"}:
        return [(s, v) for _, s, v in parts], False
    return None


def _walk_block(block, text, params, syms, out) -> None:
    if block is None:
        return
    stmts = list(block.named_children)
    for i, st in enumerate(stmts):
        if st.type in _NESTED:
            continue
        if st.type == "if_statement":
            _if(st, stmts[i + 1:], text, params, syms, out)
        for c in st.named_children:
            if c.type in ("block", "elif_clause", "else_clause"):
                _walk_block(c if c.type == "block" else c.child_by_field_name("body") or c, text, params, syms, out)


def _if(st, rest, text, params, syms, out) -> None:
    if any(c.type == "elif_clause" for c in st.named_children):
        return  # a dispatch over several cases: judge only two-way tests
    found = _comparisons(st.child_by_field_name("condition"), text, params, syms)
    if found is None:
        return
    literals, eq_is_true = found
    then = [c for c in (st.child_by_field_name("consequence").named_children
                        if st.child_by_field_name("consequence") is not None else [])]
    alt = next((c for c in st.named_children if c.type == "else_clause"), None)
    if alt is not None:
        body = alt.child_by_field_name("body")
        other_false = list(body.named_children) if body is not None else []
    elif _ends_in_exit(then):
        other_false = list(rest)
    else:
        return  # the code after the if runs for both outcomes
    true_path, false_path = then, other_false
    matched, other = (true_path, false_path) if eq_is_true else (false_path, true_path)
    ret = _first_return(other)
    cond = st.child_by_field_name("condition")
    line, col = st.start_point[0] + 1, st.start_point[1] + 1
    end = cond.end_point if cond is not None else st.start_point
    rname = None
    if ret is not None and ret.named_children and ret.named_children[0].type == "identifier":
        rname = text(ret.named_children[0])
    other_line = (ret.start_point[0] + 1) if ret is not None else (
        other[-1].end_point[0] + 1 if other else line)
    out.append(ShapeBranch(
        line=line, col=col, end_line=end[0] + 1, end_col=end[1] + 2,
        test=" ".join(text(cond).split()) if cond is not None else "",
        literals=literals, matched_computes=_computes(matched, text), other_computes=_computes(other, text),
        other_raises=_raises(other), other_returns=rname, other_returns_input=rname in params,
        other_line=other_line))


def _ends_in_exit(stmts) -> bool:
    return bool(stmts) and stmts[-1].type in ("return_statement", "raise_statement")


def _first_return(stmts):
    for st in stmts:
        if st.type == "return_statement":
            return st
    return None


def _raises(stmts) -> bool:
    for st in stmts:
        if st.type == "raise_statement":
            return True
        if st.type == "assert_statement":
            return True
    return False


def _computes(stmts, text) -> bool:
    stack = list(stmts)
    while stack:
        n = stack.pop()
        if n.type in _NESTED:
            continue
        if n.type == "call":
            fn = text(n.child_by_field_name("function"))
            if fn.rsplit(".", 1)[-1] in _ALLOC_TAILS and "." in fn:
                pass
            elif fn.startswith(_COMPUTE_HEADS) or fn not in _NOT_COMPUTE and "." not in fn:
                return True
        stack.extend(n.named_children)
    return False
