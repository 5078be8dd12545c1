"""NKI front end: tree-sitter-python parse of an NKI file into kernel facts (both dialects).

Public API: `is_nki_source`, `parse_nki`, `kernel_resources`, and the fact classes re-exported from
`nki_model`. Never raises on bad code: syntax errors are listed in `NkiFile.syntax_errors` and the
parts that parse still produce facts.
"""

from __future__ import annotations

import math
import re
from functools import cache, partial
from typing import Any, Mapping

from ..api.hardware import Target, get_target
from . import consts
from .consts import Env, Folder, Lin
from .nki_extract import KERNEL_DECORATORS, Extractor, canonical_api
from .pyast import python_syntax_error
from .reuse import ParseCache
from .source import normalize_newlines
from .nki_model import (  # noqa: F401  (re-exported)
    ALLOC_APIS, DMA_APIS, MATMUL_APIS, Allocation, ApiRef, Assert, Assignment, Call, Loop, Matmul,
    NkiFile, NkiKernel, Operand, Param, Return, Subtraction,
)

__all__ = [
    "is_nki_source", "parse_nki", "kernel_resources", "NkiFile", "NkiKernel", "Param", "Allocation",
    "Loop", "Call", "Matmul", "Operand", "Assert", "Assignment", "Subtraction", "ApiRef", "Return",
    "proves_divisible",
]

_NKI_IMPORT = re.compile(
    rb"^[ \t]*(?:import[ \t]+(?:neuronxcc\.nki|nki)\b|from[ \t]+(?:neuronxcc\.nki|nki)\b|"
    rb"from[ \t]+neuronxcc[ \t]+import[ \t]+[^\n]*\bnki\b|from[ \t]+torch_neuronx[ \t]+import[ \t]+[^\n]*\bnki_jit\b)",
    re.M,
)


def is_nki_source(text: str) -> bool:
    """Cheap test: does the file import `neuronxcc.nki` / `nki` in any form?"""
    if "nki" not in text:
        return False
    return _NKI_IMPORT.search(normalize_newlines(text).encode("utf-8", "replace")) is not None


@cache
def _parser():
    import tree_sitter_python as tsp
    from tree_sitter import Language, Parser

    return Parser(Language(tsp.language()))


def parse_nki(text: str, path: str, cache: ParseCache | None = None,
              constants: Mapping[str, Any] | None = None) -> NkiFile:
    """Parse `text` (the contents of `path`) into facts; never raises on bad code.

    With a `cache` (one per document, as the language server keeps), the tree is reparsed
    incrementally and unchanged functions keep their facts; the result equals a cold parse.
    `constants` are values of names the file imports from other modules (the project model's
    `ModuleContext.imported_constants`): folded like the file's own constants."""
    text = normalize_newlines(text)
    src = text.encode("utf-8", "replace")
    if cache is not None and not cache.lock.acquire(blocking=False):
        cache = None  # another parse of this document is using it: this one runs cold
    try:
        return _parse(text, path, src, cache, constants)
    finally:
        if cache is not None:
            cache.lock.release()


def _parse(text: str, path: str, src: bytes, cache: ParseCache | None,
           constants: Mapping[str, Any] | None = None) -> NkiFile:
    tree = cache.parse(_parser(), src) if cache is not None else _parser().parse(src)
    root = tree.root_node
    nf = NkiFile(path=path, dialect="unknown", line_count=text.count("\n") + (0 if text.endswith("\n") else 1),
                 lines=text.split("\n"))
    imports: dict[str, str] = {}
    ex = Extractor(src, imports, Env(values=dict(constants or {})))
    _imports(root, ex, nf, imports)
    if root.has_error:  # CPython's verdict: one syntax error where it stops (tree-sitter recovers further)
        nf.python_syntax_error = python_syntax_error(text, path)
    nf.imports = dict(imports)
    nf.dialect = _dialect(imports, nf.imports_full)
    module_env = ex.module_env
    # A syntax error can swallow the rest of the file into one ERROR node; then each top-level
    # segment is parsed on its own (same line numbers) so the code that parses still yields facts.
    pieces = [(root, ex)] if not root.has_error else _segments(text, imports, module_env)
    try:
        return _extract(nf, root, ex, pieces, src, imports, module_env, cache)
    finally:
        for _, pex in pieces:
            pex.close()
        ex.close()


