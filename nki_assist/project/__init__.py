"""The project model: the files being checked, indexed once, between the parse and the rules.

Public API (docs/architecture.md, "The project model"):

- `Project.build({path: text})` indexes every file with Python's `ast` (modules, functions at any
  depth, decorators, imports resolved inside the tree incl. relative ones, call sites, module
  constants, guards) and resolves the calls across modules. One file is a project too.
- `Project.context(path)` -> `ModuleContext`: what the project knows about one file: per function a
  `FunctionContext` (role entry / sub-kernel / helper / function, callers, what the call sites pass
  to each parameter, the divisibility guards of the function, its callers and config classes), the
  constants it imports from other modules, and `from x import name` where `x` in the tree lacks `name`.
- `apply_context(nki_file, ctx)` hands those facts to the parsed file's kernels (`NkiKernel.role`,
  `NkiKernel.context`) so the rules read them like any other kernel fact.
- `python_syntax_error(text)`: where CPython stops, the one syntax error a file gets.

Nothing here reads files or raises on bad code; check.py reads the files and builds the project.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from typing import Any

from ..parse.nki_model import NkiFile
from .index import CallSite, FunctionInfo, ModuleInfo, TileFact, index_module, python_syntax_error
from .incremental import PythonMemo
from .model import ENTRY, FUNCTION, HELPER, SUB_KERNEL, FunctionContext, ModuleContext, Project

__all__ = [
    "Project", "ModuleContext", "FunctionContext", "ModuleInfo", "FunctionInfo", "CallSite", "TileFact",
    "index_module", "python_syntax_error", "apply_context", "context_for", "context_digest",
    "ENTRY", "SUB_KERNEL", "HELPER", "FUNCTION",
]


def context_for(path: str, text: str, project: Project | None, cache=None) -> ModuleContext | None:
    """The file's slice of `project`, or of a one-file project when the file is not in it. With a
    `ParseCache` (one document being edited), the one-file pass reuses the unchanged parts of the last one."""
    ctx = project.context(path) if project is not None else None
    if ctx is None:
        memo = cache.extra.setdefault("python-level", PythonMemo()) if cache is not None else None
        ctx = Project([index_module(path, text, keep_tree=True, memo=memo)]).context(path)
        ctx.memo = memo
    return ctx


def apply_context(nf: NkiFile, ctx: ModuleContext | None) -> NkiFile:
    """Give each kernel its role and project facts; a sub-kernel or helper receives its caller's tiles."""
    if ctx is None:
        return nf
    nf.project = ctx
    if ctx.module.syntax_error is not None and getattr(nf, "python_syntax_error", False) is None:
        # tree-sitter reads some errors Python rejects (a line dedented out of its block, then an indented
        # line): the parser only asks CPython when its own tree has errors, the project index always does
        nf.python_syntax_error = ctx.module.syntax_error
    for k in getattr(nf, "kernels", ()):
        fc = ctx.functions.get(k.name)
        k.role, k.context = (fc.role, fc) if fc is not None else (None, None)  # a reused kernel's are stale
        if fc is None:
            continue
        if fc.role in (HELPER, SUB_KERNEL):
            k.helper = True
    return nf


def context_digest(ctx: ModuleContext | None) -> str:
    """A digest of everything `ctx` tells a file's checks (every field but the memo and the syntax tree),
    the same in every process (sets are sorted: string hashes differ between runs). `check`'s cache keys a
    file's entry with it, so an edit elsewhere re-checks only the files whose slice of the project changed."""
    if ctx is None:
        return ""
    plain = {name: _plain(getattr(ctx, name)) for name in _fields_of(ModuleContext) if name != "module"}
    plain["module"] = _module_part(ctx.module)
    text = json.dumps(plain, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _module_part(m: ModuleInfo) -> list:
    """What the digest needs of the file's own module. Its index follows from its text (which the cache entry's
    key holds), its dotted name and package (the `__init__.py` files above it) and the Python that parsed it;
    the project changes only the name of an ambiguous module (and its functions' `module`) and sets each call's
    resolved callee. Those, not every fact again: the whole module was two thirds of a digest's time."""
    return [sys.version, m.name, m.package, m.path,
            [[f.key, [c.resolved for c in f.calls]] for f in m.functions.values()]]


_SKIP = {"memo", "tree", "tree_text"}
_FIELDS: dict[type, tuple[str, ...] | None] = {}  # a dataclass's digested field names; None: not a dataclass


def _fields_of(kind: type) -> tuple[str, ...] | None:
    try:
        return _FIELDS[kind]
    except KeyError:
        names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind) if f.name not in _SKIP) \
            if dataclasses.is_dataclass(kind) else None
        return names


_SCALARS = frozenset((str, int, type(None), bool, float))


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is int or value is None or kind is bool or kind is float:
        return value  # most values: decided before the dataclass test (a quarter of a digest's time)
    names = _fields_of(kind)
    if names is not None:
        return {name: _plain(getattr(value, name)) for name in names}
    if isinstance(value, dict):
        return {repr(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        if len(value) < 2:  # most: a guard's one divisor, a config value (nothing to sort)
            return [_plain(v) for v in value]
        if _SCALARS.issuperset(map(type, value)):  # divisors, names: each is its own plain form
            return sorted(value, key=repr)
        return sorted((_plain(v) for v in value), key=repr)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
