"""The module index: every checked Python file read once with the standard `ast` into plain facts.

What one module says about itself: its dotted name, the functions it defines (at any depth: under
`if HAS_NKI:` / `try:`, in class bodies, inside factory functions) with their decorators, parameters,
call sites, assert-like guards and the buffers of the tiles they allocate; its imports (relative ones
resolved against the package); its integer/float module constants. Facts are plain data (picklable),
so a parallel check can hand the index to its workers.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from typing import Any

from ..parse import intexpr
from ..parse.consts import TILE_SIZE
from ..parse.pyast import branch_nodes, dotted_name
from ..parse.pyast import python_syntax_error  # noqa: F401  (re-exported)

# decorators (after import resolution) that make a function a kernel
KERNEL_DECORATORS = frozenset({
    "nki.jit", "neuronxcc.nki.jit", "torch_neuronx.nki_jit", "nki.baremetal", "neuronxcc.nki.baremetal",
    "nki.benchmark", "neuronxcc.nki.benchmark", "nki.profile", "neuronxcc.nki.profile",
    "nki.simulate_kernel", "neuronxcc.nki.simulate_kernel", "jax_neuronx.nki_call",
})
# the SDK 2.20-era framework launchers (outputs passed in by reference): `nki_jit()(f)`, `nki_jit(f)`, `nki_call(f, ...)`
LEGACY_LAUNCHERS = frozenset({"torch_neuronx.nki_jit", "torch_neuronx.xla_impl.ops.nki_jit", "jax_neuronx.nki_call"})
_LEGACY_LEAVES = ("nki_jit", "nki_call")  # a file without either word launches nothing (the walk is skipped)
# a call whose name says it asserts (`kernel_assert(cond, msg)`, `assert_shape(...)`): a guard like `assert`
ASSERT_HELPER = re.compile(r"(?:^|_)assert(?:_|$)|^check_|^validate_|^_validate", re.I)
_BUFFERS = {"sbuf": "sbuf", "psum": "psum", "hbm": "hbm", "shared_hbm": "shared_hbm",
            "private_hbm": "private_hbm"}
_ALLOC_CALLS = {"ndarray", "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
                "empty_like", "alloc", "alloc_stack", "alloc_heap"}


@dataclass
class TileFact:
    """What a caller knows about a value it passes: the buffer, dtype and shape it was allocated with."""

    buffer: str | None = None  # sbuf | psum | hbm | shared_hbm | private_hbm
    dtype: str | None = None  # source text (nl.float32, x.dtype)
    shape: str | None = None  # source text of the shape tuple


@dataclass
class CallSite:
    callee: str  # the called name as written (`helper`, `mod.helper`, `self.run`)
    line: int
    args: list[str]  # positional arguments: the base name each one reads (`x` for `x[0:128]`), else ""
    kwargs: dict[str, str]  # keyword -> base name likewise
    resolved: str | None = None  # key "module:qualname" of the callee in the project, set by the project


@dataclass
class FunctionInfo:
    module: str
    qualname: str  # `outer.inner`, `Config.validate`
    name: str
    line: int
    end_line: int
    decorators: list[str]  # dotted, after import resolution (`nki.jit`)
    params: list[str]
    calls: list[CallSite] = field(default_factory=list)
    # (leaf name or dotted text, divisor or None) for `X % d == 0` (d None: a symbolic modulus) found in
    # assert / assert-helper / `if ...: raise` conditions; and every name such a condition mentions
    mod_guards: list[tuple[str, int | None]] = field(default_factory=list)
    guarded: set[str] = field(default_factory=set)
    tiles: dict[str, TileFact] = field(default_factory=dict)  # local name -> how it was allocated
    # `Config(I0=I0)` with I0 a constant here: keyword -> value (None: not a constant) of constructor calls
    config_values: list[tuple[str, Any]] = field(default_factory=list)
    wrapped_kernel: bool = False  # `k = nki.jit(fn)` somewhere in the module
    nested: bool = False  # not a plain top-level def (under if/try, in a class or a function)
    in_class: str | None = None

    @property
    def key(self) -> str:
        return f"{self.module}:{self.qualname}"

    @property
    def is_kernel(self) -> bool:
        return self.wrapped_kernel or any(d in KERNEL_DECORATORS for d in self.decorators)


@dataclass
class ModuleInfo:
    name: str  # dotted (`nkilib.core.mlp.mlp`), or the file stem outside any package
    path: str
    package: str  # the package relative imports start from
    imports: dict[str, str] = field(default_factory=dict)  # alias -> absolute dotted target
    star_imports: list[str] = field(default_factory=list)
    import_lines: dict[str, int] = field(default_factory=dict)  # alias -> line of the import
    functions: dict[str, FunctionInfo] = field(default_factory=dict)  # qualname -> facts
    constants: dict[str, Any] = field(default_factory=dict)  # NAME -> int | float | str | bool
    defined: set[str] = field(default_factory=set)  # top-level (and if/try-level) defs, classes, assignments
    syntax_error: tuple[int, int, str] | None = None  # (line, column, message) as Python reports it
    # (enclosing qualname or "", function passed as written or absolute when imported, launcher, line) of each
    # legacy launcher call (LEGACY_LAUNCHERS) given a function: `k = nki_jit()(mod.f)`
    launches: list[tuple[str, str, str, int]] = field(default_factory=list)
    # the module's ast when the builder keeps it (a one-file project; `check` of many files): the rules read
    # it instead of parsing the file again (rules/nki_common.module_tree)
    tree: Any = field(default=None, repr=False, compare=False)
    tree_text: str | None = field(default=None, repr=False, compare=False)  # the text `tree` was parsed from

    def function(self, name: str) -> FunctionInfo | None:
        """By qualname, else the first function with that simple name."""
        f = self.functions.get(name)
        if f is not None:
            return f
        return next((f for f in self.functions.values() if f.name == name), None)


# ---- plain JSON form (check's cache keeps each file's index: a re-run after an edit indexes the edited file only)

def module_to_json(m: ModuleInfo) -> dict[str, Any]:
    """The module's facts as JSON values (not its tree; call sites unresolved: a project resolves them)."""
    return {"name": m.name, "path": m.path, "package": m.package, "imports": m.imports,
            "star_imports": m.star_imports, "import_lines": m.import_lines,
            "functions": [_function_to_json(f) for f in m.functions.values()],
            "constants": [[k, v] for k, v in m.constants.items()], "defined": sorted(m.defined),
            "syntax_error": m.syntax_error, "launches": m.launches}