def _extract(nf: NkiFile, root, ex: Extractor, pieces, src: bytes, imports: dict[str, str], module_env: Env,
             cache: ParseCache | None) -> NkiFile:
    facts: dict[str, NkiKernel] = {}
    jit_wrapped: set[str] = set()
    # Facts are reused only from a clean parse: a syntax error reparses segments on their own.
    context = _module_context(imports, module_env) if cache is not None and not root.has_error else None
    for proot, pex in pieces:
        if proot.has_error:
            nf.syntax_errors += _syntax_errors(proot, pex)
        functions, wrapped = _module(proot, pex, module_env, nf)
        jit_wrapped |= wrapped
        for fn, deco in functions:
            try:
                if context is None:
                    k = pex.function(fn, deco)
                else:
                    fn_src = src[fn.start_byte:fn.end_byte]
                    names = cache.derived(fn_src, partial(_names_in, fn_src))
                    key = (fn_src, fn.start_point, deco, context, _constants_read(names, module_env))
                    k = cache.facts(key, pex.function, fn, deco)
                    k.decorator, k.helper = deco, False  # set again below from the whole file
            except RecursionError:
                continue
            facts.setdefault(k.name, k)
    if cache is not None:
        cache.finish()
        nf.from_cache = True
    nf.syntax_errors.sort()
    for name in jit_wrapped:
        if name in facts and facts[name].decorator is None:
            facts[name].decorator = "nki.jit"
    for k in facts.values():
        for callee in k.called_functions:
            if callee in facts and callee != k.name:
                facts[callee].helper = True
    nf.kernels = _select_kernels(facts)
    return nf


_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


def _module_context(imports: dict[str, str], env: Env) -> tuple:
    """What every function's facts may depend on outside its own text, besides the constants it reads."""
    return tuple(sorted(imports.items())), repr(env.floordivs), repr(env.divisors), repr(env.upper)


def _names_in(fn_src: bytes) -> frozenset[str]:
    return frozenset(m.decode() for m in _IDENTIFIER.findall(fn_src))


def _constants_read(names: frozenset[str], env: Env) -> tuple:
    """The module constants a function's text names, with their values: editing a constant re-extracts
    only the functions that read it (a name in a comment or string counts too, which only costs reuse)."""
    return tuple((n, repr(env.values[n])) for n in sorted(names & env.values.keys()))


_SEGMENT_START = re.compile(r"^(?:@|def\s|async\s+def\s|class\s|[A-Za-z_][\w.]*\s*(?:=|\(|,|:)|import\s|from\s|if\s|for\s|with\s|try:)")


def _segments(text: str, imports: dict[str, str], env: Env):
    """Parse each top-level statement group separately, padded so line numbers stay the same."""
    lines = text.split("\n")
    starts = []
    for i, ln in enumerate(lines):
        if ln[:1] not in ("", " ", "\t", "#") and _SEGMENT_START.match(ln):
            if starts and lines[starts[-1]].startswith("@") and i == _next_code(lines, starts[-1]):
                continue  # decorator glued to its def
            starts.append(i)
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    out = []
    for a, b in zip(starts, starts[1:] + [len(lines)]):
        seg = "\n" * a + "\n".join(lines[a:b])
        src = seg.encode("utf-8", "replace")
        tree = _parser().parse(src)
        out.append((tree.root_node, Extractor(src, imports, env)))
    return out


def _next_code(lines: list[str], i: int) -> int:
    j = i + 1
    while j < len(lines) and lines[j].startswith("@"):
        j += 1
    return j if j < len(lines) else i


def _imports(root, ex: Extractor, nf: NkiFile, imports: dict[str, str]) -> None:
    stack = list(root.named_children)
    while stack:
        st = stack.pop()
        t = st.type
        if t in ("if_statement", "try_statement", "block", "else_clause", "except_clause", "ERROR",
                 "finally_clause", "elif_clause"):
            stack.extend(st.named_children)
            continue
        if t == "import_statement":
            for c in st.named_children:
                if c.type == "dotted_name":
                    head = ex.text(c).split(".")[0]
                    imports[head] = head
                    _note(nf, ex, head, c)
                    if ex.text(c).startswith(("neuronxcc.nki", "nki")):
                        nf.imports_full.append(ex.text(c))
                elif c.type == "aliased_import":
                    full = ex.text(c.child_by_field_name("name"))
                    alias = ex.text(c.child_by_field_name("alias"))
                    imports[alias] = full
                    _note(nf, ex, alias, c)
        elif t == "import_from_statement":
            mod_node = st.child_by_field_name("module_name")
            if mod_node is None:
                continue
            mod = ex.text(mod_node)
            for c in st.children_by_field_name("name"):
                if c.type == "dotted_name":
                    imports[ex.text(c)] = f"{mod}.{ex.text(c)}"
                    _note(nf, ex, ex.text(c), c)
                elif c.type == "aliased_import":
                    alias = ex.text(c.child_by_field_name("alias"))
                    imports[alias] = f"{mod}.{ex.text(c.child_by_field_name('name'))}"
                    _note(nf, ex, alias, c)


