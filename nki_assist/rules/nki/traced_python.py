"""Python the NKI 0.3+ compiler does not trace, in the functions it traces: the `@nki.jit` kernels and the
undecorated helpers they call (the call tree is inlined at specialization, nki-language-guide "Compilation
Model"). New-dialect files (`import nki`) at NKI 0.3 or newer only.
- NKI514 (widened): a `def` nested in a helper the kernel calls (the kernel's own nested defs are read in
  rules/nki/api_surface.py).
- NKI526: a comprehension or generator expression, or a subscript among the targets of a tuple assignment
  (`xs[0], xs[1] = f(...)`).
Neither is in the API stubs: the basis is public fixes that quote the compiler (trnrand's hardware builds:
"NKI does not support inner function definitions", "unsupported expression" for `[... for i in range(4)]`,
"expecting pattern" for subscript tuple targets) and AWS's NKI 0.3 library, which uses neither construct in
traced code. Hence warnings, never errors."""

from __future__ import annotations

import ast

from ...api.hardware import Target
from ...findings import Severity
from ...parse.nki_model import NkiFile, NkiKernel
from ..registry import RuleSpec
from .api_usage import BODY_FUN_APIS, dotted, new_namespace_version, usage
from .common import TARGET_VERSION_NOTE, check, emit, kernel_function, scope_nodes

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI526", "untraceable-python-in-nki-kernel", "unsupported-construct", Severity.WARNING,
             "A comprehension, or a subscript among a tuple assignment's targets, in a jit kernel or a helper it "
             "calls; the NKI 0.3+ compiler rejects both.",
             fix="Write the elements out, or unpack into plain names.",
             doc="""\
## What it finds
In a new-dialect `@nki.jit` kernel, or an undecorated function of the same file that a kernel calls (directly or through other helpers):
- a list, set or dict comprehension or a generator expression (`[f(x[i]) for i in range(4)]`, `any(d > 0 for d in dims)`);
- a tuple assignment with a subscript among its targets (`xs[0], xs[1] = mix(xs[0], xs[1])`). A single subscript target (`buf[i] = t`) is not reported.
""" + TARGET_VERSION_NOTE + """

Severity: `warning`, medium confidence. Not in the API stubs or the language guide: the basis is a public fix that quotes the compiler on hardware builds (trnrand, NKI 0.3: "unsupported expression" for list comprehensions, "expecting pattern" for subscript tuple targets, both accepted by the CPU simulator), and AWS's NKI 0.3 library, which uses neither construct in traced code.

## Why it matters on Trainium
The NKI compiler specializes the kernel's whole call tree: it evaluates the Python it supports at compile time and lowers the rest to instructions. A construct it does not support stops the build, and the simulator does not catch it, so the kernel fails only on the device.

## Example
```python
def _xor_bytes(a, b):                       # called from a @nki.jit kernel
    return [nl.bitwise_xor(a[i], b[i]) for i in range(4)]     # NKI526

xs[0], xs[1] = _mix(xs[0], xs[1])           # NKI526
```

## Fix
Write the elements out (`[nl.bitwise_xor(a[0], b[0]), ...]`) or build the list with a `for` loop and `.append`; unpack into plain names (`x0, x1 = _mix(x0, x1)`).
"""),
]

_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_COMP_WORD = {ast.ListComp: "list comprehension", ast.SetComp: "set comprehension",
              ast.DictComp: "dict comprehension", ast.GeneratorExp: "generator expression"}


def _has_nested_def(lines: list[str]) -> bool:
    """A `def` below a function's first line: the text NKI514's helper check needs, so most are never walked."""
    return any(x.lstrip().startswith(("def ", "async def ")) for x in lines[1:])


def traced(nf: NkiFile) -> list[tuple[NkiKernel, str]]:
    """(function, the jit kernel that reaches it) for every decorated kernel and every undecorated function of
    the file that a decorated kernel calls, directly or through other helpers."""
    by_name = {k.name: k for k in nf.kernels}
    out: dict[str, tuple[NkiKernel, str]] = {}
    todo = [(k, k.name) for k in nf.kernels if k.decorator is not None]
    while todo:
        k, root = todo.pop()
        if k.name in out:
            continue
        out[k.name] = (k, root)
        todo.extend((by_name[n], root) for n in sorted(k.called_functions) if n in by_name
                    and by_name[n].decorator is None and n not in out)
    return sorted(out.values(), key=lambda x: x[0].line)


