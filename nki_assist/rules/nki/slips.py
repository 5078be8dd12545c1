"""Python-level slips in kernel files that run without an error and compute the wrong thing: a bit test written
where a divisibility guard was meant (NKI213), and a misspelled name assigned in one branch of an if/elif chain
while the other branches assign the name the code reads after it (NKI214).

Both read the module's Python AST (the project index's tree when the check runs inside `check`); NKI214 takes
"assigned but never read" from pyflakes, which knows Python's scoping rules."""

from __future__ import annotations

import ast

from pyflakes import messages

from ...api.hardware import Target
from ...findings import RelatedLocation, Severity
from ...parse.nki_model import NkiFile
from ..registry import RuleSpec
from .common import check, emit, module_tree, walk_nodes
from .python import pyflakes_messages

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI213", "bit-test-as-divisibility-guard", "missing-boundary-mask", Severity.WARNING,
             "A guard tests one bit (`dim & 128 == 0`) where divisibility (`dim % 128 == 0`) was meant.",
             fix="Write the guard with `%` (`dim % 128 == 0`).",
             doc="""\
## What it finds
An `assert`, `if` or `while` condition that compares `x & C` with 0 (`==`, `!=`, or `not x & C`) where `C`
is an integer literal that is a power of two of at least 2. Masks of low bits (`x & 127 == 0`, a correct
multiple-of-128 test) and parity tests (`x & 1`) are not reported.

## Why it matters on Trainium
Tile loops assume the guarded size is a multiple of the tile (`dim // 128` tiles of 128). `dim & 128 == 0`
only says that the bit of value 128 is clear: it rejects 384 (three full tiles) and accepts 100, so ragged
sizes pass the guard and lose their tail, while valid ones are refused. nki-samples shipped this guard in
its fused RMSNorm-QKV kernel and fixed it (fc202b2).

## Example
```python
assert dim <= 8192 and dim & 128 == 0, "Unsupported hidden dimension"   # NKI213
```

## Fix
`assert dim % 128 == 0` (equivalently `dim & 127 == 0`).
"""),
    RuleSpec("NKI214", "misspelled-branch-assignment", "uninitialized-read", Severity.WARNING,
             "One branch of an if/elif chain assigns a near-miss of the name the other branches assign and the "
             "code reads after it (`casual_mask` for `causal_mask`).",
             fix="Assign the name the other branches assign.",
             doc="""\
## What it finds
In a function, a name assigned in one branch of an `if`/`elif`/`else` chain and never read anywhere (as
pyflakes reports it: `local variable ... is assigned to but never used`), when another branch of the same
chain assigns a name one or two edits away (a typo or a swapped pair of letters; one edit for names under 8
characters), this branch does not assign that name, and the code after the chain reads it.

## Why it matters on Trainium
On the path through the misspelled branch the name read after the chain is never set: the kernel raises
`UnboundLocalError` when traced with that flag, or, inside a loop, silently reuses the value an earlier
iteration computed (a stale mask). Tests that only take the other branches pass. nki-samples' flash attention
assigned `casual_mask` in its no-mask branch and fixed it (2844505).

## Example
```python
if use_causal_mask:
    causal_mask = i * B_P_SIZE >= j * LARGE_TILE_SZ
else:
    casual_mask = True          # NKI214: `causal_mask` was meant
if causal_mask:
    ...
```

## Fix
Assign the name the other branches assign (`causal_mask = True`).
"""),
]


# -- NKI213: `dim & 128 == 0` ---------------------------------------------------------------------------------
def _pow2(node: ast.AST) -> int | None:
    """An int literal that is a power of two >= 2 (`128`, `0x80`)."""
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 2 \
            and node.value & (node.value - 1) == 0:
        return node.value
    return None


def _bit_test(node: ast.AST) -> tuple[ast.BinOp, int] | None:
    """`x & C` with C a power of two >= 2 (either side)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
        for const, other in ((node.right, node.left), (node.left, node.right)):
            c = _pow2(const)
            if c is not None and _pow2(other) is None:
                return node, c
    return None


def _zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value == 0


def _guard_bit_tests(test: ast.AST):
    """(the `x & C` node, C, the whole test text node) for each `x & C == 0` / `!= 0` / `not x & C` in a guard."""
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            left, right = node.left, node.comparators[0]
            for side, zero in ((left, right), (right, left)):
                hit = _bit_test(side)
                if hit is not None and _zero(zero):
                    yield hit[0], hit[1], node, isinstance(node.ops[0], ast.Eq)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            hit = _bit_test(node.operand)
            if hit is not None:
                yield hit[0], hit[1], node, True


@check("NKI213", per_file=True)  # reads the module's Python AST (guards may sit outside the kernel)
def bit_test_as_divisibility_guard(nf: NkiFile, t: Target):
    # no `x & C` without a `&` in the text (an operator is never spelled otherwise)
    tree = module_tree(nf) if nf.kernels and any("&" in line for line in nf.lines) else None
    if tree is None:
        return
    for st in walk_nodes(nf, tree, (ast.Assert, ast.If, ast.While, ast.IfExp)):
        test = st.test
        if test is None:
            continue
        for bitand, c, cmp, zero_means_ok in _guard_bit_tests(test):
            operand = bitand.left if _pow2(bitand.right) == c else bitand.right
            x = ast.unparse(operand)
            meant = f"{x} % {c} == 0" if zero_means_ok else f"{x} % {c} != 0"
            yield emit("NKI213", nf, cmp.lineno, cmp.col_offset + 1, cmp.end_lineno, (cmp.end_col_offset or 0) + 1,
                       f"`{ast.unparse(cmp)}` tests one bit of `{x}` (the bit of value {c}), not divisibility by "
                       f"{c}: `{x} & {c}` is {c} for {3 * c} (a multiple) and 0 for {c // 2} (not one). "
                       f"The guard for multiples of {c} is `{meant}`.",
                       {"operand": x, "constant": c, "expression": ast.unparse(cmp), "meant": meant},
                       fix=f"Write the guard as `{meant}`.")


# -- NKI214: a misspelled name assigned in one branch ---------------------------------------------------------
def _osa(a: str, b: str) -> int:
    """Optimal string alignment distance (Levenshtein plus adjacent transpositions)."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