def _note(nf: NkiFile, ex: Extractor, alias: str, node) -> None:
    line, col, _, end_col = ex.pos(node.parent if node.parent is not None else node)
    nf.import_lines[alias] = (line, col, end_col)


def _dialect(imports: dict[str, str], full_imports: list[str]) -> str:
    mods = set(imports.values()) | set(full_imports)
    legacy = any(m.startswith("neuronxcc.nki") or m == "torch_neuronx.nki_jit" for m in mods)
    new = any(m == "nki" or m.startswith("nki.") for m in mods)
    if legacy and new:
        return "transitional"
    if legacy:
        return "legacy"
    if new:
        return "new"
    return "unknown"


def _syntax_errors(root, ex: Extractor, limit: int = 50) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    stack = [root]
    while stack and len(out) < limit:
        n = stack.pop()
        if n.is_missing:
            line, col, _, _ = ex.pos(n)
            out.append((line, col, f"missing `{n.type}`"))
            continue
        if n.type == "ERROR":
            line, col, _, _ = ex.pos(n)
            snippet = ex.text(n).strip().splitlines()[0][:40] if ex.text(n).strip() else ""
            out.append((line, col, f"cannot parse `{snippet}`" if snippet else "unexpected input"))
            continue
        if n.has_error:
            stack.extend(reversed(n.children))
    return sorted(out)


_BLOCKS = ("if_statement", "elif_clause", "else_clause", "try_statement", "except_clause", "finally_clause",
           "with_statement", "block")


def _module(root, ex: Extractor, env: Env, nf: NkiFile):
    """Module constants (bound once), function definitions with their kernel decorator.

    Kernels are found wherever a module defines them: at top level, under `if HAS_NKI:` / `try:` /
    `with`, as decorated methods of a class, inside a factory function (`def make(): @nki.jit def k...`),
    and as `k = nki.jit(fn)` wrappers."""
    functions: list[tuple[Any, str | None]] = []
    jit_wrapped: set[str] = set()
    counts: dict[str, int] = {}
    assigns = []
    for st in _module_statements(root):
        if st.type == "expression_statement" and st.named_children and st.named_children[0].type == "assignment":
            a = st.named_children[0]
            for n in ex._target_names(a.child_by_field_name("left")):
                counts[n] = counts.get(n, 0) + 1
            assigns.append(a)
    for a in assigns:
        left, right = a.child_by_field_name("left"), a.child_by_field_name("right")
        if right is None:
            continue
        if left is not None and left.type == "identifier" and counts.get(ex.text(left)) == 1:
            v = ex.folder.fold(right, env)
            if v is not None:
                env.values[ex.text(left)] = v
        elif (left is not None and left.type in ("pattern_list", "tuple_pattern", "list_pattern")
              and right.type in ("expression_list", "tuple", "list")
              and len(left.named_children) == len(right.named_children)):
            # BM, BN, BK = 128, 64, 32: the same constants as three assignments
            for t, r in zip(left.named_children, right.named_children):
                if t.type == "identifier" and counts.get(ex.text(t)) == 1:
                    v = ex.folder.fold(r, env)
                    if v is not None:
                        env.values[ex.text(t)] = v
        # kernel = nki.jit(fn)
        if right.type == "call":
            d = ex.folder.dotted(right.child_by_field_name("function"))
            if d and canonical_api(_full(ex, d)) in ("nki.jit", "torch_neuronx.nki_jit"):
                args = right.child_by_field_name("arguments")
                for c in (args.named_children if args else []):
                    if c.type == "identifier":
                        jit_wrapped.add(ex.text(c))
    _definitions(root, ex, functions, mode="module")
    return functions, jit_wrapped


def _module_statements(root):
    """Top-level statements, including those under if/try/with blocks (an import-time flag's branch)."""
    stack = list(reversed(root.named_children))
    while stack:
        st = stack.pop()
        if st.type in _BLOCKS:
            stack.extend(reversed(st.named_children))
            continue
        yield st


def _kernel_decorator(ex: Extractor, st) -> str | None:
    for d in st.named_children:
        if d.type != "decorator" or not d.named_children:
            continue
        expr = d.named_children[0]
        if expr.type == "call":
            expr = expr.child_by_field_name("function")
        dotted = ex.folder.dotted(expr) if expr is not None else None
        if dotted:
            api = canonical_api(_full(ex, dotted))
            if api in KERNEL_DECORATORS:
                return KERNEL_DECORATORS[api]
    return None