def module_from_json(d: dict[str, Any]) -> ModuleInfo:
    """The ModuleInfo `module_to_json` wrote (equal to the one it was made of, before any project used it)."""
    m = ModuleInfo(d["name"], d["path"], d["package"], dict(d["imports"]), list(d["star_imports"]),
                   dict(d["import_lines"]), constants={k: v for k, v in d["constants"]}, defined=set(d["defined"]),
                   syntax_error=tuple(d["syntax_error"]) if d["syntax_error"] is not None else None,
                   launches=[tuple(x) for x in d["launches"]])  # an entry written before launches: a miss
    for f in d["functions"]:
        info = FunctionInfo(f["module"], f["qualname"], f["name"], f["line"], f["end_line"], f["decorators"],
                            f["params"], [CallSite(c[0], c[1], c[2], c[3]) for c in f["calls"]],
                            [(left, den) for left, den in f["mod_guards"]], set(f["guarded"]),
                            {k: TileFact(*t) for k, t in f["tiles"].items()},
                            [(k, v) for k, v in f["config_values"]], f["wrapped_kernel"], f["nested"], f["in_class"])
        m.functions[info.qualname] = info
    return m


def _function_to_json(f: FunctionInfo) -> dict[str, Any]:
    return {"module": f.module, "qualname": f.qualname, "name": f.name, "line": f.line, "end_line": f.end_line,
            "decorators": f.decorators, "params": f.params,
            "calls": [[c.callee, c.line, c.args, c.kwargs] for c in f.calls], "mod_guards": f.mod_guards,
            "guarded": sorted(f.guarded), "tiles": {k: [t.buffer, t.dtype, t.shape] for k, t in f.tiles.items()},
            "config_values": f.config_values, "wrapped_kernel": f.wrapped_kernel, "nested": f.nested,
            "in_class": f.in_class}


