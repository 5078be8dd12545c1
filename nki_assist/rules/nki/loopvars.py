"""A loop variable read after its loop has ended (NKI212): `k` where `m` was meant.

Python keeps a `for` variable's last value after the loop; in a kernel that is almost never what the code
means (for `nl.affine_range` loops the index has no defined value outside the loop at all), and the wrong
name only shows at run time, on the rows it misplaces. Reads inside a later loop that rebinds the name, or
after the name is assigned again, are not reported.
"""

from __future__ import annotations

import ast
import re

from ...api.hardware import Target
from ...findings import Severity
from ...parse.nki_model import NkiFile, NkiKernel
from ...parse.pyast import branch_nodes, dotted_name
from ..registry import RuleSpec
from .common import check, emit, kernel_findings, kernel_function, walk_nodes

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI212", "loop-variable-after-loop", "indexing-error", Severity.WARNING,
             "A loop variable is read after its loop has ended (`k` where the enclosing loop's `m` was meant).",
             fix="Use the variable of the loop the statement is in, or compute the value explicitly.",
             doc="""\
## What it finds
A name bound by a `for` loop inside a kernel that a later statement of the same block reads before
assigning it again: `for k in nl.affine_range(...): ...` followed by `x[k * 128:...]` outside that loop.
Reads inside a later loop that rebinds the name, and reads after the name is assigned again, are not
reported.

## Why it matters on Trainium
An `nl.affine_range`/`sequential_range` index has no value outside its loop; a Python `range` variable
keeps its last value, which in a kernel is almost always the wrong tile (`k` where the enclosing loop's `m`
was meant). The kernel still traces and runs, and only the rows it misplaces show the mistake, often
explained as a tail problem.

## Example
```python
for m in nl.affine_range(M // 128):
    for k in nl.affine_range(K // 128):
        ...
    nl.store(out[k * 128:(k + 1) * 128, :], value=res)   # `m` was meant
```

## Fix
Index with the variable of the loop the statement is in.
"""),
]

_NKI_RANGES = ("affine_range", "sequential_range", "static_range")


def _old_reads(node: ast.AST, var: str) -> list[ast.Name]:
    """Loads of `var` in `node` outside any nested loop or comprehension that rebinds it, in source order
    (depth first; a stack, not a recursive closure: that closure was a reference cycle per call)."""
    out: list[ast.Name] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.For, ast.comprehension)) and isinstance(n.target, ast.Name) and n.target.id == var:
            stack.append(n.iter)
            continue
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)) and any(
                isinstance(g.target, ast.Name) and g.target.id == var for g in n.generators):
            stack.append(n.generators[0].iter)  # the comprehension binds its own `var`
            continue
        if isinstance(n, ast.Name) and n.id == var and isinstance(n.ctx, ast.Load):
            out.append(n)
        stack.extend(reversed(branch_nodes(n)))  # (no operator or context singletons: no Name among them)
    return out


def _first_is_read(names: list[ast.Name], var: str, reads: list[ast.Name]) -> bool:
    """The first occurrence of `var` among a statement's `names`, in source order, is one of the stale reads (not
    an assignment)."""
    occ = sorted((n.lineno, n.col_offset, id(n)) for n in names if n.id == var)
    ids = {id(r) for r in reads}
    return bool(occ) and occ[0][2] in ids


# the statements with blocks (a simple statement has none to look into); an except handler is no statement
_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor, ast.While, ast.If, ast.With,
             ast.AsyncWith, ast.Try, ast.TryStar, ast.Match, ast.ExceptHandler)


def _after_loops(nf: NkiFile, stmts: list[ast.stmt]):
    """(loop, first stale read) for each `for` whose variable a later statement of the same block reads."""
    for i, st in enumerate(stmts):
        if isinstance(st, ast.For) and isinstance(st.target, ast.Name):
            var = st.target.id
            for later in stmts[i + 1:]:
                if not _mentions(nf, later, var):
                    continue  # (its text does not name it: no walk)
                names = walk_nodes(nf, later, ast.Name)
                if not any(n.id == var for n in names):
                    continue  # neither read nor assigned there
                reads = _old_reads(later, var)
                if reads and _first_is_read(names, var, reads):
                    yield st, reads[0]
                    break
                if any(n.id == var and isinstance(n.ctx, ast.Store) for n in names):
                    break
        if isinstance(st, _COMPOUND):
            for field in ("body", "orelse", "finalbody", "handlers"):
                block = getattr(st, field, None)
                if isinstance(block, list):
                    yield from _after_loops(nf, block)


def _mentions(nf: NkiFile, st: ast.stmt, var: str) -> bool:
    """Whether `var` may be a name in `st`: False only when its lines (decorators included), all ASCII, hold no
    identifier `var` (a non-ASCII letter may spell an ASCII name after Python's NFKC normalisation)."""
    first = min([st.lineno] + [d.lineno for d in getattr(st, "decorator_list", ())])
    text = "\n".join(nf.lines[first - 1:st.end_lineno or st.lineno])
    if not text.isascii():
        return True
    word = _WORDS.get(var)
    if word is None:
        word = _WORDS[var] = re.compile(rf"(?<![\w]){re.escape(var)}(?![\w])")
    return word.search(text) is not None


_WORDS: dict[str, re.Pattern[str]] = {}


@check("NKI212", per_file=True)  # reads the kernel text from the file
def loop_variable_after_loop(nf: NkiFile, t: Target):
    for k in nf.kernels:
        yield from kernel_findings(nf, k, "NKI212", _kernel_reads)


def _kernel_reads(nf: NkiFile, k: NkiKernel):
    """NKI212's findings in one kernel: they read its `def` and the file's path."""
    fn = kernel_function(nf, k)
    if fn is not None:
        for loop, read in _after_loops(nf, fn.body):
            kind = dotted_name(loop.iter).rsplit(".", 1)[-1]
            nki = kind in _NKI_RANGES
            line, loop_line = read.lineno, loop.lineno
            yield emit("NKI212", nf, line, read.col_offset + 1, line, read.col_offset + 1 + len(read.id),
                       f"`{read.id}` is read after its loop (`for {read.id} in {ast.unparse(loop.iter)}`, line "
                       f"{loop_line}) has ended: "
                       + ("an nl." + kind + " index has no value outside its loop." if nki else
                          "it holds the last iteration's value, which is rarely what a kernel means here."),
                       {"variable": read.id, "loop_line": loop_line, "loop": kind},
                       fix=f"Use the variable of the loop this statement is in (or compute the value explicitly); "
                           f"`{read.id}` belongs to the loop at line {loop_line}.",
                       confidence="high" if nki else "medium")
