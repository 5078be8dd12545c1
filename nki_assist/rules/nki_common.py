"""Shared helpers for the static NKI rule families: registration and Finding construction."""

from __future__ import annotations

import ast
import copy
from typing import Any

from ..findings import Finding, Severity
from ..parse import consts
from ..parse.nki_model import Allocation, Assignment, Loop, NkiFile, NkiKernel
from ..parse.source import normalize_newlines
from .registry import get
from .runner import CheckSet

# The static NKI checks, run by nki_rules.run_nki_rules; each registers with `@check("NKI1xx", ...)`.
CHECKS = CheckSet("nki")


def check(*rule_ids: str, per_file: bool = False):
    """Register a static NKI check. By default its findings for a kernel depend on that kernel and the
    file's dialect only (its body: guards, then one `for k in nf.kernels:` loop, which
    tests/rules/test_check_scope.py checks), so when the parse cache reuses a kernel its findings are
    reused too. `per_file=True` for a check that reads the file as a whole."""
    return CHECKS.register(*rule_ids, per_kernel=not per_file)


def emit(rule_id: str, nf: NkiFile, line: int, col: int, end_line: int | None, end_col: int | None,
         message: str, evidence: dict[str, Any] | None = None, *, severity: Severity | None = None,
         fix: str | None = None, confidence: str = "high") -> Finding:
    fields: dict[str, Any] = dict(file=nf.path, line=max(1, line), column=max(1, col),
                                  end_line=max(1, end_line or line), end_column=max(1, end_col or col),
                                  evidence=evidence or {}, confidence=confidence)
    if fix is not None:
        fields["fix"] = fix
    return get(rule_id).finding(message, severity=severity, **fields)


def shape_str(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]" if shape is not None else "[?]"


def loop_label(lp: Loop) -> str:
    trips = f"{lp.trip_count} iterations" if lp.trip_count is not None else f"trip {lp.trip_expr}"
    var = f" `{lp.var}`" if lp.var else ""
    return f"loop{var} (line {lp.line}, {trips})"


def inside(line: int, lp: Loop) -> bool:
    return lp.line <= line <= lp.end_line


def allocation_of(k: NkiKernel, name: str, before_line: int | None = None) -> Allocation | None:
    """The latest allocation bound to `name` at or before `before_line`."""
    best = None
    for a in k.allocations:
        if a.name == name and (before_line is None or a.line <= before_line):
            if best is None or a.line >= best.line:
                best = a
    return best


def defined_outside(k: NkiKernel, name: str, lp: Loop) -> bool:
    if any(p.name == name for p in k.params):
        return True
    return any(a.name == name and not inside(a.line, lp) and a.line < lp.line for a in k.assignments)


def fresh_in_loop_before(k: NkiKernel, w: Assignment, lp: Loop) -> bool:
    """`name = <new value>` inside the loop before `w`: the loop body starts from a fresh value."""
    return any(a.name == w.name and inside(a.line, lp) and a.start_byte < w.start_byte and a.op == "="
               and not a.subscript and a.name not in a.reads for a in k.assignments)


def reads_self(w: Assignment) -> bool:
    if w.op not in ("=", "call"):
        return True
    return w.name in w.reads


def tail_claim(lp: Loop, num_text: str, num: Any, den: int) -> dict[str, Any]:
    """The runtime claim of a floored trip count: sizes where `num % den != 0` lose their tail.

    `terms`/`const` give the numerator as a linear form of shape symbols, so the review can evaluate it
    on each size of the port spec (None when it is not linear in integers)."""
    claim: dict[str, Any] = {"kind": "tail-dropped", "loop_var": lp.var, "loop_line": lp.line, "tile": den,
                             "numerator": num_text, "trip_expr": lp.trip_expr}
    n_int = consts.as_int(num)
    if n_int is not None:
        claim.update(terms={}, const=n_int)
    elif isinstance(num, consts.Lin) and all(consts.as_int(c) is not None for _, c in num.terms) \
            and consts.as_int(num.const) is not None:
        claim.update(terms={t: consts.as_int(c) for t, c in num.terms}, const=consts.as_int(num.const))
    return claim


