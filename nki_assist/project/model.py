"""The project: the module index of every checked file, with calls resolved across modules.

From the resolved calls come the kernel roles (entry kernel, sub-kernel, helper), what a helper's
parameters receive at their call sites (buffer, dtype, shape), and the guards that protect a function:
its own asserts, those of every function that calls it (transitively), and the validations of config
classes. `ModuleContext` is the slice one file's rules read (`Project.context(path)`).
"""

from __future__ import annotations

import math
import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from .index import CallSite, FunctionInfo, ModuleInfo, TileFact, index_module

ENTRY, SUB_KERNEL, HELPER, FUNCTION = "entry", "sub-kernel", "helper", "function"
_MAX_CALLER_DEPTH = 8


@dataclass
class FunctionContext:
    """What the project knows about one function from outside its body (`NkiKernel.context`)."""

    role: str  # entry | sub-kernel | helper | function
    callers: tuple[str, ...] = ()  # "module:qualname" of each direct caller
    # parameter -> facts from every call site (a field is None where the call sites disagree)
    param_facts: dict[str, TileFact] = field(default_factory=dict)
    # leaf name (`B` for `dims.B`) -> divisors that guards of the function, its callers or a config class
    # check (`X % d`); None stands for a symbolic modulus
    mod_guards: dict[str, set[int | None]] = field(default_factory=dict)
    guarded: frozenset[str] = frozenset()  # leaf names those guards mention

    def proves_divisible(self, leaf: str, den: int) -> bool:
        """A guard checks `leaf % d` with d a multiple of `den` (or a symbolic modulus, trusted)."""
        return any(d is None or d % den == 0 for d in self.mod_guards.get(leaf, ()))


@dataclass
class ModuleContext:
    """The slice of the project one file's rules read."""

    module: ModuleInfo
    functions: dict[str, FunctionContext] = field(default_factory=dict)  # by simple name (NkiKernel.name)
    imported_constants: dict[str, Any] = field(default_factory=dict)  # alias -> value from another module
    missing_imports: list[tuple[str, int, str]] = field(default_factory=list)  # (alias, line, target module)
    # simple name -> (path, line, launcher) of each legacy launcher call in the project given the function
    launched_by: dict[str, list[tuple[str, int, str]]] = field(default_factory=dict)
    memo: Any = field(default=None, repr=False, compare=False)  # incremental.PythonMemo of an edited document

    def role(self, name: str) -> str | None:
        f = self.functions.get(name)
        return f.role if f else None


