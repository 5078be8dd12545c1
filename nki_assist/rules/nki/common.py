"""Shared helpers for the static NKI rule families: registration and Finding construction."""

from __future__ import annotations

import ast
import copy
import re
from typing import Any

from ...findings import Finding, Severity
from ...parse import consts
from ...parse.nki_facts.common import canonical_api
from ...parse.nki_model import Allocation, Assignment, Loop, NkiFile, NkiKernel
from ...parse.pyast import branch_nodes, dotted_name
from ...parse.source import normalize_newlines
from ..registry import get
from ..runner import CheckSet

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


def resolve_api(nf: NkiFile, node: ast.AST) -> str:
    """The canonical API name an AST callee or attribute spells through the file's imports (`nl.add` -> `nl.add`,
    `language.add` under `import nki.language as language` too)."""
    d = dotted_name(node)
    head, _, rest = d.partition(".")
    mod = nf.imports.get(head)
    full = (f"{mod}.{rest}" if rest else mod) if mod else d
    return canonical_api(full)


def decorator_text(nf: NkiFile, k: NkiKernel) -> str:
    """The decorator lines right above the kernel's `def` (the kernel's own lines start at the def): the
    contiguous non-blank lines there, from the first that starts with `@`, joined by spaces."""
    above: list[str] = []
    for i in range(k.line - 2, max(-1, k.line - 10), -1):
        if i >= len(nf.lines) or not nf.lines[i].strip():
            break
        above.insert(0, nf.lines[i].strip())
    first = next((j for j, x in enumerate(above) if x.startswith("@")), len(above))
    return " ".join(above[first:])


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


# -- one walk per node and file text ---------------------------------------------------------------------------
# Many rules scan the module or a kernel's def, and ast.walk's generators cost more than the rules' own tests:
# each node's children are listed once per file text here, and each walk once. The memo sits beside the module
# tree (it goes when the file gets new lines) and run_nki_rules drops it after the checks (release_walks), so a
# kept file holds no index. Its entries hold the nodes they are keyed by, so an `id` is never reused while its
# entry lives. Readers must not change the lists. The walks leave out the operator and context singletons
# (`Load()`, `Add()`, `Eq()`: a third of ast.walk's nodes, which no rule looks for; it reads `n.ctx`, `n.op`).
def children(nf: NkiFile):
    """A function of a node giving `list(ast.iter_child_nodes(node))` less the operator and context singletons
    (`parse.pyast.branch_nodes`), once per node and file text."""
    kids = _walk_memo(nf)["kids"]

    def of(node: ast.AST) -> list[ast.AST]:
        hit = kids.get(id(node))
        if hit is None or hit[0] is not node:
            hit = kids[id(node)] = (node, branch_nodes(node))
        return hit[1]

    return of


def walk(nf: NkiFile, node: ast.AST) -> list[ast.AST]:
    """`list(ast.walk(node))` less the operator and context singletons: the same nodes in the same order (breadth
    first), once per node and file text."""
    memo = _walk_memo(nf)
    walks, kids = memo["walks"], memo["kids"]
    hit = walks.get(id(node))
    if hit is not None and hit[0] is node:
        return hit
    out, i = [node], 0
    while i < len(out):
        n = out[i]
        i += 1
        ch = kids.get(id(n))
        if ch is None or ch[0] is not n:
            ch = kids[id(n)] = (n, branch_nodes(n))
        out.extend(ch[1])
    walks[id(node)] = out  # out[0] is node: the entry holds its key
    return out


def walk_nodes(nf: NkiFile, node: ast.AST, types: type | tuple[type, ...]) -> list[ast.AST]:
    """The nodes of `walk(nf, node)` that are instances of `types`, in walk order; once per node and `types`."""
    memo = _walk_memo(nf)
    key = (id(node), types)
    hit = memo["typed"].get(key)
    if hit is None or hit[0] is not node:
        whole = memo["walks"].get(id(node))
        if (whole is None or whole[0] is not node) and _statement_types(types):
            nodes = _statement_walk(node)  # no walk of the expressions for statements
        else:
            nodes = walk(nf, node)
        hit = memo["typed"][key] = (node, [n for n in nodes if isinstance(n, types)])
    return hit[1]


_STATEMENT_TYPES: dict[Any, bool] = {}
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")  # the fields that hold statements
_BLOCK_FIELDS: dict[type, tuple[str, ...]] = {}


def _statement_types(types: type | tuple[type, ...]) -> bool:
    known = _STATEMENT_TYPES.get(types)
    if known is None:
        known = _STATEMENT_TYPES[types] = all(issubclass(t, ast.stmt)
                                              for t in (types if isinstance(types, tuple) else (types,)))
    return known


