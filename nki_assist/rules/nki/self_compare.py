"""A value compared with itself in kernel verification code (NKI216): the check can never fail.

`np.allclose(out, out)`, `(out_nki == out_nki).all()`, `assert_allclose(a, a)` pass for any kernel output, so
the test or `__main__` check that should compare the kernel with its reference proves nothing. Found by a text
prefilter (the two operands spelled alike) and confirmed on the module's AST: both operands the same pure
expression (names, attributes, constant subscripts; a call may differ between two evaluations, so it is
never matched). `x != x` is the NaN test idiom and is left alone.
"""

from __future__ import annotations

import ast
import re

from ...api.hardware import Target
from ...findings import Severity
from ...parse.nki_model import NkiFile
from ..registry import RuleSpec
from .common import check, emit, module_tree, walk_nodes

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI216", "self-comparison-in-verification", "output-mismatch", Severity.WARNING,
             "A comparison or allclose/array_equal/assert_allclose call compares an expression with itself, so the "
             "check passes whatever the kernel computes.",
             fix="Compare the kernel's output with the reference result instead of with itself.",
             doc="""\
## What it finds
Anywhere in a checked file (kernel code, its `__main__` block, its tests): `a == a`, `a <= a`, `a >= a`, or a
two-argument comparison call (`np.allclose`, `np.isclose`, `np.array_equal`, `np.testing.assert_allclose`,
`assert_array_equal`, `torch.testing.assert_close`, `assertEqual`, ...) whose first two arguments are the same
expression. Only side-effect-free operands count (names, attributes, subscripts with constant or name indices):
`np.array_equal(kernel(x), kernel(x))` is a determinism test and is not reported. `x != x` is the NaN idiom and is
not reported either.

## Why it matters on Trainium
A kernel's correctness rests on its comparison with a reference; a comparison of the output with itself is true
for any output (zeros from a kernel that never ran, garbage from a wrong index), so the test stays green while
the kernel is wrong. The same review rule exists in general linters (pylint's comparison-with-itself, ruff
PLR0124); here it also covers the numpy/torch comparison calls that kernel tests use. nki-samples' average-pool
tutorial shipped `(out_nki == out_nki).all()` and later fixed it to compare with the NumPy result.

## Example
```python
out_np = np_average_pool_2D(in_tensor, POOL_SIZE)
match = (out_nki == out_nki).all()          # NKI216: always True
assert np.allclose(out_nki, out_nki)        # NKI216
```

## Fix
Compare with the reference: `np.allclose(out_nki, out_np)`. To test for NaN, use `np.isnan`.
"""),
]

# two-argument comparison functions of numpy, torch, unittest and pytest whose first two arguments are compared
_COMPARE_FUNCS = frozenset({
    "allclose", "isclose", "array_equal", "array_equiv", "assert_allclose", "assert_array_equal",
    "assert_array_almost_equal", "assert_almost_equal", "assert_equal", "assert_array_max_ulp",
    "assert_array_almost_equal_nulp", "assert_close", "equal", "assertEqual", "assertAlmostEqual"})
_OPERAND = r"[A-Za-z_][\w.]*(?:\[[^\]\n]*\])*"
# a comparison or compare-call whose two operands are spelled the same (cheap; the AST confirms)
_PREFILTER = re.compile(
    rf"(?<![\w.])(?P<a>{_OPERAND})\s*(?:==|<=|>=)\s*(?P=a)(?![\w.\[(])"
    rf"|(?:{'|'.join(sorted(_COMPARE_FUNCS))})\(\s*(?P<b>{_OPERAND})\s*,\s*(?P=b)\s*[,)]")


def _hinted(line: str) -> bool:
    """What either form needs, by plain substring tests (the operand regex is slow on every line)."""
    return "==" in line or "<=" in line or ">=" in line or "(" in line and (
        "close(" in line or "qual(" in line or "equiv(" in line or "ulp(" in line)


_PURE = (ast.Name, ast.Attribute, ast.Subscript, ast.Constant, ast.Slice, ast.Tuple, ast.UnaryOp, ast.BinOp,
         ast.Load, ast.unaryop, ast.operator)


def _pure(node: ast.AST) -> bool:
    return all(isinstance(n, _PURE) for n in ast.walk(node))


def _same(a: ast.AST, b: ast.AST) -> bool:
    return _pure(a) and ast.dump(a) == ast.dump(b)


def _compare_call(node: ast.Call) -> tuple[ast.AST, ast.AST] | None:
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    if name not in _COMPARE_FUNCS or len(node.args) < 2:
        return None
    return node.args[0], node.args[1]


def _self_comparisons(nf: NkiFile, tree: ast.Module, lines: set[int]):
    """(node, operand text) for every self-comparison on the prefiltered lines."""
    for node in walk_nodes(nf, tree, (ast.Compare, ast.Call)):  # the shared walk of the module
        if getattr(node, "lineno", None) not in lines:
            continue
        if isinstance(node, ast.Compare) and len(node.ops) == 1 \
                and isinstance(node.ops[0], (ast.Eq, ast.LtE, ast.GtE)) and _same(node.left, node.comparators[0]):
            yield node, ast.unparse(node.left)
        elif isinstance(node, ast.Call) and (pair := _compare_call(node)) and _same(*pair):
            yield node, ast.unparse(pair[0])


@check("NKI216", per_file=True)  # reads the whole module: verification lives in tests and `__main__` blocks
def self_comparison(nf: NkiFile, t: Target):
    lines = {n for n, line in enumerate(nf.lines, 1) if _hinted(line) and _PREFILTER.search(line)}
    if not lines:
        return
    tree = module_tree(nf)
    if tree is None:
        return
    for node, operand in _self_comparisons(nf, tree, lines):
        what = ast.unparse(node)
        yield emit("NKI216", nf, node.lineno, node.col_offset + 1, node.end_lineno, (node.end_col_offset or 0) + 1,
                   f"`{what[:100]}` compares `{operand}` with itself: it holds for any value, so this check passes "
                   "whatever the kernel computes. Compare the kernel's output with the reference.",
                   {"operand": operand, "comparison": what[:200]},
                   fix=f"Compare `{operand}` with the reference result (e.g. the NumPy output) instead of itself.")
