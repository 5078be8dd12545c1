"""NKI520: an entry kernel that writes its result into a parameter instead of returning an output it allocated
(the pre-SDK-2.21 pass-by-reference convention). Read from the kernel's Python AST (nki_common.kernel_function);
whether an undecorated function is launched as a kernel (`nki.baremetal()(fn)` anywhere in the file) from the
file's AST; whether a pass-by-reference launcher is given the kernel (`nki_jit()(kernel)`, in any file of the
project) from the project model (`ModuleContext.launched_by`)."""

from __future__ import annotations

import ast
import os

from ...api.hardware import Target
from ...findings import RelatedLocation, Severity
from ...parse.nki_model import NkiFile, NkiKernel
from ...project.index import LEGACY_LAUNCHERS
from ..registry import RuleSpec
from .common import (
    check,
    decorator_text,
    emit,
    kernel_findings,
    kernel_function,
    module_tree,
    per_text,
    resolve_api,
    scope_nodes,
    walk_nodes,
)

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI520", "kernel-writes-output-parameter", "deprecated-api", Severity.WARNING,
             "An entry kernel stores its result into a parameter instead of allocating the output and returning it.",
             fix="Drop the parameter, allocate the output with nl.ndarray(shape, dtype, buffer=nl.shared_hbm) "
                 "inside the kernel, store into it and return it.",
             doc="""\
## What it finds
An entry kernel (`@nki.jit`, `@nki.baremetal`, `@nki.benchmark`, `@nki.profile`, or a function wrapped with one of them, `nki.baremetal()(fn)`) that writes into one of its own parameters (`nl.store(out[...], ...)`, `nisa.dma_copy(dst=out, ...)`, through a view such as `out.reshape(...)`) and does not return it: the pre-2.21 pass-by-reference convention, where the caller allocated the output and passed it in. Parameters annotated `nt.mutable_tensor` and returned are in-place updates and are not reported; a `nt.mutable_tensor` parameter written and not returned is. Sub-kernels and helpers called from another kernel (nki-library's `output` parameters) are not entry kernels and are skipped, and so are kernels launched only through `torch_neuronx.nki_jit` / `jax_neuronx.nki_call`, whose convention was pass-by-reference.

The legacy framework launchers are looked for in every file checked together (a directory check: the project model records which functions each module hands to one): `nki_jit()(kernel)`, `nki_jit(kernel)`, `nki_jit(func=kernel)`, `torch_neuronx.nki_jit()(mod.kernel)`, `nki_call(partial(kernel, ...), ...)`, with `nki_jit` imported from `torch_neuronx` or `torch_neuronx.xla_impl.ops` (at module level or inside the function that launches), or a bare `nki_jit` / `nki_call` bound nowhere in the module. A module's own `nki_jit = nki.trace`, or `from nki import jit as nki_jit`, is not that launcher.

Severity, by what the compiler of the version does:
- legacy dialect (`neuronxcc.nki`) with `@nki.jit`: `error`. `nki.jit` arrived in SDK 2.21 together with the "new calling convention in NKI kernels, where kernel output tensors are explicitly returned from the kernel instead of pass-by-reference" (NKI release notes, 2.21); from then on top-level kernel parameters are immutable and storing into one fails with `err_cannot_update_immutable_parameter`. A written `nt.mutable_tensor` parameter that is not returned fails with `err_mutable_parameter_not_returned`: also an `error`.
- an output parameter that defaults to `None` (`def k(q, k, v, output=None)`), any dialect or launcher, when no file checked with it hands the kernel to a pass-by-reference launcher (next item): `warning`. The default says the kernel expects a caller to pass the output in, which only a pass-by-reference launcher does, and that launcher is usually in another module (optimum-neuron launches its `@nki.jit` flash-attention kernel through `torch_neuronx.nki_jit()(kernel)` from a sibling module, in production). Launched through `nki.jit` itself, the store still fails.
- a kernel that one of those pass-by-reference launchers is given, in its own file or another one checked with it (optimum-neuron's `attention_base.py`: `_flash_fwd_large_d_call = nki_jit()(flash_fwd_large_d)`, with the `@nki.jit` kernel in `flash_attention_nki.py`): `info`, naming the launcher's `path:line` (evidence `launched_by_reference`, and a related location). Through that launcher the caller's output tensor receives the write, so the code works where it is used; the finding records that a launch through the kernel's own decorator would fail the same store, and that the framework launchers are gone from current SDKs (`torch_neuronx.nki_jit` is unsupported from SDK 2.24, whose notice says to call `@nki.jit` functions directly), so migrating means returning the output. A decorated kernel that some function of the project also calls directly keeps the severity below, and the message names both. Checked alone, the kernel's file shows no launcher and gets the severity below.
- legacy dialect with `nki.baremetal` / `benchmark` / `profile` / `simulate_kernel`: `warning`. These decorators existed in SDK 2.20, whose convention was pass-by-reference; the table's legacy version (0.1) spans SDK 2.20-2.27, so the tool cannot tell which one the code was written for.
- new dialect (`import nki`, NKI 0.2+): `warning`. Every new-dialect release returns outputs (kernel outputs allocated `nl.shared_hbm`, NKI 0.3 breaking changes); a write into an input is not an output the framework sees (a torchxla-mode kernel's result stays invisible to XLA), but no release note states a compile error.

## Why it matters on Trainium
The framework maps a kernel's returned tensors to its outputs. A kernel that writes into an argument either fails to compile (immutable parameter) or computes a result nobody receives: the caller's tensor keeps its old contents.

## Example
```python
@nki.jit
def add(a, b, out):                     # out: caller-allocated
    nl.store(out, value=nl.load(a) + nl.load(b))
```

## Fix
```python
@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a) + nl.load(b))
    return out
```
and update the callers (`out = add(a, b)`).
""", policy="failure", emits=(Severity.ERROR, Severity.INFO)),
]

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO
# launchers whose kernels return their outputs (SDK 2.21+ for nki.jit; the others also existed in 2.20)
LAUNCHERS = frozenset({"nki.jit", "nki.baremetal", "nki.benchmark", "nki.profile", "nki.simulate_kernel"})
# the 2.20-era framework launchers: pass-by-reference was their convention
PASS_BY_REFERENCE = LEGACY_LAUNCHERS | {"nki_jit", "nki_call"}
# methods that give a view of the same HBM tensor
VIEWS = frozenset({"reshape", "ap", "view", "select", "permute", "rearrange", "broadcast", "slice", "bitcast",
                   "indirect", "vector_select", "as_tile", "__getitem__"})