def _statement_walk(node: ast.AST) -> list[ast.AST]:
    """`node` and the statements under it (with the except handlers and match cases between), breadth first: each
    at the depth it has in `walk`, in the same order, so the statements of `walk(nf, node)` in walk order. A
    statement sits only in a block (a body, orelse, finalbody; a handler's or case's body), never in an
    expression."""
    out, i = [node], 0
    while i < len(out):
        n = out[i]
        i += 1
        kind = type(n)
        fields = _BLOCK_FIELDS.get(kind)
        if fields is None:
            fields = _BLOCK_FIELDS[kind] = tuple(f for f in kind._fields if f in _BLOCKS)
        for f in fields:
            sub = getattr(n, f, None)
            if type(sub) is list:
                out.extend(sub)
    return out


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def scope_nodes(nf: NkiFile, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """A def's own nodes, depth first from its last statement (a nested function's, lambda's or class's nodes belong
    to it, not to `fn`; no operator or context singletons); once per def and file text."""
    walks = _walk_memo(nf)
    memo, kids = walks["scoped"], walks["kids"]
    hit = memo.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    out: list[ast.AST] = []
    stack = list(fn.body)
    push = stack.append
    while stack:
        n = stack.pop()
        out.append(n)
        ch = kids.get(id(n))  # children(nf)(n), inlined: a call less per node
        if ch is None or ch[0] is not n:
            ch = kids[id(n)] = (n, branch_nodes(n))
        for c in ch[1]:
            if not isinstance(c, _SCOPES):
                push(c)
    memo[id(fn)] = (fn, out)
    return out


def scope_nodes_of(nf: NkiFile, fn: ast.FunctionDef | ast.AsyncFunctionDef,
                   types: type | tuple[type, ...]) -> list[ast.AST]:
    """The nodes of `scope_nodes(nf, fn)` that are instances of `types`, in its order; once per def and `types`."""
    memo = _walk_memo(nf)["typed"]
    key = ("scoped", id(fn), types)
    hit = memo.get(key)
    if hit is None or hit[0] is not fn:
        hit = memo[key] = (fn, [n for n in scope_nodes(nf, fn) if isinstance(n, types)])
    return hit[1]


def release_walks(nf: NkiFile) -> None:
    """Drop the walk memo and the prefilters' copies of the text (after the checks: a kept file must not hold an
    index of its tree, nor its text twice more)."""
    nf.__dict__.get("_module_tree", {}).pop("walk", None)
    for name in _SOURCE_MEMOS:
        nf.__dict__.pop(name, None)


def _walk_memo(nf: NkiFile) -> dict:
    module_tree(nf)  # validates the memo against the file's current lines
    tree_memo = nf.__dict__["_module_tree"]
    memo = tree_memo.get("walk")
    if memo is None:
        memo = tree_memo["walk"] = {"walks": {}, "kids": {}, "typed": {}, "scoped": {}}
    return memo


_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_SOURCE_MEMOS = ("_source_text", "_source_ascii_names", "_source_lower")


def source_has(nf: NkiFile, *tokens: str, lower: bool = False) -> bool:
    """Whether one of `tokens` (ASCII letters and `_`) may occur in a name of the file's Python AST (`lower`: in a
    lower-cased name): False only when none is in the text (lower-cased) and Python's NFKC normalisation of names
    cannot spell one from the text's other characters. A rule that can only fire on such a name skips the file, as
    ruff gates its rules on tokens."""
    text = per_text(nf, "_source_text", lambda f: "\n".join(f.lines))
    if not per_text(nf, "_source_ascii_names", lambda f: _names_keep_ascii(text)):
        return True
    if lower:
        text = per_text(nf, "_source_lower", lambda f: text.lower())
    return any(t in text for t in tokens)


def kernel_findings(nf: NkiFile, k: NkiKernel, rule: str, compute, *key) -> list[Finding]:
    """`list(compute(nf, k))`: a per-file check's findings for kernel `k`, remembered on `k` (`NkiKernel.memo`) for a check
    whose findings for a kernel are a function of the kernel's `def` alone (its lines and first line: what
    `kernel_function` parses) and of the file's path, dialect and imports, plus `key` (what else it reads: the target's
    name, ...). The language server's parse cache keeps an unedited kernel between versions, so an edit re-runs such a
    check on the edited kernel only; the key holds the kernel's lines, so a kept kernel whose text moved or changed
    is computed again (tests/rules/test_kernel_findings.py compares with a cold run)."""
    memo_key = ("kernel_findings", rule, nf.path, nf.dialect, tuple(sorted(nf.imports.items())), k.line,
                tuple(nf.lines[max(0, k.line - 1):k.end_line]), *key)
    return k.memo(memo_key, lambda: list(compute(nf, k)))


def kernel_has(nf: NkiFile, k: NkiKernel, *tokens: str) -> bool:
    """Whether one of `tokens` (ASCII letters and `_`) may occur in a name of the kernel's `def` (its lines, decorators
    left out as `kernel_function` leaves them out): `source_has` for one kernel, so a rule that can only fire on such a
    name skips the kernels that lack it (an edit elsewhere re-runs the per-file rules over every kernel)."""
    text = per_text(nf, "_source_text", lambda f: "\n".join(f.lines))
    if not per_text(nf, "_source_ascii_names", lambda f: _names_keep_ascii(text)):
        return True
    body = "\n".join(nf.lines[max(0, k.line - 1):k.end_line])
    return any(t in body for t in tokens)


def _names_keep_ascii(text: str) -> bool:
    """No character outside ASCII decomposes (NFKD), nor lower-cases, to an ASCII letter or `_`: then the
    ASCII runs of a normalised (and lower-cased) name are runs of the text (composition only merges characters)."""
    if text.isascii():
        return True
    import unicodedata

    for ch in set(_NON_ASCII.findall(text)):  # the distinct characters outside ASCII (set(text) is slower)
        for form in (ch, ch.lower()):
            if any(c.isascii() and (c.isalpha() or c == "_") for c in unicodedata.normalize("NFKD", form)):
                return False
    return True


# Shared by the docs pages of the rules that read the target NKI version.
API_TABLE_NOTE = """
The facts come from the versioned NKI API table (docs/api-table.md), generated from the SDK's API stubs and release notes, read at the target NKI version (`nki-version` in `[tool.nki-assist]`, `--nki-version`, the project's `nki` pin, the installed `nki`, else the newest version the table covers)."""


# Shared by the docs pages of the rules that read the target NKI version.
TARGET_VERSION_NOTE = """
The target NKI version is read as for the API-surface rules (`nki-version` in `[tool.nki-assist]`, `--nki-version`, the project's `nki` pin, the installed `nki`, else the newest version the API table covers); new-dialect (`import nki`) files at NKI 0.3 or newer only."""