class Project:
    """Every checked module, indexed once. Build with `Project.build({path: text})`; one file alone is a
    project too (the language server, `check -`)."""

    def __init__(self, modules: Iterable[ModuleInfo], keep: frozenset[str] = frozenset()):
        """`keep`: paths of modules whose call sites still hold what the last build over the same modules resolved
        (the language server rebuilds after an edit that kept every module's name, functions and imports)."""
        self.modules: dict[str, ModuleInfo] = {}
        self.by_path: dict[str, ModuleInfo] = {}
        self.ambiguous: set[str] = set()  # module names several checked files claim (copies of one package)
        for m in modules:
            if m.name in self.modules:  # two scripts named alike outside any package: keep both, apart
                self.ambiguous.add(m.name)
                m.name = f"{m.name}@{m.path}"
                for f in m.functions.values():
                    f.module = m.name
            self.modules[m.name] = m
            self.by_path[m.path] = m
        self.functions: dict[str, FunctionInfo] = {f.key: f for m in self.modules.values()
                                                   for f in m.functions.values()}
        self.callers: dict[str, set[str]] = defaultdict(set)
        self._resolve_calls(keep)
        self.roles = self._roles()
        self._validated = self._config_validations()
        self._config_constants = self._config_values()

    @classmethod
    def build(cls, sources: Mapping[str, str], keep_trees: bool = False) -> "Project":
        """Index every source; `keep_trees` keeps each module's ast (`ModuleInfo.tree`) for later readers."""
        return cls(index_module(path, text, keep_tree=keep_trees) for path, text in sources.items())

    # ---- modules and names ------------------------------------------------------------------------
    def module(self, dotted: str) -> ModuleInfo | None:
        """The module of that dotted name; an absolute import written from another root matches by suffix
        (`nkilib.core.x` for a tree indexed as `src.nkilib.core.x`)."""
        m = self.modules.get(dotted)
        if m is not None or "." not in dotted:  # a bare `nki` is never `pkg.nki` of the tree
            return m
        memo = self.__dict__.setdefault("_suffix", {})
        if dotted not in memo:
            hits = [m for name, m in self.modules.items() if name.endswith("." + dotted)]
            memo[dotted] = hits[0] if len(hits) == 1 else None
        return memo[dotted]

    def lookup(self, target: str) -> tuple[ModuleInfo, str] | None:
        """`pkg.mod.name` -> (module pkg.mod, "name") when that module is in the project."""
        mod, _, name = target.rpartition(".")
        m = self.module(mod) if mod else None
        return (m, name) if m is not None else None

    def _resolve_calls(self, keep: frozenset[str] = frozenset()) -> None:
        resolve, callers = self._resolve, self.callers
        for m in self.modules.values():
            if m.path in keep:
                for f in m.functions.values():
                    for c in f.calls:
                        if c.resolved is not None and c.resolved != f.key:
                            callers[c.resolved].add(f.key)
                continue
            # a dotted callee (`nl.load`) resolves alike in every function of the module, `self.x` and a bare name
            # alike within one function: each is resolved once there (a module calls the same APIs again and again)
            dotted: dict[str, str | None] = {}
            for f in m.functions.values():
                local: dict[str, str | None] = {}
                for c in f.calls:
                    callee = c.callee
                    seen = local if "." not in callee or callee.startswith(("self.", "cls.")) else dotted
                    if callee in seen:
                        resolved = seen[callee]
                    else:
                        resolved = seen[callee] = resolve(m, f, callee)
                    c.resolved = resolved
                    if resolved is not None and resolved != f.key:
                        callers[resolved].add(f.key)

    def _resolve(self, m: ModuleInfo, f: FunctionInfo, callee: str) -> str | None:
        head, _, rest = callee.partition(".")
        if head in ("self", "cls") and f.in_class and rest and "." not in rest:
            hit = m.functions.get(f"{f.qualname.rsplit('.', 2)[0]}.{rest}") if "." in f.qualname else None
            return hit.key if hit else None
        if not rest:
            # a def in the same scope chain, then the module, then an import
            scope = f.qualname.split(".")
            for i in range(len(scope), -1, -1):
                hit = m.functions.get(".".join(scope[:i] + [head]))
                if hit is not None:
                    return hit.key
            target = m.imports.get(head)
            if target is None:
                return None
            hit = self._function_at(target)
            return hit.key if hit else None
        target = m.imports.get(head)
        if target is None:
            return None
        found = self.lookup(f"{target}.{rest}")
        if found is None:
            return None
        hit = found[0].functions.get(found[1])
        return hit.key if hit else None

    def _function_at(self, target: str) -> FunctionInfo | None:
        """The function `pkg.mod.name` names, also when a package `__init__` re-exports it."""
        found = self.lookup(target)
        if found is None:
            return None
        fm, name = found
        hit = fm.functions.get(name)
        if hit is None and name in fm.imports:  # re-exported by a package __init__
            again = self.lookup(fm.imports[name])
            hit = again[0].functions.get(again[1]) if again else None
        return hit

    # ---- roles ------------------------------------------------------------------------------------
    def _roles(self) -> dict[str, str]:
        reached: set[str] = set()  # called (transitively) from a kernel
        todo = [k for k, f in self.functions.items() if f.is_kernel]
        while todo:
            f = self.functions[todo.pop()]
            for c in f.calls:
                if c.resolved and c.resolved != f.key and c.resolved not in reached:
                    reached.add(c.resolved)
                    todo.append(c.resolved)
        roles = {}
        for key, f in self.functions.items():
            if f.is_kernel:
                # `k = nki.jit(fn)` makes a top-level kernel of fn, whoever else calls the bare function
                roles[key] = SUB_KERNEL if key in reached and not f.wrapped_kernel else ENTRY
            else:
                roles[key] = HELPER if key in reached or self.callers.get(key) else FUNCTION
        return roles

    def callers_of(self, key: str, depth: int = _MAX_CALLER_DEPTH) -> list[str]:
        """Every function that calls `key`, directly or through others (nearest first)."""
        out, seen, frontier = [], {key}, [key]
        for _ in range(depth):
            nxt = []
            for k in frontier:
                for c in sorted(self.callers.get(k, ())):
                    if c not in seen:
                        seen.add(c)
                        out.append(c)
                        nxt.append(c)
            frontier = nxt
        return out

    # ---- call-site facts and guards ------------------------------------------------------------------
    def param_facts(self, key: str) -> dict[str, TileFact]:
        """For each parameter of `key`, what every resolved call site passes (buffer, dtype, shape): a
        field is set when all call sites that say something agree."""
        f = self.functions[key]
        return _merge_sites(self._sites(f, depth=3))

    def _sites(self, f: FunctionInfo, depth: int) -> dict[str, list[TileFact | None]]:
        # each function's callers' sites are asked again by every function they call: once per project (read only)
        memo = self.__dict__.setdefault("_sites_memo", {})
        got = memo.get((f.key, depth))
        if got is None:
            got = memo[(f.key, depth)] = self._sites_of(f, depth)
        return got

    def _sites_of(self, f: FunctionInfo, depth: int) -> dict[str, list[TileFact | None]]:
        params = f.params[1:] if f.in_class and f.params[:1] in (["self"], ["cls"]) else f.params
        out: dict[str, list[TileFact | None]] = defaultdict(list)
        for caller_key in sorted(self.callers.get(f.key, ())):
            caller = self.functions[caller_key]
            upstream = None
            for c in self._calls(caller_key, f.key):
                bound = dict(zip(params, c.args))
                bound.update({k: v for k, v in c.kwargs.items() if k in params})
                for p, base in bound.items():
                    fact = caller.tiles.get(base)
                    if fact is None and base in caller.params and depth > 0:
                        if upstream is None:
                            upstream = _merge_sites(self._sites(caller, depth - 1))
                        fact = upstream.get(base)
                    out[p].append(fact)
        return out

    def guards(self, key: str) -> tuple[dict[str, set[int | None]], set[str]]:
        """(leaf -> divisors, leaves mentioned) over the guards of `key`, its callers and config classes."""
        mods: dict[str, set[int | None]] = defaultdict(set)
        names: set[str] = set()
        chain = [key] + self.callers_of(key)
        # what the function or a caller runs before on the same objects: validators
        # (`check_kernel_compatibility(dims, cfg)`) and the builders of its config objects
        validators = [r for k in chain for r in self._resolved(k)]
        validators += [r for k in validators for r in self._resolved(k)]
        for k in dict.fromkeys(chain + validators):
            leaf_mods, leaf_names = self._leaf_guards(k)
            for leaf, den in leaf_mods:
                mods[leaf].add(den)
            names |= leaf_names
        for leaf, dens in self._validated.items():
            mods[leaf] |= dens
        for leaf, value in self._config_constants.items():
            mods[leaf].add(value)  # every config built in the tree sets it to multiples of this
        # a parameter is what its callers pass: `load_rows(buf, a, N)` after `assert N % 128 == 0` guards `n`
        for param, bases in self._arg_names(key, depth=3).items():
            for b in bases:
                mods[param] |= mods.get(b.rsplit(".", 1)[-1], set())
                if b.rsplit(".", 1)[-1] in names:
                    names.add(param)
        return dict(mods), names

    def _arg_names(self, key: str, depth: int) -> dict[str, set[str]]:
        """parameter -> the names callers pass for it, through callers' own parameters (`depth` levels);
        once per project, like `_sites` (readers never change it)."""
        memo = self.__dict__.setdefault("_arg_names_memo", {})
        got = memo.get((key, depth))
        if got is None:
            got = memo[(key, depth)] = self._arg_names_of(key, depth)
        return got

    def _arg_names_of(self, key: str, depth: int) -> dict[str, set[str]]:
        f = self.functions[key]
        params = f.params[1:] if f.in_class and f.params[:1] in (["self"], ["cls"]) else f.params
        out: dict[str, set[str]] = defaultdict(set)
        for caller_key in sorted(self.callers.get(key, ())):
            upstream = self._arg_names(caller_key, depth - 1) if depth > 1 else {}
            for c in self._calls(caller_key, key):
                bound = dict(zip(params, c.args))
                bound.update({k: v for k, v in c.kwargs.items() if k in params})
                for p, base in bound.items():
                    if base:
                        out[p].add(base)
                        out[p] |= upstream.get(base, set())
        return out

    # every file's slice asks these of the same functions again: each is computed once per project
    def _calls(self, caller: str, callee: str) -> list[CallSite]:
        """The calls of `caller` resolved to `callee`, in source order."""
        index = self.__dict__.get("_calls_between")
        if index is None:
            index = self.__dict__["_calls_between"] = defaultdict(list)
            for f in self.functions.values():
                for c in f.calls:
                    if c.resolved:
                        index[(f.key, c.resolved)].append(c)
        return index.get((caller, callee), ())

    def _resolved(self, key: str) -> list[str]:
        """What the calls of `key` resolve to, in source order."""
        memo = self.__dict__.setdefault("_resolved_calls", {})
        if key not in memo:
            memo[key] = [c.resolved for c in self.functions[key].calls if c.resolved]
        return memo[key]

    def _leaf_guards(self, key: str) -> tuple[list[tuple[str, int | None]], set[str]]:
        """The guards of `key` by leaf name: (leaf, divisor) of its `X % d` checks, and the leaves they mention."""
        memo = self.__dict__.setdefault("_leaf_guard_memo", {})
        if key not in memo:
            f = self.functions[key]
            memo[key] = ([(left.rsplit(".", 1)[-1], den) for left, den in f.mod_guards],
                         {g.rsplit(".", 1)[-1] for g in f.guarded})
        return memo[key]

    def _config_values(self) -> dict[str, int]:
        """Keyword -> gcd of the constants every constructor call in the tree passes for it (`Cfg(I0=128)`);
        a keyword that is ever passed a non-constant is left out."""
        seen: dict[str, list[Any]] = defaultdict(list)
        for f in self.functions.values():
            for k, v in f.config_values:
                seen[k].append(v)
        out = {}
        for k, vals in seen.items():
            if vals and all(isinstance(v, int) and v > 0 for v in vals):
                out[k] = math.gcd(*vals)
        return out

    def _config_validations(self) -> dict[str, set[int | None]]:
        """`self.X % d` checked in a method of any class: every `obj.X` of that config is validated."""
        out: dict[str, set[int | None]] = defaultdict(set)
        for f in self.functions.values():
            if f.in_class is None:
                continue
            for left, den in f.mod_guards:
                if left.startswith("self."):
                    out[left.rsplit(".", 1)[-1]].add(den)
        return dict(out)

    # ---- legacy launchers ---------------------------------------------------------------------------
    def _launch_sites(self) -> dict[str, list[tuple[str, int, str]]]:
        """Function key -> (path, line, launcher) of each `ModuleInfo.launches` entry that names it; once per
        project."""
        got = self.__dict__.get("_launches")
        if got is None:
            got = self.__dict__["_launches"] = defaultdict(list)
            for m in self.modules.values():
                for scope, passed, launcher, line in m.launches:
                    key = self._launched(m, scope, passed)
                    if key is not None:
                        got[key].append((m.path, line, launcher))
        return got

    def _launched(self, m: ModuleInfo, scope: str, passed: str) -> str | None:
        """The function a launch passes: a bare name from its scope outwards, else an absolute dotted path (the
        index resolved the imports), through a package `__init__`'s re-export."""
        if "." not in passed:
            parts = scope.split(".") if scope else []
            for i in range(len(parts), -1, -1):
                hit = m.functions.get(".".join(parts[:i] + [passed]))
                if hit is not None:
                    return hit.key
            return None
        hit = self._function_at(passed)
        return hit.key if hit else None

    # ---- one file's slice ---------------------------------------------------------------------------
    def context(self, path: str) -> ModuleContext | None:
        """The file's slice, computed once (readers never change it)."""
        memo = self.__dict__.setdefault("_contexts", {})
        if path not in memo:
            memo[path] = self._context(path)
        return memo[path]

    def _context(self, path: str) -> ModuleContext | None:
        m = self.by_path.get(path)
        if m is None:
            return None
        ctx = ModuleContext(module=m)
        for f in sorted(m.functions.values(), key=lambda f: (f.nested, f.line)):
            if f.name in ctx.functions:
                continue  # the simple name belongs to the first top-level definition
            key = f.key
            mods, names = self.guards(key)
            ctx.functions[f.name] = FunctionContext(self.roles[key], tuple(sorted(self.callers.get(key, ()))),
                                                    self.param_facts(key), mods, frozenset(names))
            if key in self._launch_sites():
                ctx.launched_by[f.name] = self._launch_sites()[key]
        for alias, target in m.imports.items():
            found = self.lookup(target)
            if found is None:
                continue
            tm, name = found
            if name in tm.constants:
                ctx.imported_constants[alias] = tm.constants[name]
            elif tm.syntax_error is None and not tm.star_imports and tm.name not in self.ambiguous \
                    and name not in tm.defined and (tm is m or name not in tm.imports) \
                    and self.module(target) is None and not _dunder(name) and not _submodule_file(tm, name):
                ctx.missing_imports.append((alias, m.import_lines.get(alias, 1), tm.name))
        return ctx


def _submodule_file(m: ModuleInfo, name: str) -> bool:
    """`from pkg import mod`: a submodule that exists on disk but is not among the checked files."""
    if not m.path.endswith("__init__.py"):
        return False
    base = os.path.join(os.path.dirname(m.path), name)
    return os.path.isfile(base + ".py") or os.path.isdir(base)


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _agreed(facts: list[TileFact], attr: str):
    vals = {getattr(f, attr) for f in facts}
    return vals.pop() if len(vals) == 1 else None


def _merge_sites(sites: dict[str, list[TileFact | None]]) -> dict[str, TileFact]:
    out = {}
    for p, facts in sites.items():
        known = [f for f in facts if f is not None]
        if not known:
            continue

        # a buffer counts only when every call site says the same one (an unknown site could pass HBM)
        buf = _agreed(known, "buffer") if len(known) == len(facts) else None
        out[p] = TileFact(buf, _agreed(known, "dtype"), _agreed(known, "shape"))
    return out