def _root(node: ast.AST) -> str | None:
    """The variable an HBM access expression starts from: out[...], out.reshape(...)[...], out.ap(...)."""
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in VIEWS:
            node = node.func.value
        elif isinstance(node, ast.Attribute) and node.attr in ("T",):
            node = node.value
        else:
            return node.id if isinstance(node, ast.Name) else None


def _writes(nf: NkiFile, fn: ast.FunctionDef) -> list[tuple[str, int]]:
    """(root variable, line) of every write into an HBM tensor expression: nl.store's dst, an ISA call's dst=
    (first positional in the new dialect), a subscript assignment."""
    out = []
    new = nf.dialect in ("new", "transitional")
    for n in scope_nodes(nf, fn):
        if isinstance(n, ast.Call):
            api = resolve_api(nf, n.func)
            dst = next((kw.value for kw in n.keywords if kw.arg == "dst"), None)
            if dst is None and n.args and (api == "nl.store" or (new and api.startswith("nisa."))):
                dst = n.args[0]
            if dst is not None and (api == "nl.store" or api.startswith("nisa.")):
                r = _root(dst)
                if r:
                    out.append((r, n.lineno))
        elif isinstance(n, (ast.Assign, ast.AugAssign)):
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                if isinstance(t, ast.Subscript) and (r := _root(t)):
                    out.append((r, n.lineno))
    return out


