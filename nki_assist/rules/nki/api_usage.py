"""What a file does with the NKI API, read with Python's `ast`: every `nl.*` / `nisa.*` / `nki.*`
reference and call inside its kernels and helpers, resolved through the file's imports to the API table's
canonical names (a legacy file's `neuronxcc.nki.*` modules to the same names; `Usage.legacy` says so). The
API-surface rules (rules/nki/api_surface.py) and the version-dependent dialect rules read these facts; they
are computed once per file."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ...api import table
from ...api.hardware import Target
from ...api.version import target_version
from ...parse.nki_model import NkiFile
from ...parse.pyast import child_nodes
from .common import children, kernel_function, module_tree, per_text, walk

_MODULES = {"nki.language": "nl", "nki.isa": "nisa", "nki": "nki", "nki.collectives": "nki.collectives",
            "nki.typing": "nt"}
# loops whose body is a function by design (0.6): defining it in the kernel is the API
BODY_FUN_APIS = frozenset({"nl.fori_loop", "nl.while_loop"})


@dataclass
class Ref:
    name: str  # canonical: nl.exp, nl.tile_size.psum_fmax, nisa.tensor_copy
    line: int
    col: int  # 1-based
    end_line: int
    end_col: int
    annotation: bool = False  # inside a type annotation (evaluated by Python, never traced by NKI)


@dataclass
class CallUse:
    ref: Ref
    node: ast.Call
    positional: int
    keywords: list[tuple[str, int, int, int]]  # (name, line, col, end_col), 1-based
    splat: bool  # *args / **kwargs: the arguments are not all visible
    used_as_value: bool  # its result is bound, passed or returned
    statement: bool  # the call is a whole expression statement (result discarded)


@dataclass
class NestedDef:
    name: str
    line: int
    col: int
    end_col: int
    kernel: str
    body_fun: bool  # passed to nl.fori_loop / nl.while_loop


@dataclass
class Usage:
    refs: list[Ref] = field(default_factory=list)
    calls: list[CallUse] = field(default_factory=list)
    nested_defs: list[NestedDef] = field(default_factory=list)
    legacy_aliases: dict[str, str] = field(default_factory=dict)  # alias -> neuronxcc module
    legacy_uses: list[tuple[str, int, bool, bool]] = field(default_factory=list)  # (alias, line, annot, in kernel)
    # for the idiom checks (rules/nki/api_idioms.py), each with its innermost kernel/helper:
    assigns: list[tuple[object, ast.Assign]] = field(default_factory=list)
    arith: list[tuple[object, ast.AST]] = field(default_factory=list)  # BinOp / AugAssign / `-name` nodes
    affine_loops: list[tuple[object, ast.For]] = field(default_factory=list)  # `for i in nl.affine_range(...)`
    comprehensions: list[tuple[object, ast.AST]] = field(default_factory=list)  # list/set/dict comps, genexps (NKI526)
    aliases: dict[str, str] = field(default_factory=dict)  # alias -> nki module
    legacy: bool = False  # a legacy-dialect file: `aliases` maps its neuronxcc.nki modules to the same names


def usage(nf: NkiFile) -> Usage | None:
    """The file's API usage inside its kernels and helpers. Each outermost kernel is read on its own and
    its facts are remembered on it (`NkiKernel.memo`), so a syntax error elsewhere loses nothing and an
    edit re-reads only the kernels the parse cache re-extracted."""
    return per_text(nf, "_api_usage", _collect)


def new_namespace_version(nf: NkiFile, t: Target) -> str | None:
    """The target NKI version when the file's kernels use the new `nki` namespace at 0.3+, else None (a
    transitional file whose `nl` is still `neuronxcc.nki.language` is legacy code)."""
    if nf.dialect not in ("new", "transitional") or (u := usage(nf)) is None or u.legacy \
            or not set(u.aliases.values()) & {"nki", "nki.language", "nki.isa"}:
        return None
    v = target_version(t)
    return None if v == table.legacy_version() or table.vkey(v) < (0, 3) else v


def _collect(nf: NkiFile) -> Usage:
    u = Usage()
    aliases: dict[str, str] = {}
    for alias, module in nf.imports.items():  # the front end's import map: alias -> dotted module
        if module.startswith(("neuronxcc", "torch_neuronx.nki_jit")):
            u.legacy_aliases[alias] = module
        elif module in _MODULES:
            aliases[alias] = module
    if nf.dialect == "legacy":  # read `neuronxcc.nki.language` as `nl` too; the rules decide what holds there
        u.legacy = True
        aliases = {a: m[len("neuronxcc."):] for a, m in u.legacy_aliases.items()
                   if m[len("neuronxcc."):] in _MODULES}
    u.aliases = aliases
    if not aliases and not u.legacy_aliases:
        return u
    for k, inner in _outer_kernels(nf.kernels):
        key = ("api_usage", tuple(sorted(aliases.items())), tuple(sorted(u.legacy_aliases.items())),
               tuple((x.name, x.line, x.end_line, x.decorator) for x in inner))
        part = k.memo(key, lambda k=k, inner=inner: _kernel_usage(nf, k, inner, aliases, u.legacy_aliases))
        for name in ("refs", "calls", "nested_defs", "legacy_uses"):
            getattr(u, name).extend(getattr(part, name))
        for name in _BY_KERNEL:  # the part names each kernel by its place in `inner` (see _kernel_usage)
            getattr(u, name).extend((inner[i], node) for i, node in getattr(part, name))
    if nf.dialect == "transitional" and u.legacy_aliases:
        _module_level_legacy_uses(nf, u)
    return u


def _outer_kernels(kernels: list) -> list[tuple[object, list]]:
    """Each kernel no other kernel's lines contain, with the kernels inside its lines (itself included), in the
    file's kernel order; one sort and one sweep (a test per pair was quadratic in a module of many kernels)."""
    order = sorted(range(len(kernels)), key=lambda i: (kernels[i].line, -kernels[i].end_line))
    groups: dict[int, list[int]] = {}
    top = -1
    for i in order:
        k = kernels[i]
        o = kernels[top] if top >= 0 else None
        if o is not None and o.line <= k.line and k.end_line <= o.end_line:
            if (o.line, o.end_line) == (k.line, k.end_line):  # the same lines twice: neither is outer
                groups.pop(top, None)
            else:
                groups.get(top, []).append(i)
            continue
        top = i
        groups[i] = [i]
    return [(kernels[i], [kernels[j] for j in sorted(groups[i])]) for i in sorted(groups)]