def per_text(nf: NkiFile, name: str, compute, *deps):
    """`compute(nf)` once per file text (a reused NkiFile gets new lines) and per identity of `deps`, kept on
    `nf` under `name`: the memo every whole-file fact shares (pyflakes, API usage, launcher wrappers)."""
    memo = nf.__dict__.setdefault(name, {})
    keys = (nf.lines, *deps)
    held = memo.get("keys")
    if held is None or len(held) != len(keys) or any(a is not b for a, b in zip(held, keys)):
        memo.update(keys=keys, value=compute(nf))
    return memo["value"]


def module_tree(nf: NkiFile) -> ast.Module | None:
    """The file's Python AST (None when Python cannot parse it), one per file text for every rule that reads
    it (pyflakes, the kernels' defs, API usage): the project model's when it indexed this very text, else
    parsed here once. Readers must not change it."""
    memo = nf.__dict__.setdefault("_module_tree", {})
    if memo.get("lines") is not nf.lines:  # a reused NkiFile gets new lines: this text's tree
        memo.clear()
        memo["lines"] = nf.lines
        memo["tree"] = _module_tree(nf)
    return memo["tree"]


def _module_tree(nf: NkiFile) -> ast.Module | None:
    text = "\n".join(nf.lines)
    module = nf.project.module if nf.project is not None else None
    kept, source = getattr(module, "tree", None), getattr(module, "tree_text", None)
    if kept is not None and isinstance(source, str) and (
            source == text or "\r" in source and normalize_newlines(source) == text):
        return kept
    try:
        return ast.parse(text, filename=nf.path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _defs_by_line(nf: NkiFile) -> dict[int, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every `def` of the file's tree by its line (statements only: a def is never inside an expression)."""
    memo = nf.__dict__["_module_tree"]
    if "defs" not in memo:
        out: dict[int, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        stack = list(memo["tree"].body) if memo["tree"] is not None else []
        while stack:
            st = stack.pop()
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.setdefault(st.lineno, st)
            for part in ("body", "orelse", "finalbody", "handlers", "cases"):
                sub = getattr(st, part, None)
                if isinstance(sub, list):
                    stack.extend(sub)
        memo["defs"] = out
    return memo["defs"]


def kernel_def(nf: NkiFile, k: NkiKernel) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The kernel's `def` node in the file's tree, as parsing its lines alone gives it (without decorators:
    `k.line` is the `def` line); None when the file does not parse or the tree disagrees with the kernel's
    extent (then the caller parses the kernel's lines alone, as before there was a shared tree)."""
    if module_tree(nf) is None:
        return None
    fn = _defs_by_line(nf).get(k.line)
    end = getattr(fn, "end_lineno", None)
    if fn is None or end is None or end > k.end_line or \
            any(line.strip() and not line.lstrip().startswith("#") for line in nf.lines[end:k.end_line]):
        return None
    if not fn.decorator_list:
        return fn
    bare = copy.copy(fn)  # shallow: the same body nodes, no decorators
    bare.decorator_list = []
    return bare


def kernel_function(nf: NkiFile, k: NkiKernel) -> ast.FunctionDef | None:
    """The kernel's `def` as a Python AST carrying the file's own line and column numbers (None when it does not
    parse), once per file text for every check that reads it (NKI211, NKI212)."""
    memo = nf.__dict__.setdefault("_kernel_functions", {})
    if memo.get("lines") is not nf.lines:  # a reused NkiFile gets new lines: parse again
        memo.clear()
        memo["lines"] = nf.lines
    key = (k.line, k.end_line)
    if key not in memo:
        memo[key] = kernel_def(nf, k) or _parse_function(nf.lines, k.line, k.end_line)
    return memo[key]


def _parse_function(lines: list[str], start: int, end: int) -> ast.FunctionDef | None:
    block = lines[start - 1:end]
    indent = min((len(x) - len(x.lstrip()) for x in block if x.strip()), default=0)
    # blank lines keep line numbers; an `if 1:` header keeps an indented block's columns
    head = "\n" * (start - 1) if indent == 0 else "\n" * (start - 2) + "if 1:\n"
    try:
        tree = ast.parse(head + "\n".join(block))
    except (SyntaxError, ValueError):
        return None
    node = tree.body[0] if tree.body else None
    if isinstance(node, ast.If) and node.body:
        node = node.body[0]
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