def _aliases(nf: NkiFile, fn: ast.FunctionDef, params: set[str]) -> dict[str, str]:
    """name -> parameter it views (`out_2d = out.reshape(...)`), to a fixed point."""
    alias = {p: p for p in params}
    assigns = [n for n in scope_nodes(nf, fn) if isinstance(n, ast.Assign) and len(n.targets) == 1
               and isinstance(n.targets[0], ast.Name)]
    changed = True
    while changed:
        changed = False
        for a in assigns:
            name = a.targets[0].id
            r = _root(a.value) if isinstance(a.value, (ast.Subscript, ast.Call, ast.Attribute)) else None
            if r in alias and name not in alias:
                alias[name] = alias[r]
                changed = True
    return alias


def _root_node(node: ast.AST) -> ast.Name | None:
    while isinstance(node, (ast.Subscript, ast.Call, ast.Attribute)):
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Attribute) and node.func.attr in VIEWS):
                return None
            node = node.func.value
        else:
            node = node.value
    return node if isinstance(node, ast.Name) else None


def _read_after_write(nf: NkiFile, fn: ast.FunctionDef, alias: dict[str, str]) -> set[str]:
    """Parameters whose data the kernel reads (a source operand, not a write target, a view definition or a
    .shape/.dtype query): a scratch buffer the caller provides, not an output."""
    skip: set[int] = set()
    for n in scope_nodes(nf, fn):
        if isinstance(n, ast.Attribute) and n.attr in ("shape", "dtype", "ndim", "size"):
            skip.add(id(n.value))
        elif isinstance(n, ast.Call):
            dst = next((kw.value for kw in n.keywords if kw.arg == "dst"), None)
            api = resolve_api(nf, n.func)
            if dst is None and n.args and (api == "nl.store" or (nf.dialect != "legacy" and api.startswith("nisa."))):
                dst = n.args[0]
            if dst is not None and (r := _root_node(dst)) is not None:
                skip.add(id(r))
        elif isinstance(n, ast.Assign):
            for t in n.targets:
                if (r := _root_node(t)) is not None:
                    skip.add(id(r))
            if len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and (r := _root_node(n.value)) is not None:
                skip.add(id(r))  # a view of the parameter: its uses are counted through the alias
    return {alias[n.id] for n in scope_nodes(nf, fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and n.id in alias and id(n) not in skip}


def _returned(nf: NkiFile, fn: ast.FunctionDef) -> set[str]:
    names: set[str] = set()
    for n in scope_nodes(nf, fn):
        if isinstance(n, ast.Return) and n.value is not None:
            for e in ast.walk(n.value):
                if isinstance(e, ast.Name):
                    names.add(e.id)
    return names


def _wrapped_names(nf: NkiFile) -> dict[str, list[tuple[str, int]]]:
    """Functions launched by a wrapper call anywhere in the file: `nki.baremetal()(fn)`, `nki.jit(fn)`,
    `nki.simulate_kernel(fn, ...)`, `nki_jit()(fn)` -> {fn: [(launcher, line)]}. Once per file text (every kernel
    asks)."""
    return per_text(nf, "_wrapped_names", _find_wrapped)


def _find_wrapped(nf: NkiFile) -> dict[str, list[tuple[str, int]]]:
    tree = module_tree(nf)
    trees = [tree] if tree is not None else _top_level_trees("\n".join(nf.lines))
    out: dict[str, list[tuple[str, int]]] = {}
    calls = walk_nodes(nf, tree, ast.Call) if tree is not None else \
        (n for tree in trees for n in ast.walk(tree) if isinstance(n, ast.Call))
    for n in calls:
        if not n.args or not isinstance(n.args[0], ast.Name):
            continue
        launcher = resolve_api(nf, n.func.func if isinstance(n.func, ast.Call) else n.func)
        if launcher in LAUNCHERS or launcher in PASS_BY_REFERENCE:
            out.setdefault(n.args[0].id, []).append((launcher, n.lineno))
    return out


def _top_level_trees(text: str):
    """Each top-level statement that compiles, for a file that does not (a syntax error elsewhere must not
    hide a launcher)."""
    chunk: list[str] = []
    for line in [*text.splitlines(), "\0"]:
        if chunk and line[:1] not in ("", " ", "\t", "#", ")", "]", "}") and not line.startswith(("else", "elif",
                                                                                                 "except", "finally")):
            try:
                yield ast.parse("\n".join(chunk))
            except (SyntaxError, ValueError):
                pass
            chunk = []
        chunk.append(line)


def _launcher(nf: NkiFile, k: NkiKernel) -> str | None:
    """The decorator, else the file's first wrapper that returns outputs, else its first pass-by-reference one."""
    wrapped = _wrapped_names(nf).get(k.name, ())
    if k.decorator is not None and (not wrapped or decorator_text(nf, k)):
        return k.decorator  # (the parser gives a def wrapped by `k = torch_neuronx.nki_jit(f)` nki.jit's decorator)
    return next((w for w, _ in wrapped if w not in PASS_BY_REFERENCE), wrapped[0][0] if wrapped else None)


def _by_reference(nf: NkiFile, k: NkiKernel) -> tuple[tuple[str, int, str], ...]:
    """(path, line, launcher) of every pass-by-reference launcher given the kernel, in this file or another of the
    project, from the project model (`attention_base.py`: `_call = nki_jit()(flash_fwd_large_d)`; the index tells
    a module's own `nki_jit = nki.trace` from the framework's), else from this file's wrapper calls."""
    ctx = nf.project
    if ctx is not None:
        sites = {(nf.path if path == ctx.module.path else path, line, w)
                 for path, line, w in ctx.launched_by.get(k.name, ())}
    else:
        sites = {(nf.path, line, w) for w, line in _wrapped_names(nf).get(k.name, ()) if w in PASS_BY_REFERENCE}
    return tuple(sorted(sites, key=lambda s: (s[0] != nf.path, s[0], s[1])))


def _none_defaults(fn: ast.FunctionDef) -> set[str]:
    """Parameters whose default is `None`."""
    a = fn.args
    pos = [*a.posonlyargs, *a.args]
    out = {p.arg for p, d in zip(pos[len(pos) - len(a.defaults):], a.defaults)
           if isinstance(d, ast.Constant) and d.value is None}
    return out | {p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults)
                  if isinstance(d, ast.Constant) and d.value is None}


