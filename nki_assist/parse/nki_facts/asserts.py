"""Asserts: shape and divisibility facts from `assert` statements (what a kernel promises about its sizes).

A collector: functions of the walker (`ex`, parse/nki_extract.py) that record one kind of fact.
"""

from __future__ import annotations

from .. import consts
from ..consts import Env, Lin
from ..nki_model import Assert
from .common import _Ctx


def assert_statement(ex, st, ctx: _Ctx) -> None:
    line, col, _, _ = ex.pos(st)
    ctx.kernel.asserts.append(Assert(ex.text(st), line, col))
    names = ex._scan_stmt_expr(st, ctx)
    ctx.kernel.guarded_names |= names
    cond = st.named_children[0] if st.named_children else None
    assert_facts(ex, cond, ctx.env)


def assert_facts(ex, cond, env: Env) -> None:
    if cond is None:
        return
    if cond.type == "boolean_operator" and ex.text(cond.child_by_field_name("operator")) == "and":
        assert_facts(ex, cond.child_by_field_name("left"), env)
        assert_facts(ex, cond.child_by_field_name("right"), env)
        return
    if cond.type == "parenthesized_expression" and cond.named_children:
        assert_facts(ex, cond.named_children[0], env)
        return
    if cond.type != "comparison_operator":
        return
    parts = cond.named_children
    ops = [ex.text(c) for c in cond.children if not c.is_named]
    if len(parts) < 2 or not ops:
        return
    # chains like 0 < M <= 128: check each adjacent pair
    for i, op in enumerate(ops[: len(parts) - 1]):
        lhs, rhs = parts[i], parts[i + 1]
        a, b = ex.folder.fold(lhs, env), ex.folder.fold(rhs, env)
        if op == "==" and lhs.type == "binary_operator" and \
                ex.text(lhs.child_by_field_name("operator")) == "%" and consts.as_int(b) == 0:
            num = ex.folder.fold(lhs.child_by_field_name("left"), env)
            den = consts.as_int(ex.folder.fold(lhs.child_by_field_name("right"), env))
            if isinstance(num, Lin) and den:
                # a derived size (`L = LX - 128; assert L % 512 == 0`) is keyed by its whole form
                env.divisors.setdefault(num.single or consts.lin_key(num), set()).add(den)
        elif op in ("<=", "<") and isinstance(a, Lin) and a.single and consts.as_int(b) is not None:
            env.upper[a.single] = consts.as_int(b) - (1 if op == "<" else 0)
        elif op in (">=", ">") and isinstance(b, Lin) and b.single and consts.as_int(a) is not None:
            env.upper[b.single] = consts.as_int(a) - (1 if op == ">" else 0)
        elif op == "==" and isinstance(a, Lin) and a.single and consts.is_num(b):
            env.values[a.single] = b