def module_name(path: str) -> tuple[str, str]:
    """(dotted module name, its package) from the `__init__.py` files above `path`."""
    path = os.path.abspath(path)
    d, stem = os.path.split(path)
    stem = os.path.splitext(stem)[0]
    parts = [] if stem == "__init__" else [stem]
    while os.path.isfile(os.path.join(d, "__init__.py")):
        d, pkg = os.path.split(d)
        parts.insert(0, pkg)
        if not pkg:
            break
    name = ".".join(parts) or stem
    package = name if stem == "__init__" else name.rpartition(".")[0]
    return name, package


def index_module(path: str, text: str, name: str | None = None, keep_tree: bool = False,
                 memo: Any = None) -> ModuleInfo:
    """The facts of one module; a file that does not parse gives its syntax error and the facts of the
    statements before it. `memo` (an `incremental.PythonMemo`) reuses an edited document's unchanged parts."""
    dotted, package = module_name(path)
    info = ModuleInfo(name=name or dotted, path=path, package=package if name is None else name.rpartition(".")[0])
    try:
        tree = memo.tree(text, path) if memo is not None else ast.parse(text, filename=path)
    except SyntaxError as exc:
        info.syntax_error = (exc.lineno or 1, exc.offset or 1, exc.msg or "invalid syntax")
        tree = _salvage(text, exc.lineno or 1)
    except (ValueError, RecursionError, MemoryError) as exc:
        info.syntax_error = (1, 1, str(exc) or type(exc).__name__)
        tree = None
    if tree is not None:
        _Indexer(info, memo).module(tree)
        if any(w in text for w in _LEGACY_LEAVES):
            info.launches = legacy_launches(tree, info)
        if keep_tree and info.syntax_error is None:
            info.tree, info.tree_text = tree, text
    if memo is not None:
        memo.finish_index()
    return info


def _salvage(text: str, bad_line: int, tries: int = 5) -> ast.Module | None:
    """The top-level statements before the one Python stops in, parsed (a broken function at the end of a file
    leaves the rest of the module indexed); None when nothing before it parses."""
    lines = text.split("\n")
    for _ in range(tries):
        cut = bad_line - 1
        while cut > 0 and not (lines[cut][:1] not in ("", " ", "\t", "#") and not lines[cut - 1].startswith("@")):
            cut -= 1
        if cut <= 0:
            return None
        try:
            return ast.parse("\n".join(lines[:cut]))
        except SyntaxError as exc:
            bad_line = min(exc.lineno or cut, cut)
        except (ValueError, RecursionError, MemoryError):
            return None
    return None


def _from_base(st: ast.ImportFrom, package: str) -> str:
    """The absolute module `from <module> import ...` names, a relative one resolved against `package`."""
    base = st.module or ""
    if st.level:
        pkg = package.split(".") if package else []
        up = st.level - 1
        pkg = pkg[: len(pkg) - up] if up else pkg
        base = ".".join(pkg + ([base] if base else []))
    return base