def _mutable(arg: ast.arg) -> bool:
    return arg.annotation is not None and "mutable" in ast.unparse(arg.annotation)


@check("NKI520", per_file=True)
def output_parameter(nf: NkiFile, t: Target):
    if nf.dialect not in ("legacy", "new", "transitional"):
        return
    for k in nf.kernels:
        if k.role in ("sub-kernel", "helper") or (k.role is None and k.helper):
            continue  # a sub-kernel's parameters are its caller's tensors: writing them is how it hands results back
        launcher = _launcher(nf, k)
        if launcher is None or launcher in PASS_BY_REFERENCE:
            continue
        sites = _by_reference(nf, k)
        direct = bool(sites) and k.decorator is not None and k.context is not None and bool(k.context.callers)
        # per kernel (the language server re-walks only an edited kernel): its def, the launchers
        yield from kernel_findings(nf, k, "NKI520", lambda nf, k, w=launcher, s=sites, d=direct:
                                   _kernel_outputs(nf, k, w, s, d), launcher, sites, direct)


def _site_text(nf: NkiFile, path: str, line: int) -> str:
    """`line 12` in the kernel's own file, else `attention_base.py:53` (relative to the kernel's folder when below it)."""
    if path == nf.path:
        return f"line {line}"
    rel = os.path.relpath(path, os.path.dirname(nf.path) or ".") if os.path.isabs(path) == os.path.isabs(nf.path) \
        else path
    return f"{path if rel.startswith('..') else rel}:{line}"