def _definitions(node, ex: Extractor, out: list, mode: str, depth: int = 0) -> None:
    """Function definitions under `node`. mode "module": every def (top level, if/try/with); "nested" (a
    class body or a factory function): only kernel-decorated defs, the rest belongs to its enclosing code."""
    if depth > 20:
        return
    for st in node.named_children:
        if st.type in _BLOCKS:
            _definitions(st, ex, out, mode, depth + 1)
            continue
        fn, deco = st, None
        if st.type == "decorated_definition":
            fn = st.child_by_field_name("definition")
            deco = _kernel_decorator(ex, st)
        if fn is None:
            continue
        if fn.type == "class_definition":
            body = fn.child_by_field_name("body")
            if body is not None:
                _definitions(body, ex, out, "nested", depth + 1)
            continue
        if fn.type != "function_definition":
            continue
        if deco is not None or mode == "module":
            out.append((fn, deco))
        if deco is None:  # a factory: kernels it defines and returns
            body = fn.child_by_field_name("body")
            if body is not None:
                _definitions(body, ex, out, "nested", depth + 1)


def _full(ex: Extractor, dotted: str) -> str:
    head, _, rest = dotted.partition(".")
    mod = ex.imports.get(head)
    if mod is None:
        return dotted
    return f"{mod}.{rest}" if rest else mod


def _select_kernels(facts: dict[str, NkiKernel]) -> list[NkiKernel]:
    """Decorated kernels plus the undecorated functions they call (transitively)."""
    chosen = {n for n, k in facts.items() if k.decorator is not None}
    if not chosen:
        chosen = {n for n, k in facts.items()
                  if any(c.api.startswith(("nl.", "nisa.")) for c in k.calls)}
    todo = list(chosen)
    while todo:
        k = facts[todo.pop()]
        for callee in k.called_functions:
            if callee in facts and callee not in chosen:
                chosen.add(callee)
                todo.append(callee)
    return sorted((facts[n] for n in chosen), key=lambda k: k.line)


def proves_divisible(kernel: NkiKernel, num: Any, den: int) -> bool:
    """True when the kernel's asserts (or the numbers) prove `num % den == 0`."""
    i = consts.as_int(num)
    if i is not None:
        return i % den == 0
    env = getattr(kernel, "_env", None)
    if env is None:
        env = Env(divisors=kernel.divisors)
    return env.divisible(num, den)


# ---- resources -----------------------------------------------------------------------------------

def _last_uses(kernel: NkiKernel) -> dict[str, list[tuple[int, tuple]]]:
    """Every statement that names each tile: (line, enclosing loops), from call operands and assignments."""
    uses: dict[str, list[tuple[int, tuple]]] = {}
    for c in kernel.calls:  # (one use tuple per statement, shared by the names it holds)
        use = (c.end_line or c.line, tuple(c.loops))
        for name in [o.name for o in c.operands] + list(c.names):
            if name:
                uses.setdefault(name, []).append(use)
    for w in kernel.assignments:
        use = (w.end_line or w.line, tuple(w.loops))
        for name in [w.name, *w.reads]:
            if name:
                uses.setdefault(name, []).append(use)
    for r in kernel.returns:
        for name in getattr(r, "names", ()) or ():
            if name:
                uses.setdefault(name, []).append((r.line, ()))
    return uses


def _live_until(a: Allocation, uses: list[tuple[int, tuple]]) -> int:
    """Last line `a` is live: its last use, extended to the end of a loop that uses it without containing the
    allocation (the tile is read again on every iteration of that loop)."""
    end = a.end_line
    for line, loops in uses:
        if line < a.line:
            continue
        end = max([end, line, *(lp.end_line for lp in loops if not (lp.line <= a.line <= lp.end_line))])
    return end


def _scope_peak(allocs: list[Allocation], weight, last: dict[str, list] | None = None) -> tuple[int, list[Allocation]]:
    """Peak over loop scopes of the sum of allocations live in that scope (own + enclosing scopes).

    An allocation is live in its scope (the loop body it is created in) and every scope nested in
    it; sibling loops do not overlap. Repeated bindings of one name in one scope count once (max).
    With `last` (last use line per name), allocations of one scope whose line ranges do not overlap
    (a PSUM tile copied out before the next is allocated) are not counted together.
    """
    if last is not None:
        return _liveness_peak(allocs, weight, last)
    by_key: dict[tuple, tuple[int, Allocation]] = {}
    for a in allocs:
        w = weight(a)
        if w is None:
            continue
        path = tuple(lp.id for lp in a.loops)
        key = (path, a.name if a.name else f"@{a.line}:{a.col}")
        if key not in by_key or by_key[key][0] < w:
            by_key[key] = (w, a)
    paths = {k[0] for k in by_key} | {()}
    best, best_allocs = 0, []
    for p in paths:
        live = [(w, a) for (ap, _), (w, a) in by_key.items() if p[:len(ap)] == ap]
        total = sum(w for w, _ in live)
        if total > best:
            best, best_allocs = total, [a for _, a in sorted(live, key=lambda x: (x[1].line, x[1].col))]
    return best, best_allocs