def legacy_launches(tree: ast.Module, info: ModuleInfo) -> list[tuple[str, str, str, int]]:
    """`ModuleInfo.launches`: each call of a legacy launcher given a function (`nki_jit()(f)`, `nki_jit(f)`,
    `nki_jit(func=f)`, `torch_neuronx.nki_jit()(mod.f)`, `nki_call(f, ...)`), anywhere in the module. Names resolve
    through the module's imports and those of the enclosing functions (`from x import nki_jit` in a test); a bare
    `nki_jit` / `nki_call` bound nowhere in the module counts too (imported where the index cannot see)."""
    out: list[tuple[str, str, str, int]] = []
    stack: list[tuple[ast.AST, str, dict[str, str]]] = [(tree, "", {})]
    while stack:
        node, scope, local = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            inner, own = f"{scope}.{node.name}" if scope else node.name, dict(local)  # its imports are its own
            children = [(d, scope, local) for d in node.decorator_list] + [(c, inner, own) for c in node.body]
            stack.extend(reversed(children))  # source order: a function's import comes before its use
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)) and scope:
            for a in node.names:
                if isinstance(node, ast.ImportFrom) and a.name != "*":
                    base = _from_base(node, info.package)
                    local[a.asname or a.name] = f"{base}.{a.name}" if base else a.name
                elif isinstance(node, ast.Import):
                    local[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.Call):
            found = _launch(node, info, local)
            if found is not None:
                out.append((scope, found[0], found[1], node.lineno))
        stack.extend(reversed([(child, scope, local) for child in ast.iter_child_nodes(node)]))
    out.sort(key=lambda x: (x[3], x[1]))
    return out


def _launch(call: ast.Call, info: ModuleInfo, local: dict[str, str]) -> tuple[str, str] | None:
    """(function passed, launcher) when `call` hands a function to a legacy launcher."""
    func = call.func
    if isinstance(func, ast.Call):  # nki_jit()(f); not nki_jit(f)(x, out), the inner call's own launch
        if func.args or any(k.arg in ("func", "kernel") for k in func.keywords):
            return None
        launcher, passed = _legacy_name(func.func, info, local), call.args[0] if call.args else None
    else:  # nki_jit(f), nki_jit(func=f), nki_call(f, *args)
        launcher = _legacy_name(func, info, local)
        passed = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg in ("func", "kernel")),
                                                      None)
    if launcher is None or passed is None:
        return None
    if isinstance(passed, ast.Call) and (_dotted(passed.func) or "").endswith("partial") and passed.args:
        passed = passed.args[0]  # nki_call(partial(f, pool_size=2), x, out_shape=...)
    name = _dotted(passed)
    return (_absolute(name, info, local), launcher) if name else None


def _legacy_name(node: ast.AST, info: ModuleInfo, local: dict[str, str]) -> str | None:
    d = _dotted(node)
    if not d:
        return None
    head = d.partition(".")[0]
    if head not in local and head not in info.imports:
        # unbound here: imported where the index cannot see (a function's import elsewhere); bound in the
        # module (`nki_jit = nki.trace`): not the framework launcher
        return d if d in _LEGACY_LEAVES and head not in info.defined else None
    full = _absolute(d, info, local)
    return full if full in LEGACY_LAUNCHERS else None


def _absolute(dotted: str, info: ModuleInfo, local: dict[str, str]) -> str:
    head, _, rest = dotted.partition(".")
    target = local.get(head) or info.imports.get(head)
    if target is None:
        return dotted
    return f"{target}.{rest}" if rest else target


def _dotted(node: ast.AST) -> str | None:
    """`a.b.c` -> "a.b.c"; None for anything else (a call is not its callee here)."""
    return None if isinstance(node, ast.Call) else (dotted_name(node) or None)