def _kernel_usage(nf: NkiFile, k, inner, aliases, legacy) -> Usage:
    part = Usage(legacy_aliases=dict(legacy), aliases=aliases)
    fn = kernel_function(nf, k)  # the file's tree's def, or the kernel's lines parsed alone
    if fn is None:
        return part
    # (a `def` at column 0 is a line at indent 0: the least indent of the kernel's lines, with no need to read them)
    indent = 0 if fn.col_offset == 0 else \
        min((len(x) - len(x.lstrip()) for x in nf.lines[k.line - 1:k.end_line] if x.strip()), default=0)
    # in the shape parsing the kernel's lines alone gives: an indented kernel sits under an `if 1:` header
    body: list[ast.stmt] = [fn] if indent == 0 else [ast.If(test=ast.Constant(1), body=[fn], orelse=[])]
    tree = ast.Module(body=body, type_ignores=[])
    _Walker(part, aliases, [(x.line, x.end_line, x) for x in inner], nf).visit(tree)
    # the part is kept on `k` (NkiKernel.memo): holding `k` too would make a reference cycle, which the
    # language server freezes (lsp_server/memory.py), keeping each closed document's kernels and syntax
    # tree resident. It names each kernel by its place in `inner`, which the memo key fixes.
    place = {id(x): i for i, x in enumerate(inner)}
    for name in _BY_KERNEL:
        setattr(part, name, [(place[id(x)], node) for x, node in getattr(part, name)])
    return part


_BY_KERNEL = ("assigns", "arith", "affine_loops", "comprehensions")  # (innermost kernel, node) facts