def _own_nodes(nf: NkiFile, k: NkiKernel) -> list[ast.AST]:
    fn = kernel_function(nf, k)
    return scope_nodes(nf, fn) if fn is not None else []


def _body_funs(nf: NkiFile, nodes: list[ast.AST]) -> set[str]:
    """Names passed to nl.fori_loop / nl.while_loop (0.6): their bodies are nested by design."""
    u = usage(nf)
    aliases = u.aliases if u is not None else {}
    return {a.id for n in nodes if isinstance(n, ast.Call) and dotted(n.func, aliases) in BODY_FUN_APIS
            for a in list(n.args) + [kw.value for kw in n.keywords] if isinstance(a, ast.Name)}


@check("NKI514", per_file=True)
def helper_nested_def(nf: NkiFile, t: Target):
    if (v := new_namespace_version(nf, t)) is None:
        return
    for k, root in traced(nf):
        if k.decorator is not None or not _has_nested_def(nf.lines[k.line - 1:k.end_line]):
            continue  # a kernel's own nested defs: rules/nki/api_surface.py
        nodes = _own_nodes(nf, k)
        defs = [n for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not defs:
            continue
        loops = _body_funs(nf, nodes)
        for d in sorted(defs, key=lambda d: d.lineno):
            if d.name in loops:
                continue
            yield emit("NKI514", nf, d.lineno, d.col_offset + 1, d.lineno, d.col_offset + 5 + len(d.name),
                       f"`{d.name}` is defined inside `{k.name}`, a helper the @nki.jit kernel `{root}` calls: NKI "
                       f"{v} traces the kernel's whole call tree and rejects inner function definitions there.",
                       {"function": d.name, "helper": k.name, "kernel": root, "nki_version": v},
                       confidence="medium",
                       fix=f"Move `{d.name}` to module level and call it from `{k.name}`.")


@check("NKI526", per_file=True)
def untraceable_python(nf: NkiFile, t: Target):
    if (v := new_namespace_version(nf, t)) is None or (u := usage(nf)) is None:
        return
    roots = {k.name: root for k, root in traced(nf)}
    found = [(k, n) for k, n in u.comprehensions if k.name in roots]
    found += [(k, n) for k, n in u.assigns if k.name in roots and any(
        isinstance(tg, (ast.Tuple, ast.List)) and any(isinstance(e, ast.Subscript) for e in tg.elts)
        for tg in n.targets)]
    for k, n in sorted(found, key=lambda x: (x[1].lineno, x[1].col_offset)):
        root = roots[k.name]
        where = f"the @nki.jit kernel `{k.name}`" if k.name == root else \
            f"`{k.name}`, a helper the @nki.jit kernel `{root}` calls"
        if isinstance(n, _COMPS):
            word = _COMP_WORD[type(n)]
            yield emit("NKI526", nf, n.lineno, n.col_offset + 1, n.end_lineno or n.lineno,
                       (n.end_col_offset or n.col_offset) + 1,
                       f"A {word} in {where}: NKI {v}'s compiler reports \"unsupported expression\" for "
                       "comprehensions in traced code (the CPU simulator accepts them).",
                       {"construct": word, "function": k.name, "kernel": root, "nki_version": v},
                       confidence="medium",
                       fix="Write the elements out (`[f(x[0]), f(x[1]), ...]`) or build the list with a "
                           "plain `for` loop and `.append`.")
            continue
        subs = [e for tg in n.targets if isinstance(tg, (ast.Tuple, ast.List)) for e in tg.elts
                if isinstance(e, ast.Subscript)]
        yield emit("NKI526", nf, n.lineno, n.col_offset + 1, n.lineno, (subs[-1].end_col_offset or 0) + 1,
                   f"`{ast.unparse(subs[0])}` is a subscript among the targets of a tuple assignment in "
                   f"{where}: NKI {v}'s compiler rejects it (\"expecting pattern\"); it accepts plain names "
                   "there.",
                   {"construct": "subscript tuple target", "target": ast.unparse(subs[0]),
                    "function": k.name, "kernel": root, "nki_version": v},
                   confidence="medium",
                   fix="Unpack into plain names (`x0, x1 = f(...)`) and use those names.")