def _text(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # unparse of odd trees (very deep) is a convenience, never a failure
        return "?"


def _base(node: ast.AST) -> str:
    """The variable an argument reads: `x` for `x`, `x[0:128]`, `x.ap(...)`, `x[i].y`; "" otherwise."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return ""


class _Indexer:
    def __init__(self, info: ModuleInfo, memo: Any = None):
        self.info = info
        self.memo = memo
        self.wrapped: set[str] = set()  # `nki.jit(fn)` arguments

    # ---- module level ------------------------------------------------------------------------------
    def module(self, tree: ast.Module) -> None:
        self._statements(tree.body, scope=[], nested=False, klass=None)
        for st in tree.body:
            if not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for node in ast.walk(st):
                    if isinstance(node, ast.Call):
                        self.note_wrap(node)
        for f in self.info.functions.values():
            if f.name in self.wrapped:
                f.wrapped_kernel = True

    def note_wrap(self, call: ast.Call) -> None:
        """`kernel = nki.jit(fn)` / `nki.jit(fn)(...)`: fn is a kernel."""
        if call.args and self.resolve(_dotted(call.func) or "") in KERNEL_DECORATORS:
            self.wrapped |= {a.id for a in call.args if isinstance(a, ast.Name)}

    def resolve(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        target = self.info.imports.get(head)
        if target is None:
            return dotted
        return f"{target}.{rest}" if rest else target

    def _statements(self, body: list[ast.stmt], scope: list[str], nested: bool, klass: str | None) -> None:
        top = not scope
        for st in body:
            if isinstance(st, (ast.Import, ast.ImportFrom)) and top:
                self._import(st)
            elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if top:
                    self.info.defined.add(st.name)
                self._function(st, scope, nested, klass)
            elif isinstance(st, ast.ClassDef):
                if top:
                    self.info.defined.add(st.name)
                self._statements(st.body, scope + [st.name], True, st.name)
            elif isinstance(st, (ast.If, ast.Try, ast.With, ast.For, ast.While)) or \
                    type(st).__name__ == "TryStar":
                for part in ("body", "orelse", "finalbody"):
                    self._statements(getattr(st, part, []) or [], scope, True if top else nested, klass)
                for h in getattr(st, "handlers", []) or []:
                    self._statements(h.body, scope, True if top else nested, klass)
            elif isinstance(st, (ast.Assign, ast.AnnAssign)) and top:
                self._constant(st)

    def _import(self, st: ast.Import | ast.ImportFrom) -> None:
        if isinstance(st, ast.Import):
            for a in st.names:
                if a.asname:
                    self.info.imports[a.asname] = a.name
                    self.info.import_lines[a.asname] = st.lineno
                else:
                    head = a.name.split(".")[0]
                    self.info.imports.setdefault(head, head)
                    self.info.import_lines.setdefault(head, st.lineno)
            return
        base = _from_base(st, self.info.package)
        for a in st.names:
            if a.name == "*":
                self.info.star_imports.append(base)
                continue
            alias = a.asname or a.name
            self.info.imports[alias] = f"{base}.{a.name}" if base else a.name
            self.info.import_lines[alias] = st.lineno

    def _constant(self, st: ast.Assign | ast.AnnAssign) -> None:
        targets = st.targets if isinstance(st, ast.Assign) else [st.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    self.info.defined.add(n.id)
        if st.value is None or len(targets) != 1 or not isinstance(targets[0], ast.Name):
            return
        name = targets[0].id
        value = fold(st.value, self.info.constants)
        if name in self.info.constants and self.info.constants[name] != value:
            self.info.constants.pop(name)  # bound twice with different values: not a constant
        elif value is not None:
            self.info.constants[name] = value

    # ---- functions ---------------------------------------------------------------------------------
    def _function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, scope: list[str], nested: bool,
                  klass: str | None) -> None:
        qual = ".".join(scope + [fn.name])
        decos = []
        for d in fn.decorator_list:
            expr = d.func if isinstance(d, ast.Call) else d
            dotted = _dotted(expr)
            if dotted:
                decos.append(self.resolve(dotted))
        a = fn.args
        params = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
        params += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
        info = FunctionInfo(self.info.name, qual, fn.name, fn.lineno, fn.end_lineno or fn.lineno, decos, params,
                            nested=nested or bool(scope), in_class=klass)
        self.info.functions.setdefault(qual, info)
        segment = self.memo.key_for(fn) if self.memo is not None else None
        if segment is None:
            _Body(self, info).visit_body(fn.body)
        else:  # an unchanged body (same node, same module constants and imports) gives the same facts
            key = (segment, fn.lineno, fn.col_offset,
                   tuple(sorted(self.info.constants.items(), key=repr)), tuple(sorted(self.info.imports.items())))
            facts = self.memo.body_facts(key, lambda: _body_facts(self, fn))
            _restore(info, facts)
            self.wrapped |= facts[-1]
        # defs inside the body: factories and closures are functions of their own
        self._nested_defs(fn.body, scope + [fn.name], klass)

    def _nested_defs(self, body: list[ast.stmt], scope: list[str], klass: str | None) -> None:
        for st in body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._function(st, scope, True, klass)
            elif isinstance(st, ast.ClassDef):
                self._statements(st.body, scope + [st.name], True, st.name)
            else:
                for part in ("body", "orelse", "finalbody"):
                    sub = getattr(st, part, None)
                    if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                        self._nested_defs(sub, scope, klass)
                for h in getattr(st, "handlers", []) or []:
                    self._nested_defs(h.body, scope, klass)


def _body_facts(ix: "_Indexer", fn) -> tuple:
    probe = FunctionInfo(ix.info.name, "", fn.name, 0, 0, [], [])
    outer, ix.wrapped = ix.wrapped, set()
    try:
        _Body(ix, probe).visit_body(fn.body)
        wrapped = frozenset(ix.wrapped)
    finally:
        ix.wrapped = outer | ix.wrapped
    return probe.calls, probe.mod_guards, probe.guarded, probe.tiles, probe.config_values, wrapped


def _restore(info: FunctionInfo, facts: tuple) -> None:
    # shared with the memo: nothing changes these after indexing (a build sets each CallSite.resolved anew)
    info.calls, info.mod_guards, info.guarded, info.tiles, info.config_values, _ = facts


class _Body:
    """Call sites, guards and tile allocations of one function body (not of the defs nested in it)."""

    def __init__(self, ix: _Indexer, fn: FunctionInfo):
        self.ix, self.fn = ix, fn
        self.local = dict(ix.info.constants)  # names bound once to a constant in this body (and the module's)

    def visit_body(self, body: list[ast.stmt]) -> None:
        # an explicit stack in source order (an ast.NodeVisitor costs twice as much on large kernels)
        stack = list(reversed(body))
        handlers = _BODY_HANDLERS
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind in _NO_WALK:
                continue  # nested defs are indexed on their own; names and constants have no children
            if kind in _ONE_CHILD:  # `x.attr`, `key=x`: one child, no handler
                stack.append(node.value)
                continue
            handler = handlers.get(kind)
            if handler is not None:
                handler(self, node)
            children = branch_nodes(node)
            children.reverse()
            stack.extend(children)

    def visit_Call(self, node: ast.Call) -> None:
        callee = _dotted(node.func)
        if callee:
            self.fn.calls.append(CallSite(callee, node.lineno, [_base(a) for a in node.args],
                                          {k.arg: _base(k.value) for k in node.keywords if k.arg}))
            self.ix.note_wrap(node)
            leaf = callee.rsplit(".", 1)[-1]
            if node.args and ASSERT_HELPER.search(leaf):
                self._guard(node.args[0])
            if leaf[:1].isupper():  # a class: a config object's constructor
                for k in node.keywords:
                    if k.arg:
                        v = fold(k.value, self.local)
                        self.fn.config_values.append((k.arg, v if isinstance(v, int) else None))

    def visit_Assert(self, node: ast.Assert) -> None:
        self._guard(node.test)

    def visit_If(self, node: ast.If) -> None:
        # `if X % 2 != 0: raise ...` validates; `if n % 2 != 0: n *= 2` makes a config value even: either way
        # the code handles the remainder
        if any(isinstance(s, (ast.Raise, ast.Assert)) for s in node.body) or \
                any(isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) and
                    ASSERT_HELPER.search((_dotted(s.value.func) or "").rsplit(".", 1)[-1]) for s in node.body) or \
                _has_mod(node.test):
            self._guard(node.test)

    def visit_Assign(self, node: ast.Assign) -> None:
        value = node.value
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if isinstance(value, ast.Call):
                fact = self._tile(value)
                if fact is not None:
                    self.fn.tiles[name] = fact
            elif isinstance(value, (ast.Constant, ast.Name, ast.BinOp, ast.Attribute, ast.UnaryOp)):
                v = fold(value, self.local)
                if v is not None and name not in self.local:
                    self.local[name] = v
                elif name in self.local and self.local[name] != v:
                    self.local[name] = None  # bound twice: not a constant
        # `use_double_row = ... and n % 2 == 0`: a predicate the code branches on
        if isinstance(value, (ast.BoolOp, ast.Compare, ast.UnaryOp)) and _has_mod(value):
            self._guard(value)

    def _tile(self, call: ast.Call) -> TileFact | None:
        name = _dotted(call.func) or ""
        full = self.ix.resolve(name)
        leaf = name.rsplit(".", 1)[-1]
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        if leaf in _ALLOC_CALLS and "buffer" in kw:
            buf = (_dotted(kw["buffer"]) or "").rsplit(".", 1)[-1]
            shape = call.args[0] if call.args else kw.get("shape")
            dtype = kw.get("dtype") or (call.args[1] if len(call.args) > 1 else None)
            return TileFact(_BUFFERS.get(buf), _text(dtype) if dtype is not None else None,
                            _text(shape) if shape is not None else None)
        if full.endswith(("language.load", "nl.load")) or leaf == "load" and name.startswith("nl."):
            return TileFact("sbuf")
        return None

    def _guard(self, test: ast.AST) -> None:
        for n in ast.walk(test):
            if isinstance(n, (ast.Name, ast.Attribute)):
                d = _dotted(n)
                if d:
                    self.fn.guarded.add(d)
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod):
                left = _dotted(n.left)
                if left is None:
                    continue
                den = fold(n.right, self.ix.info.constants)
                self.fn.mod_guards.append((left, den if isinstance(den, int) and den > 0 else None))


_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# nearly half the nodes of a body are names and constants: no handler, no child node (their `ctx` is a singleton)
_NO_WALK = frozenset(_NESTED + (ast.Name, ast.Constant))
_ONE_CHILD = frozenset((ast.Attribute, ast.keyword))
# class-level, not bound methods on each _Body: a body's handlers then form no reference cycle, so its
# indexer (and the memo it holds) is freed without a garbage collection (lsp_server/memory.py)
_BODY_HANDLERS = {ast.Call: _Body.visit_Call, ast.Assert: _Body.visit_Assert, ast.If: _Body.visit_If,
                  ast.Assign: _Body.visit_Assign}


def _has_mod(node: ast.AST) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(node))


def fold(node: ast.AST, env: dict[str, Any]) -> Any:
    """Constant value of a simple expression over literals and known module constants, else None."""
    try:
        return intexpr.value(node, env, _FOLD)
    except (intexpr.Unknown, ArithmeticError, TypeError, ValueError, RecursionError):
        return None


def _tile_size(node: ast.Attribute) -> Any:  # nl.tile_size.pmax
    d = _dotted(node) or ""
    return TILE_SIZE.get(d.rsplit(".", 1)[-1]) if ".tile_size." in f".{d}" else None


_FOLD = intexpr.Arith(
    binops={**intexpr.BINOPS, ast.Pow: lambda a, b: a ** b if abs(b) < 64 else None,
            ast.LShift: lambda a, b: a << b if b < 64 else None, ast.RShift: lambda a, b: a >> b},
    constants=(int, float, str, bool), numbers_only=True, unary_plus=False, max_depth=30,
    name=lambda node, env: env.get(node.id), attribute=_tile_size)