def _module_level_legacy_uses(nf: NkiFile, u: Usage) -> None:
    """Legacy-namespace uses outside the kernels (NKI504 needs to know whether they are annotations)."""
    tree = module_tree(nf)
    if tree is None:
        return
    seen = {(a, line) for a, line, *_ in u.legacy_uses}
    walker = _Walker(Usage(legacy_aliases=u.legacy_aliases), {}, [], nf)
    walker.visit(tree)
    u.legacy_uses.extend(x for x in walker.u.legacy_uses if (x[0], x[1]) not in seen)


def dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """`nl.exp` for an attribute chain on an NKI module alias, canonical; None otherwise."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    parts.append(aliases[node.id])
    return _canonical(".".join(reversed(parts)))


_LONGEST_FIRST = tuple(sorted(_MODULES, key=len, reverse=True))


def _canonical(full: str) -> str:
    for mod in _LONGEST_FIRST:
        if full == mod:
            return _MODULES[mod]
        if full.startswith(mod + "."):
            return _MODULES[mod] + full[len(mod):]
    return full


# nodes without child nodes that no visit_ method reads (generic_visit would only push and pop them)
_LEAVES = (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop, ast.Constant)
_LEAF, _UNSEEN = object(), object()


class _Walker(ast.NodeVisitor):
    # visit_<class> per node class (None: generic_visit), looked up once: NodeVisitor.visit builds the name and
    # looks it up for every node
    _visitors: dict[type, object] = {}

    def __init__(self, u: Usage, aliases: dict[str, str], spans, nf: NkiFile | None = None):
        self.u, self.aliases, self.spans = u, aliases, spans
        self.nf = nf  # the file whose shared child lists and walks the walker reads (nki_common.children)
        self.children = children(nf) if nf is not None else child_nodes
        self.annot = 0
        self.stack: list[ast.AST] = []
        self.fn_depth: list[str] = []  # enclosing function names
        self._by_line: dict | None = None

    def _in_kernel(self, line: int):
        """The innermost kernel/helper whose lines hold `line` (a line -> kernel map, built once)."""
        if self._by_line is None:
            self._by_line = {}
            for a, b, k in sorted(self.spans, key=lambda s: s[0] - s[1]):  # widest first, inner overwrite
                for ln in range(a, b + 1):
                    self._by_line[ln] = k
        return self._by_line.get(line)

    def _dotted(self, node: ast.AST) -> str | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        parts.append(self.aliases[node.id])
        return _canonical(".".join(reversed(parts)))

    def _method(self, cls: type):
        method = self._visitors[cls] = _LEAF if issubclass(cls, _LEAVES) else \
            getattr(type(self), "visit_" + cls.__name__, None)
        return method

    def visit(self, node):
        method = self._visitors.get(node.__class__, _UNSEEN)
        if method is _UNSEEN:
            method = self._method(node.__class__)
        if method is None:
            return self.generic_visit(node)
        if method is not _LEAF:
            return method(self, node)

    def generic_visit(self, node):
        self.stack.append(node)
        visitors = self._visitors
        for child in self.children(node):  # visit(child), inlined: a call less per node
            method = visitors.get(child.__class__, _UNSEEN)
            if method is _UNSEEN:
                method = self._method(child.__class__)
            if method is None:
                self.generic_visit(child)
            elif method is not _LEAF:
                method(self, child)
        self.stack.pop()

    def _visit_annotation(self, node):
        if node is not None:
            self.annot += 1
            self.visit(node)
            self.annot -= 1

    def visit_arg(self, node: ast.arg):
        self._visit_annotation(node.annotation)

    def visit_AnnAssign(self, node: ast.AnnAssign):
        self._visit_annotation(node.annotation)
        if node.value is not None:
            self.stack.append(node)
            self.visit(node.value)
            self.stack.pop()

    def _function(self, node):
        kernel = self._in_kernel(node.lineno)
        if self.fn_depth and kernel is not None and kernel.decorator is not None:
            parent = self.stack[-1] if self.stack else None
            self.u.nested_defs.append(NestedDef(node.name, node.lineno, node.col_offset + 1,
                                                node.col_offset + 4 + len(node.name), kernel.name,
                                                body_fun=node.name in self._body_funs(parent)))
        for d in node.decorator_list:
            self.visit(d)
        self.visit(node.args)
        self._visit_annotation(node.returns)
        self.fn_depth.append(node.name)
        self.stack.append(node)
        for stmt in node.body:
            self.visit(stmt)
        self.stack.pop()
        self.fn_depth.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def _body_funs(self, parent) -> set[str]:
        """Names passed to nl.fori_loop / nl.while_loop anywhere in the enclosing function."""
        out: set[str] = set()
        fn = next((s for s in reversed(self.stack) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        for n in (walk(self.nf, fn) if self.nf is not None else ast.walk(fn)) if fn is not None else ():
            if isinstance(n, ast.Call) and self._dotted(n.func) in BODY_FUN_APIS:
                out |= {a.id for a in list(n.args) + [k.value for k in n.keywords] if isinstance(a, ast.Name)}
        return out

    def visit_Assign(self, node: ast.Assign):
        k = self._in_kernel(node.lineno)
        if k is not None:
            self.u.assigns.append((k, node))
        self.generic_visit(node)

    def _arith(self, node):
        k = self._in_kernel(node.lineno)
        if k is not None:
            self.u.arith.append((k, node))
        self.generic_visit(node)

    visit_BinOp = visit_AugAssign = _arith

    def visit_UnaryOp(self, node: ast.UnaryOp):
        # `-t` on a name or slice (NKI515); `-1` and other constants are not collected
        if isinstance(node.op, ast.USub) and isinstance(node.operand, (ast.Name, ast.Subscript)):
            k = self._in_kernel(node.lineno)
            if k is not None:
                self.u.arith.append((k, node))
        self.generic_visit(node)

    def _comprehension(self, node):
        k = self._in_kernel(node.lineno)
        if k is not None:
            self.u.comprehensions.append((k, node))
        self.generic_visit(node)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_For(self, node: ast.For):
        if isinstance(node.iter, ast.Call) and self._dotted(node.iter.func) == "nl.affine_range":
            k = self._in_kernel(node.lineno)
            if k is not None:
                self.u.affine_loops.append((k, node))
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name):
        if node.id in self.u.legacy_aliases:
            self.u.legacy_uses.append((node.id, node.lineno, self.annot > 0,
                                       self._in_kernel(node.lineno) is not None))

    def visit_Attribute(self, node: ast.Attribute):
        name = self._dotted(node)
        if name is None:
            # the chain's inner attributes have its base too, so none of them resolves either: visit the base with
            # them on the stack, as generic_visit would reach it through each (an attribute's one child node is
            # its value)
            chain, base = [node], node.value
            while isinstance(base, ast.Attribute):
                chain.append(base)
                base = base.value
            self.stack += chain
            self.visit(base)
            del self.stack[-len(chain):]
            return
        if self._in_kernel(node.lineno) is None:
            return
        ref = Ref(name, node.lineno, node.col_offset + 1, node.end_lineno or node.lineno,
                  (node.end_col_offset or node.col_offset) + 1, annotation=self.annot > 0)
        self.u.refs.append(ref)
        parent = self.stack[-1] if self.stack else None
        if isinstance(parent, ast.Call) and parent.func is node:
            self._call(parent, ref)

    def _call(self, call: ast.Call, ref: Ref):
        grand = self.stack[-2] if len(self.stack) > 1 else None
        statement = isinstance(grand, ast.Expr)
        value = isinstance(grand, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return, ast.Call, ast.BinOp,
                                   ast.keyword, ast.Tuple, ast.List, ast.Subscript, ast.NamedExpr))
        if isinstance(grand, ast.Call) and grand.func is call:
            value = False  # nki.jit(...)(f): the call is a callee
        if isinstance(grand, ast.withitem) or isinstance(grand, (ast.For, ast.comprehension)):
            value = False
        kws = [(k.arg, k.value.lineno, k.value.col_offset + 1 - len(k.arg) - 1,
                k.value.col_offset + 1) for k in call.keywords if k.arg is not None]
        splat = any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
        self.u.calls.append(CallUse(ref, call, len([a for a in call.args if not isinstance(a, ast.Starred)]),
                                    kws, splat, value, statement))
