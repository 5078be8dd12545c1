"""A softmax denominator summed from probabilities after dropout was applied to them (NKI215).

Attention dropout scales the numerator only: out = dropout(exp(s - m)) @ V / sum(exp(s - m)). Summing the
dropped-out tile instead renormalises every row by the kept fraction, so the expectation of the output is no
longer the undropped attention. The kernel runs and only a comparison with a reference at dropout > 0 shows it.
"""

from __future__ import annotations

import ast

from ...api.hardware import Target
from ...findings import RelatedLocation, Severity
from ...parse.nki_model import NkiFile
from ...parse.pyast import dotted_name
from ..registry import RuleSpec
from .common import check, emit, module_tree, source_has, walk_nodes

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI215", "softmax-sum-after-dropout", "output-mismatch", Severity.WARNING,
             "The softmax denominator is summed from the probabilities after dropout was applied to them.",
             fix="Sum the probabilities before the dropout; apply dropout to the numerator only.",
             doc="""\
## What it finds
In one function, in source order: a tile written by an exp (`nl.exp`, `nisa.activation(_reduce)` with
`op=nl.exp`), then a call whose name contains `dropout` (`nl.dropout`, or a local helper such as
`dropout_p_local(p_local=...)`) that takes that tile (in place, or writing a new one), then a sum of the
dropped tile (`nl.sum`, `tensor_reduce(op=nl.add)`) before any new exp rewrites it.

## Why it matters on Trainium
Attention dropout multiplies the probabilities by a random keep mask (and 1/(1-p)) after the softmax; the
normaliser is the sum of the undropped exp values. Summing the dropped tile renormalises each row by the
fraction dropout kept, so the output's expectation is no longer the attention output: training diverges
slightly from the reference at dropout > 0, and tests at dropout 0 pass. nki-samples' flash attention
forward did this and fixed it (d3b64a8) by taking the sum with the exp's `reduce_res=` before the dropout.

## Example
```python
p[:, s] = nisa.activation(np.exp, qk[:, s], bias=-m)
dropout_p_local(p_local=p, dropout_p=rate, ...)
partial_sum[:, i] = nl.sum(p[:, s], axis=1)       # NKI215: sums the dropped-out probabilities
```

## Fix
Take the sum from the exp itself (`activation_reduce(..., reduce_op=nl.add, reduce_res=partial_sum[:, i])`)
and apply dropout afterwards to the numerator only.
"""),
]


def _base(node: ast.AST | None) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _arg(call: ast.Call, index: int, *names: str) -> ast.AST | None:
    for kw in call.keywords:
        if kw.arg in names:
            return kw.value
    return call.args[index] if len(call.args) > index else None


def _is_exp(call: ast.Call) -> bool:
    fn = dotted_name(call.func)
    if fn.endswith((".exp",)) and fn.count(".") == 1:
        return True
    if fn.rsplit(".", 1)[-1] in ("activation", "activation_reduce"):
        op = _arg(call, 0, "op")
        return dotted_name(op).endswith(".exp")
    return False


def _is_sum(call: ast.Call) -> ast.AST | None:
    """The summed operand of `nl.sum(x, ...)` or `tensor_reduce(op=add, data=x)`; None for other calls."""
    fn = dotted_name(call.func)
    last = fn.rsplit(".", 1)[-1]
    if last == "sum" and fn.count(".") == 1:
        return _arg(call, 0, "x", "data")
    if last == "tensor_reduce":
        op = _arg(call, 0, "op")
        if dotted_name(op).rsplit(".", 1)[-1] == "add":
            return _arg(call, 1, "data")
    return None


def _targets(st: ast.AST) -> set[str]:
    if isinstance(st, ast.Assign):
        return {b for t in st.targets if (b := _base(t))}
    if isinstance(st, (ast.AugAssign, ast.AnnAssign)):
        b = _base(st.target)
        return {b} if b else set()
    return set()


_STATEMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)


def _events(nf: NkiFile, fn: ast.AST):
    """(line, col, kind, names, call) in source order: exp writes, dropouts, sums."""
    out = []
    for st in walk_nodes(nf, fn, _STATEMENTS):
        call = st.value
        if not isinstance(call, ast.Call):
            continue
        written = _targets(st)
        dst = _base(_arg(call, -1, "dst")) if any(kw.arg == "dst" for kw in call.keywords) else None
        if dst:
            written.add(dst)
        fname = dotted_name(call.func).rsplit(".", 1)[-1].lower()
        if _is_exp(call):
            out.append((call.lineno, call.col_offset, "exp", written, call))
        elif "dropout" in fname:
            inputs = {b for a in [*call.args, *(kw.value for kw in call.keywords)] if (b := _base(a))}
            out.append((call.lineno, call.col_offset, "dropout", (inputs, written), call))
        else:
            summed = _is_sum(call)
            if summed is not None and _base(summed):
                out.append((call.lineno, call.col_offset, "sum", {_base(summed)}, call))
    return sorted(out, key=lambda e: (e[0], e[1]))


@check("NKI215", per_file=True)  # reads the module's Python AST (a dropout helper is a local function)
def sum_after_dropout(nf: NkiFile, t: Target):
    # no finding without a call named *dropout*
    tree = module_tree(nf) if nf.kernels and source_has(nf, "dropout", lower=True) else None
    if tree is None:
        return
    for fn in walk_nodes(nf, tree, (ast.FunctionDef, ast.AsyncFunctionDef)):
        exp_lines: dict[str, int] = {}  # name -> line of the exp that wrote it (still the latest)
        dropped: dict[str, tuple[int, int, str]] = {}  # name -> (dropout line, exp line, the exp's name)
        for line, col, kind, names, call in _events(nf, fn):
            if kind == "exp":
                for n in names:
                    exp_lines[n] = line
                    dropped.pop(n, None)
            elif kind == "dropout":
                inputs, written = names
                for n in inputs & exp_lines.keys():
                    for m in {n} | written:
                        dropped[m] = (line, exp_lines[n], n)
            elif kind == "sum":
                (n,) = names
                if n not in dropped:
                    continue
                d_line, e_line, probs = dropped[n]
                f = emit("NKI215", nf, line, col + 1, call.end_lineno, (call.end_col_offset or 0) + 1,
                         f"`{ast.unparse(call)[:80]}` sums `{n}` after the dropout at line {d_line} was applied to "
                         f"the exp at line {e_line}: the softmax denominator must be the sum of the undropped "
                         "probabilities, or every row is renormalised by the fraction dropout kept.",
                         {"summed": n, "dropout_line": d_line, "exp_line": e_line, "probabilities": probs},
                         fix=f"Sum `{probs}` before the dropout (e.g. reduce_res= of the exp activation at line "
                             f"{e_line}) and apply dropout to the numerator only.",
                         confidence="medium")
                yield f.model_copy(update={"related": [
                    RelatedLocation(file=nf.path or "", line=e_line, message="the probabilities are computed here"),
                    RelatedLocation(file=nf.path or "", line=d_line, message="dropout is applied here")]})