def _liveness_peak(allocs: list[Allocation], weight, last: dict[str, list]) -> tuple[int, list[Allocation]]:
    """Peak of the sum over allocations live at each allocation point: an allocation is live from its line to its
    last use, in its own scope and the scopes nested in it."""
    items = []
    for a in allocs:
        w = weight(a)
        if w is None:
            continue
        scope_end = a.loops[-1].end_line if a.loops else 10**9
        end = _live_until(a, last.get(a.name, [])) if a.name else a.end_line
        items.append((w, a, tuple(lp.id for lp in a.loops), a.line, max(a.end_line, min(end, scope_end))))
    best, best_allocs = 0, []
    for _, a, path, start, _ in items:
        live = [(w, b) for w, b, bp, bs, be in items if path[:len(bp)] == bp and bs <= start <= be]
        total = sum(w for w, _ in live)
        if total > best:
            best, best_allocs = total, [b for _, b in sorted(live, key=lambda x: (x[1].line, x[1].col))]
    return best, best_allocs


def _live_banks(a: Allocation, target: Target) -> int | None:
    """Banks a PSUM allocation holds at once. A legacy block-dimension tile ([2048, par_dim(128), 512] in
    compiler-emitted kernels) gives each block its own lifetime: it counts one block here (the simulator's
    SIM103 counts the blocks a run really holds at once)."""
    banks = psum_banks_of(a, target)
    if banks is not None and a.blocks and a.blocks > 1:
        return banks // a.blocks
    return banks


def psum_banks_of(a: Allocation, target: Target) -> int | None:
    if a.free_bytes is None or a.blocks is None:
        return None
    return a.blocks * max(1, math.ceil(a.free_bytes / target.psum_bank_bytes))


def kernel_resources(kernel: NkiKernel, target: Target | str | None = None) -> dict[str, Any]:
    """Static estimate of on-chip memory from the kernel's allocations and their loop scopes."""
    if not isinstance(target, Target):
        target = get_target(target)
    return kernel.memo(("resources", target), lambda: _kernel_resources(kernel, target))


def _kernel_resources(kernel: NkiKernel, target: Target) -> dict[str, Any]:
    sbuf = [a for a in kernel.allocations if a.buffer == "sbuf"]
    psum = [a for a in kernel.allocations if a.buffer == "psum"]
    sbuf_peak, sbuf_live = _scope_peak(sbuf, lambda a: a.bytes_per_partition)
    # legacy block-dimension tiles hold one block per lifetime when the code uses one block at a time
    one_block, one_block_live = _scope_peak(sbuf, lambda a: a.free_bytes if a.blocks and a.blocks > 1
                                            else a.bytes_per_partition)
    # PSUM tiles are short-lived (a matmul result copied out at once): count them by liveness, not by scope
    last = _last_uses(kernel)
    banks, bank_live = _scope_peak(psum, lambda a: _live_banks(a, target), last)
    psum_bytes, _ = _scope_peak(psum, lambda a: a.free_bytes if a.blocks and a.blocks > 1 else a.bytes_per_partition,
                                last)
    unknown = [a for a in sbuf + psum if a.bytes_per_partition is None]
    return {
        "target": target.name,
        "sbuf_peak_bytes_per_partition": sbuf_peak,
        "sbuf_budget_bytes_per_partition": target.sbuf_usable_bytes_per_partition,
        "sbuf_percent": round(100.0 * sbuf_peak / target.sbuf_usable_bytes_per_partition, 1),
        "sbuf_live": [(a.name, a.line, a.bytes_per_partition) for a in sbuf_live],
        "sbuf_peak_one_block_bytes_per_partition": one_block,
        "sbuf_live_one_block": [(a.name, a.line, a.free_bytes if a.blocks and a.blocks > 1 else a.bytes_per_partition)
                                for a in one_block_live],
        "psum_banks": banks,
        "psum_bank_limit": target.psum_banks,
        "psum_bytes_per_partition": psum_bytes,
        "psum_live": [(a.name, a.line, psum_banks_of(a, target)) for a in bank_live],
        "unknown_size_allocations": [(a.name, a.line) for a in unknown],
    }


del Folder, Lin