def _kernel_outputs(nf: NkiFile, k: NkiKernel, launcher: str, sites: tuple = (), direct: bool = False):
    """NKI520's findings in one entry kernel launched by `launcher` (and by the pass-by-reference `sites`)."""
    fn = kernel_function(nf, k)
    if fn is None:
        return
    args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
    params = {a.arg: a for a in args}
    optional = _none_defaults(fn)
    writes = _writes(nf, fn)
    if not writes:
        return
    alias = _aliases(nf, fn, set(params))
    returned = {alias[n] for n in _returned(nf, fn) if n in alias}
    read = _read_after_write(nf, fn, alias) if nf.dialect != "legacy" else set()
    written: dict[str, list[int]] = {}
    for r, line in writes:
        if r in alias:
            written.setdefault(alias[r], []).append(line)
    for p, lines in written.items():
        arg = params[p]
        mutable = _mutable(arg)
        if p in returned or (p in read and not mutable):
            continue  # an in-place update handed back (nt.mutable_tensor), or a caller-provided workspace
        legacy = nf.dialect == "legacy"
        fails = (legacy and launcher == "nki.jit") or p in optional
        if sites and not mutable and not direct:
            # the framework launcher the project uses passes the output in: the write reaches that caller
            sev = I
            first = sites[0]
            more = f" (and {len(sites) - 1} more)" if len(sites) > 1 else ""
            why = (f"it is launched through {first[2]} at {_site_text(nf, first[0], first[1])}{more}, SDK 2.20's "
                   "pass-by-reference convention, so that caller receives the write. "
                   + (f"Launched through {launcher} itself the store would fail "
                      "(err_cannot_update_immutable_parameter), and the" if fails else "The")
                   + " framework launchers are gone from current SDKs (torch_neuronx.nki_jit is unsupported "
                   "from SDK 2.24): to migrate, return the output and call the kernel directly")
        elif mutable:
            sev = E if legacy else W
            why = ("it is annotated nt.mutable_tensor but not returned: a mutable kernel parameter must be "
                   "returned (err_mutable_parameter_not_returned)")
        elif p in optional:
            # `output=None`: the kernel itself expects a caller to pass the output in, which only a
            # pass-by-reference launcher (torch_neuronx.nki_jit, often in another module) does
            sev = W
            why = (f"its `{p}=None` default says a caller passes the output in, the pass-by-reference "
                   "convention of SDK 2.20's framework launchers (torch_neuronx.nki_jit()(kernel), nki_call); "
                   f"launched through {launcher} itself, parameters are immutable and the store fails "
                   "(err_cannot_update_immutable_parameter)")
        elif legacy and launcher == "nki.jit":
            sev = E
            why = ("since SDK 2.21 (where nki.jit arrived) top-level kernel parameters are immutable and "
                   "outputs are returned; storing into one fails with err_cannot_update_immutable_parameter")
        elif legacy:
            sev = W
            why = ("since SDK 2.21 kernels return their outputs and their parameters are immutable "
                   f"(err_cannot_update_immutable_parameter); only SDK 2.20's {launcher} took outputs by reference")
        else:
            sev = W
            why = ("new-dialect kernels return their outputs (allocated nl.shared_hbm); a write into an input "
                   "is not an output the framework receives (under torchxla it stays invisible to XLA)")
        if sites and direct and not mutable:
            why += (f"; it is also launched through {sites[0][2]} at {_site_text(nf, sites[0][0], sites[0][1])}, "
                    f"which passes outputs in, but {k.context.callers[0]} calls it directly")
        f = emit("NKI520", nf, arg.lineno, arg.col_offset + 1, arg.lineno, arg.col_offset + 1 + len(p),
                 f"Kernel `{k.name}` writes its result into parameter `{p}` (line {min(lines)}) and does not "
                 f"return it; {why}.",
                 {"kernel": k.name, "parameter": p, "write_lines": sorted(set(lines)), "launcher": launcher,
                  "dialect": nf.dialect, "mutable": mutable,
                  "launched_by_reference": [f"{_site_text(nf, path, line)} ({w})" for path, line, w in sites]},
                 severity=sev, confidence="high" if sev == E else "medium")
        related = [RelatedLocation(file=nf.path, line=n, message=f"write into `{p}`") for n in sorted(set(lines))[:8]]
        related += [RelatedLocation(file=path, line=line, message=f"launched through {w}, outputs by reference")
                    for path, line, w in sites[:4]]
        yield f.model_copy(update={"related": related})