def near_miss(a: str, b: str) -> bool:
    """`casual_mask` for `causal_mask`: one or two edits apart in names long enough that this is not chance."""
    if a == b or min(len(a), len(b)) < 4 or abs(len(a) - len(b)) > 2:
        return False
    return _osa(a, b) <= (1 if min(len(a), len(b)) < 8 else 2)


def _branches(node: ast.If) -> list[list[ast.stmt]]:
    """The blocks of an if/elif/.../else chain, in order (an absent else is an empty block)."""
    out = [node.body]
    orelse = node.orelse
    while len(orelse) == 1 and isinstance(orelse[0], ast.If):
        out.append(orelse[0].body)
        orelse = orelse[0].orelse
    out.append(orelse)
    return out


def _assigned(block: list[ast.stmt]) -> dict[str, ast.stmt]:
    """Names a block's own statements bind with `name = ...` (first binding wins)."""
    out: dict[str, ast.stmt] = {}
    for st in block:
        targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(st, ast.AnnAssign) else []
        for tgt in targets:
            for n in ast.walk(tgt):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    out.setdefault(n.id, st)
    return out


def _chains(nf: NkiFile, fn: ast.AST):
    """Each if/elif chain head in a function body (elif links are not heads of their own)."""
    ifs = walk_nodes(nf, fn, ast.If)
    links = {id(node.orelse[0]) for node in ifs if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)}
    for node in ifs:
        if id(node) not in links:
            yield node


def _first_read_after(nf: NkiFile, fn: ast.AST, name: str, line: int) -> ast.Name | None:
    reads = [n for n in walk_nodes(nf, fn, ast.Name) if n.id == name and isinstance(n.ctx, ast.Load)
             and n.lineno > line]
    return min(reads, key=lambda n: (n.lineno, n.col_offset)) if reads else None


def _may_fire(nf: NkiFile, tree: ast.AST, lines: set[int]) -> bool:
    """Whether an `if` block of the file holds an assignment on a line pyflakes calls unused: every block of a
    chain is the body or the orelse of an `if`, so without one NKI214 has nothing to report."""
    return any(st.lineno in lines and isinstance(st, (ast.Assign, ast.AnnAssign))
               for node in walk_nodes(nf, tree, ast.If) for st in (*node.body, *node.orelse))


@check("NKI214", per_file=True)  # pyflakes over the module, then the module's AST
def misspelled_branch_assignment(nf: NkiFile, t: Target):
    if not nf.kernels:
        return
    unused = {(m.lineno, m.message_args[0]) for m in pyflakes_messages(nf)
              if isinstance(m, messages.UnusedVariable) and m.message_args}
    tree = module_tree(nf) if unused else None
    if tree is None or not _may_fire(nf, tree, {line for line, _ in unused}):
        return
    for fn in walk_nodes(nf, tree, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for head in _chains(nf, fn):
            blocks = _branches(head)
            if sum(bool(b) for b in blocks) < 2:
                continue
            bound = [_assigned(b) for b in blocks]
            for i, names in enumerate(bound):
                for name, st in names.items():
                    if (st.lineno, name) not in unused or name.startswith("_"):
                        continue
                    meant = sorted({m for j, other in enumerate(bound) if j != i for m in other
                                    if m not in names and near_miss(name, m)})
                    if len(meant) != 1:
                        continue
                    m = meant[0]
                    read = _first_read_after(nf, fn, m, head.end_lineno or head.lineno)
                    if read is None:
                        continue
                    where = next(other[m].lineno for j, other in enumerate(bound) if j != i and m in other)
                    f = emit("NKI214", nf, st.lineno, st.col_offset + 1, st.lineno, st.col_offset + 1 + len(name),
                             f"`{name}` is assigned here and never read, while the other branches of this `if` "
                             f"assign `{m}` (line {where}), which line {read.lineno} reads: on this branch `{m}` "
                             "is unbound (NameError/UnboundLocalError) or keeps a stale value from an earlier "
                             "iteration. A misspelling?",
                             {"name": name, "meant": m, "read_line": read.lineno, "sibling_line": where,
                              "if_line": head.lineno},
                             fix=f"Assign `{m}` here (rename `{name}`).")
                    yield f.model_copy(update={"related": [
                        RelatedLocation(file=nf.path or "", line=read.lineno, message=f"`{m}` is read here"),
                        RelatedLocation(file=nf.path or "", line=where, message=f"`{m}` is assigned here")]})
