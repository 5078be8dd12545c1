"""CUDA front end: one tree-sitter-cuda parse, one walk, facts per `__global__`/`__device__` function.

`parse_cuda(text, path)` never raises. It returns a `CudaFile` whose kernels carry the facts listed in
`cuda_model.CudaKernel`: parameters, `__shared__` arrays with folded sizes, barriers, warp shuffles,
atomics, fast-math intrinsics, tensor-core use, accumulators, bounds guards, loops with trip
expressions, grid-stride loops, thread-index uses, epilogue hints, global stores and `<<<...>>>`
launches from host code in the same file. These feed the static CUDA rules (rules/cuda_rules.py)
and the CUDA-vs-NKI migration checks.

Grammar notes (tree-sitter-cuda 0.21): `__global__`/`__device__`/`__host__` are anonymous children
of `function_definition`; `__shared__` is a `type_qualifier`; launches are `call_expression`s with a
`kernel_call_syntax` child. Columns reported are 1-based characters, not UTF-8 bytes.
"""

from __future__ import annotations

import math
import re
from functools import cache
from typing import Iterable

from .cuda_consts import FunctionMacro, Number, fold
from .cuda_model import (
    FLOAT_DTYPES, Accumulator, Atomic, Barrier, BoundsGuard, CudaFile, CudaKernel, CudaLoop, CudaParam,
    CudaSyntaxError, EpilogueHint, FastMath, GlobalStore, GridStrideLoop, Launch, SharedAccess,
    SharedDecl, TensorCoreUse, ThreadIndexUse, WarpShuffle, canonical_dtype,
)
from .cuda_vocab import (
    APPROX_PTX, ATOMIC, BLOCK_BARRIERS, FAST_MATH, GELU_CONSTANTS, PTX_BARRIER, PTX_MMA, SHARED_WRITERS,
    SHUFFLE, TENSOR_CORE_CALLS, WARP_BARRIERS, ptx_mma_dtypes, value_hints,
)

__all__ = ["parse_cuda", "CudaFile", "CudaKernel", "CudaParam", "SharedDecl", "FAST_MATH"]

MAX_PARSE_BYTES = 4_000_000  # above this the file is not parsed (a note says so)
MAX_DEPTH = 400  # deeper nesting is skipped (Python recursion), with a note

_BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim")
_REFS = re.compile(r"\b(threadIdx|blockIdx|blockDim|gridDim)\s*\.\s*([xyz])\b|\b([A-Za-z_]\w*)")
_RELATIONAL = re.compile(r"(?<![<>\-])(?:<=?|>=?)(?![<>=])|<=|>=")
_FMA_NAMES = frozenset({"fmaf", "fma", "__fmaf_rn", "__fmaf_rz", "__fmaf_ieee_rn", "__fma_rn", "__hfma",
                        "__hfma2", "fmaf_rn"})
_ADD_NAMES = frozenset({"__hadd", "__hadd2", "__fadd_rn", "__dadd_rn"})
_LOOPS = frozenset({"for_statement", "while_statement", "do_statement", "for_range_loop"})
_SKIP = frozenset({"comment", "preproc_include", "string_literal", "raw_string_literal", "char_literal",
                   "template_argument_list", "type_descriptor", "using_declaration", "alias_declaration",
                   "namespace_alias_definition", "concatenated_string", "static_assert_declaration"})


@cache
def _language():
    import tree_sitter_cuda
    from tree_sitter import Language

    return Language(tree_sitter_cuda.language())


def parse_cuda(text: str, path: str) -> CudaFile:
    """Parse CUDA source text. Never raises; problems become `syntax_errors` or `notes`."""
    out = CudaFile(path=path)
    try:
        if not isinstance(text, str):
            text = bytes(text).decode("utf-8", "replace") if isinstance(text, (bytes, bytearray)) else str(text)
        if "\x00" in text[:8192]:
            out.notes.append("binary file (NUL bytes); not parsed as CUDA")
            return out
        src = text.encode("utf-8", "surrogatepass")
        if len(src) > MAX_PARSE_BYTES:
            out.notes.append(f"file is {len(src)} bytes, over the {MAX_PARSE_BYTES}-byte parse limit; not parsed")
            return out
        out.lines = text.splitlines()
        if not text.strip():
            return out
        from tree_sitter import Parser

        tree = Parser(_language()).parse(src)
        _Walker(src, out, tree.root_node.has_error).run(tree.root_node)
    except Exception as exc:  # the contract: never raise
        out.notes.append(f"internal CUDA parser error: {type(exc).__name__}: {exc}")
    return out


def refs(text: str) -> set[str]:
    """Identifiers in an expression; CUDA builtins as `threadIdx.x`."""
    found = set()
    for m in _REFS.finditer(text):
        found.add(f"{m.group(1)}.{m.group(2)}" if m.group(1) else m.group(3))
    return found


class _KernelState:
    __slots__ = ("k", "env", "types", "shared", "global_ptrs", "deps", "thread_vars", "grid_vars",
                 "loop_stack", "cond_stack", "ret_guards", "decl_pos", "fragments", "hints", "acc_seen",
                 "scale_re", "override", "stores_seen")

    def __init__(self, k: CudaKernel, env: dict[str, Number]):
        self.k = k
        self.env = dict(env)
        self.types: dict[str, str] = {}
        self.shared: dict[str, str] = {}
        self.global_ptrs: dict[str, str] = {}
        self.deps: dict[str, set[str]] = {}
        self.thread_vars: set[str] = set()
        self.grid_vars: set[str] = set()
        self.loop_stack: list[int] = []
        self.cond_stack: list[tuple[set[str], bool, bool]] = []  # refs, relational, thread-dependent
        self.ret_guards: set[str] = set()
        self.decl_pos: dict[str, int] = {}
        self.fragments: dict[str, tuple[str, str | None]] = {}
        self.hints: dict[str, list[EpilogueHint]] = {}
        self.acc_seen: set[str] = set()
        self.scale_re: re.Pattern | None = None
        self.override: str | None = None  # access kind forced for the current call argument

    def is_thread(self, names: Iterable[str]) -> bool:
        tv = self.thread_vars
        return any(n.startswith("threadIdx.") or n in tv or n == "thread_rank" for n in names)

    def closure(self, names: set[str], limit: int = 64) -> set[str]:
        seen = set(names)
        todo = list(names)
        while todo and len(seen) < limit:
            for d in self.deps.get(todo.pop(), ()):
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        return seen


class _Walker:
    def __init__(self, src: bytes, out: CudaFile, has_error: bool):
        self.src = src
        self.out = out
        self.has_error = has_error
        self.env: dict[str, Number] = {}
        self.macros: dict[str, FunctionMacro] = {}
        self.ks: _KernelState | None = None
        self.host_env: dict[str, Number] | None = None
        self.host_dims: dict[str, list[str]] = {}
        self.pending_unroll: int | bool | None = None
        self.pending_template: list[str] = []
        self.stmt = None
        self.depth = 0
        self.deep_note = False
        self.ascii_rows: set[int] | None = None
        self.line_bytes = src.split(b"\n")

    # -- helpers ---------------------------------------------------------------------------------
    def text(self, node) -> str:
        return self.src[node.start_byte:node.end_byte].decode("utf-8", "replace")

    @staticmethod
    def line(node) -> int:
        return node.start_point[0] + 1

    def column(self, node) -> int:
        row, col = node.start_point
        raw = self.line_bytes[row][:col] if row < len(self.line_bytes) else b""
        return (col if raw.isascii() else len(raw.decode("utf-8", "replace"))) + 1

    def fold(self, text: str) -> Number | None:
        env = self.ks.env if self.ks else (self.host_env if self.host_env is not None else self.env)
        return fold(text, env, self.macros)

    # -- walk ------------------------------------------------------------------------------------
    def run(self, root) -> None:
        if self.has_error:
            self._collect_errors(root)
        self.visit(root)
        for launch in self.out.launches:
            for k in self.out.kernels:
                if k.name == launch.kernel and k.qualifier == "global":
                    k.launches.append(launch)
        self.out.defines = {k: v for k, v in self.env.items()}

    def visit(self, node) -> None:
        handler = _HANDLERS.get(node.type)
        if handler is not None:
            handler(self, node)
        else:
            self.children(node)

    def children(self, node) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            if not self.deep_note:
                self.deep_note = True
                self.out.notes.append(f"nesting deeper than {MAX_DEPTH} at line {self.line(node)}; facts below it skipped")
        else:  # anonymous tokens, leaves and fact-free subtrees need no visit
            get = _HANDLERS.get
            for c in node.named_children:
                if c.child_count:
                    t = c.type
                    if t in _SKIP:
                        continue
                    handler = get(t)
                    if handler is None:
                        self.children(c)
                    else:
                        handler(self, c)
        self.depth -= 1

    def _collect_errors(self, root) -> None:
        """ERROR and MISSING nodes, descending only into subtrees that contain one."""
        stack = [root]
        while stack and len(self.out.syntax_errors) < 50:
            node = stack.pop()
            if node.type == "ERROR" or node.is_missing:
                self._syntax_error(node)
                if node.type != "ERROR":
                    continue
            stack.extend(c for c in reversed(node.children) if c.has_error or c.is_missing)
        self.out.syntax_errors.sort()

    def _syntax_error(self, node) -> None:
        if len(self.out.syntax_errors) >= 50:
            return
        if node.is_missing:
            msg = f"missing {node.type!r}"
        else:
            snippet = " ".join(self.text(node).split())[:60]
            msg = f"cannot parse: {snippet!r}" if snippet else "cannot parse here"
        self.out.syntax_errors.append(CudaSyntaxError(self.line(node), self.column(node), msg))

    # -- preprocessor ----------------------------------------------------------------------------
    def _preproc_def(self, node) -> None:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None:
            return
        key = self.text(name)
        if value is not None:
            v = fold(self.text(value), self.env, self.macros)
            if v is not None:
                self.env[key] = v
                if self.ks:
                    self.ks.env[key] = v

    def _preproc_function_def(self, node) -> None:
        name = node.child_by_field_name("name")
        params = node.child_by_field_name("parameters")
        value = node.child_by_field_name("value")
        if name is not None and params is not None and value is not None:
            names = [self.text(c) for c in params.children if c.type == "identifier"]
            self.macros[self.text(name)] = FunctionMacro(names, self.text(value))

    def _preproc_call(self, node) -> None:
        directive = node.child_by_field_name("directive")
        arg = node.child_by_field_name("argument")
        if directive is not None and self.text(directive) == "#pragma" and arg is not None:
            words = self.text(arg).split()
            if words and words[0] == "unroll":
                n = self.fold(" ".join(words[1:])) if len(words) > 1 else None
                self.pending_unroll = int(n) if isinstance(n, (int, float)) else True

    # -- declarations ----------------------------------------------------------------------------
    def _template_declaration(self, node) -> None:
        params = node.child_by_field_name("parameters")
        names = []
        if params is not None:
            for p in params.named_children:
                for c in p.named_children:
                    if c.type in ("identifier", "type_identifier"):
                        names.append(self.text(c))
        self.pending_template = names
        self.children(node)
        self.pending_template = []

    def _function_definition(self, node) -> None:
        quals = {c.type for c in node.children if not c.is_named}
        qualifier = "global" if "__global__" in quals else "device" if "__device__" in quals else None
        decl = node.child_by_field_name("declarator")
        while decl is not None and decl.type != "function_declarator":
            decl = decl.child_by_field_name("declarator")
        body = node.child_by_field_name("body")
        template = self.pending_template
        self.pending_template = []
        if qualifier is None or decl is None or body is None:
            self._host_function(node)
            return
        name_node = decl.child_by_field_name("declarator")
        name = self.text(name_node) if name_node is not None else "?"
        name = name.split("::")[-1].split("<")[0].strip()
        k = CudaKernel(name=name, line=self.line(node), end_line=node.end_point[0] + 1,
                       qualifier=qualifier, template_params=template)
        for c in node.named_children:
            if c.type == "launch_bounds":
                nums = [x for x in c.named_children]
                if nums:
                    v = self.fold(self.text(nums[0]))
                    k.launch_bounds = int(v) if isinstance(v, (int, float)) else None
        ks = _KernelState(k, self.env)
        outer, self.ks = self.ks, ks
        params = decl.child_by_field_name("parameters")
        if params is not None:
            for p in params.named_children:
                if p.type == "parameter_declaration":
                    self._param(p, ks)
        scale_names = [p.name for p in k.params if not p.is_pointer and canonical_dtype(p.type) in FLOAT_DTYPES]
        if scale_names:
            ks.scale_re = re.compile(r"\b(" + "|".join(map(re.escape, scale_names)) + r")\b")
        self.visit(body)
        self._finish_kernel(ks)
        self.ks = outer
        self.out.kernels.append(k)

    def _param(self, p, ks: _KernelState) -> None:
        type_node = p.child_by_field_name("type")
        base = self.text(type_node) if type_node is not None else "?"
        quals = [self.text(c) for c in p.children if c.type == "type_qualifier"]
        name, pointers, inner_quals, arrays = self._declarator(p.child_by_field_name("declarator"))
        quals += inner_quals
        if name is None:
            return
        is_ptr = pointers > 0 or arrays > 0
        param = CudaParam(name=name, type=base, is_pointer=is_ptr, is_const="const" in quals,
                          restrict=any(q in ("__restrict__", "__restrict", "restrict") for q in quals),
                          line=self.line(p))
        ks.k.params.append(param)
        ks.types[name] = base + ("*" if is_ptr else "")
        ks.decl_pos[name] = -1
        if is_ptr:
            ks.global_ptrs[name] = name

    def _declarator(self, d) -> tuple[str | None, int, list[str], int]:
        """(name, pointer depth, qualifiers inside the declarator, array rank)."""
        pointers = arrays = 0
        quals: list[str] = []
        while d is not None:
            t = d.type
            if t in ("identifier", "field_identifier"):
                return self.text(d), pointers, quals, arrays
            if t == "pointer_declarator":
                pointers += 1
                quals += [self.text(c) for c in d.children if c.type == "type_qualifier"]
            elif t == "array_declarator":
                arrays += 1
            elif t not in ("reference_declarator", "init_declarator", "parenthesized_declarator"):
                return None, pointers, quals, arrays
            nxt = d.child_by_field_name("declarator")
            if nxt is None and t == "reference_declarator":
                nxt = next((c for c in d.named_children), None)
            d = nxt
        return None, pointers, quals, arrays

    def _declaration(self, node) -> None:
        self.stmt = node
        ks = self.ks
        type_node = node.child_by_field_name("type")
        base = " ".join(self.text(type_node).split()) if type_node is not None else ""
        quals = {self.text(c) for c in node.children if c.type in ("type_qualifier", "storage_class_specifier")}
        is_const = bool(quals & {"const", "constexpr"})
        for d in node.children_by_field_name("declarator"):
            if d.type == "function_declarator":  # `dim3 block(BN, BM);` parses as a declaration of a function
                name_node, params = d.child_by_field_name("declarator"), d.child_by_field_name("parameters")
                if base == "dim3" and ks is None and self.host_env is not None and name_node is not None:
                    self.host_dims[self.text(name_node)] = [self.text(p) for p in params.named_children] if params else []
                continue
            value = d.child_by_field_name("value") if d.type == "init_declarator" else None
            target = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            name, dims, pointers = self._decl_shape(target)
            if name is None:
                continue
            if ks is None:
                self._file_or_host_decl(name, base, is_const, pointers, dims, value)
            elif "__shared__" in quals:
                self._shared_decl(node, name, base, dims, "extern" in quals)
            else:
                self._local_decl(node, name, base, is_const, pointers, dims, value)
            if value is not None:
                self.visit(value)
            for dim in dims or ():
                if dim is not None:
                    self.visit(dim)

    def _decl_shape(self, d):
        """(name, [dim nodes] or None, pointer depth) of a declarator."""
        dims = []
        pointers = 0
        while d is not None:
            t = d.type
            if t in ("identifier", "field_identifier"):
                return self.text(d), list(reversed(dims)) if dims else None, pointers
            if t == "array_declarator":
                dims.append(d.child_by_field_name("size"))
            elif t == "pointer_declarator":
                pointers += 1
            elif t not in ("reference_declarator", "parenthesized_declarator"):
                return None, None, 0
            nxt = d.child_by_field_name("declarator")
            if nxt is None:
                nxt = next((c for c in d.named_children), None)
            d = nxt
        return None, None, 0

    def _file_or_host_decl(self, name, base, is_const, pointers, dims, value) -> None:
        if value is None or pointers or dims:
            if value is not None and base == "dim3" and self.host_env is not None:
                self.host_dims[name] = self._args_text(value)
            return
        if base == "dim3":
            if self.host_env is not None:
                self.host_dims[name] = self._args_text(value)
            return
        v = self.fold(self.text(value))
        if v is None:
            return
        if self.host_env is not None:
            self.host_env[name] = v
        elif is_const:
            self.env[name] = v

    def _args_text(self, value) -> list[str]:
        if value.type in ("argument_list", "initializer_list"):
            return [self.text(c) for c in value.named_children]
        if value.type == "call_expression":
            args = value.child_by_field_name("arguments")
            return [self.text(c) for c in args.named_children] if args is not None else [self.text(value)]
        return [self.text(value)]

    def _shared_decl(self, node, name, base, dims, extern) -> None:
        ks = self.ks
        dtype = base.replace("volatile", "").strip()
        folded: list[int | str] = []
        dynamic = extern and (not dims or any(d is None for d in dims))
        for d in dims or ():
            if d is None:
                continue
            v = self.fold(self.text(d))
            folded.append(int(v) if isinstance(v, (int, float)) and v == int(v) else self.text(d))
        elem = _elem_bytes(dtype)
        nbytes = None
        if not dynamic and elem is not None and all(isinstance(x, int) for x in folded):
            nbytes = elem * math.prod(folded) if folded else elem
        ks.k.shared.append(SharedDecl(name, dtype, tuple(folded), nbytes, self.line(node), dynamic))
        ks.shared[name] = dtype
        ks.types[name] = dtype
        ks.decl_pos[name] = node.start_byte

    def _local_decl(self, node, name, base, is_const, pointers, dims, value) -> None:
        ks = self.ks
        ks.types[name] = base + "*" * pointers
        ks.decl_pos[name] = node.start_byte
        if "fragment" in base:
            m = re.search(r"fragment\s*<\s*(?:[\w:]*::)?(matrix_a|matrix_b|accumulator)\b(.*)>", base)
            if m:
                args = [a.strip() for a in m.group(2).split(",") if a.strip()]
                dtype = next((a for a in reversed(args) if not a.isdigit() and "major" not in a), None)
                ks.fragments[name] = (m.group(1), canonical_dtype(dtype.split("::")[-1]) if dtype else None)
        if value is None:
            return
        vtext = self.text(value)
        r = refs(vtext)
        self._assign_deps(name, r, replace=True)
        if pointers and any(x in ks.global_ptrs for x in r):
            ks.global_ptrs[name] = next(ks.global_ptrs[x] for x in r if x in ks.global_ptrs)
        elif pointers and any(x in ks.shared for x in r):
            ks.shared[name] = base  # pointer into a __shared__ array (dynamic smem carve-up)
        if not pointers and not dims:
            if is_const:
                v = fold(vtext, ks.env, self.macros)
                if v is not None:
                    ks.env[name] = v
                    ks.k.constants[name] = v
            ks.hints[name] = self._hints_of(vtext, r, self.line(value))

    def _assign_deps(self, name: str, r: set[str], replace: bool = False) -> None:
        ks = self.ks
        r = r - {name}
        if replace:
            ks.deps[name] = set(r)
        else:
            ks.deps.setdefault(name, set()).update(r)
        if ks.is_thread(r):
            ks.thread_vars.add(name)
        if any(x.startswith("gridDim.") or x in ks.grid_vars for x in r):
            ks.grid_vars.add(name)

    def _hints_of(self, text: str, r: set[str], line: int) -> list[EpilogueHint]:
        ks = self.ks
        hints = value_hints(text, line, ks.scale_re)
        for x in r:
            hints.extend(ks.hints.get(x, ()))
        return hints[:32]

    # -- host code -------------------------------------------------------------------------------
    def _host_function(self, node) -> None:
        outer_env, outer_dims = self.host_env, self.host_dims
        self.host_env, self.host_dims = dict(self.env), {}
        self.children(node)
        self.host_env, self.host_dims = outer_env, outer_dims

    def _launch(self, node, fn, ksyn) -> None:
        name_node = fn.child_by_field_name("name") if fn.type == "template_function" else fn
        name = self.text(name_node).split("::")[-1] if name_node is not None else self.text(fn)
        parts = [c for c in ksyn.named_children]
        texts = [self.text(c) for c in parts]
        while len(texts) < 2:
            texts.append("?")
        la = Launch(kernel=name, grid=texts[0], block=texts[1],
                    smem=texts[2] if len(texts) > 2 else None,
                    stream=texts[3] if len(texts) > 3 else None, line=self.line(node))
        la.grid_dims = self._dims(parts[0]) if parts else ()
        la.block_dims = self._dims(parts[1]) if len(parts) > 1 else ()
        if la.block_dims and all(isinstance(x, int) for x in la.block_dims):
            la.block_threads = math.prod(la.block_dims)
        if la.smem is not None:
            v = self.fold(la.smem)
            la.smem_bytes = int(v) if isinstance(v, (int, float)) else None
        self.out.launches.append(la)

    def _dims(self, node) -> tuple[int | str, ...]:
        if node.type == "call_expression" and self.text(node.child_by_field_name("function")) == "dim3":
            items = self._args_text(node)
        elif node.type == "identifier" and self.text(node) in self.host_dims:
            items = self.host_dims[self.text(node)]
        else:
            items = [self.text(node)]
        out: list[int | str] = []
        for item in items:
            v = self.fold(item)
            out.append(int(v) if isinstance(v, (int, float)) and v == int(v) else item)
        return tuple(out)

    # -- statements ------------------------------------------------------------------------------
    def _statement(self, node) -> None:
        self.stmt = node
        self.children(node)

    def _loop(self, node) -> None:
        ks = self.ks
        if ks is None:
            self.children(node)
            return
        lp = CudaLoop(kind={"for_statement": "for", "while_statement": "while", "do_statement": "do",
                            "for_range_loop": "range-for"}[node.type],
                      line=self.line(node), end_line=node.end_point[0] + 1,
                      unroll=self.pending_unroll, start=node.start_byte, end=node.end_byte)
        self.pending_unroll = None
        cond = node.child_by_field_name("condition")
        if cond is not None and cond.type in ("condition_clause", "parenthesized_expression"):
            inner = cond.named_children
            cond_expr = inner[0] if inner else cond
        else:
            cond_expr = cond
        if cond_expr is not None:
            lp.cond = self.text(cond_expr)
        idx = len(ks.k.loops)
        ks.k.loops.append(lp)
        pushed = False
        init = None
        if node.type == "for_statement":
            init = node.child_by_field_name("initializer")
            update = node.child_by_field_name("update")
            if init is not None:
                self.visit(init)
            self._for_header(lp, init, cond_expr, update)
        if lp.cond is not None:
            r = refs(lp.cond)
            if _RELATIONAL.search(lp.cond.replace("->", ".")):
                ks.cond_stack.append((r, True, ks.is_thread(r)))
                pushed = True
        ks.loop_stack.append(idx)
        skip = init.start_byte if init is not None else -1
        for c in node.named_children:
            if c.start_byte != skip and c.child_count:
                self.visit(c)
        ks.loop_stack.pop()
        if pushed:
            ks.cond_stack.pop()

    def _for_header(self, lp: CudaLoop, init, cond, update) -> None:
        ks = self.ks
        var = init_text = None
        if init is not None:
            if init.type == "declaration":
                d = next(iter(init.children_by_field_name("declarator")), None)
                if d is not None and d.type == "init_declarator":
                    var = self.text(d.child_by_field_name("declarator"))
                    v = d.child_by_field_name("value")
                    init_text = self.text(v) if v is not None else None
            elif init.type == "assignment_expression":
                var = self.text(init.child_by_field_name("left"))
                init_text = self.text(init.child_by_field_name("right"))
        lp.var, lp.init = var, init_text
        if update is not None:
            lp.step = self.text(update)
        if var is None or cond is None or update is None:
            return
        # step
        step_kind, step = None, None
        if update.type == "update_expression":
            op = self.text(update).replace(var, "").strip()
            step_kind, step = ("add", "1") if op == "++" else ("sub", "1") if op == "--" else (None, None)
        elif update.type == "assignment_expression" and self.text(update.child_by_field_name("left")) == var:
            op = self.text(update.child_by_field_name("operator"))
            rhs = self.text(update.child_by_field_name("right"))
            step_kind = {"+=": "add", "-=": "sub", ">>=": "shr", "<<=": "shl", "*=": "mul", "/=": "div"}.get(op)
            step = rhs
            if op == "=":
                m = re.fullmatch(rf"\s*{re.escape(var)}\s*([+-])\s*(.+)", rhs)
                if m:
                    step_kind, step = ("add" if m.group(1) == "+" else "sub"), m.group(2)
        if step_kind is None:
            return
        if step_kind == "add":
            r = refs(step)
            lp.grid_stride = any(x.startswith("gridDim.") or x in ks.grid_vars for x in r)
            if lp.grid_stride:
                ks.k.grid_stride_loops.append(GridStrideLoop(var, step, lp.line))
        if cond.type != "binary_expression":
            return
        left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
        op = self.text(cond.child_by_field_name("operator"))
        if self.text(left) == var:
            bound = self.text(right)
        elif self.text(right) == var:
            bound = self.text(left)
            op = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
        else:
            return
        lp.trip, lp.trip_count = _trip(step_kind, step, init_text or "0", op, bound, self.fold)

    def _if(self, node) -> None:
        ks = self.ks
        if ks is None:
            self.children(node)
            return
        cond = node.child_by_field_name("condition")
        expr = cond.named_children[0] if cond is not None and cond.named_children else cond
        ctext = self.text(expr) if expr is not None else ""
        r = refs(ctext)
        relational = bool(_RELATIONAL.search(ctext.replace("->", ".")))
        thread = ks.is_thread(r)
        if relational and thread:
            ks.k.bounds_guards.append(BoundsGuard(" ".join(ctext.split()), self.line(node)))
        cons = node.child_by_field_name("consequence")
        if relational and cons is not None and _is_exit(cons):
            ks.ret_guards |= r
        if expr is not None:
            self.visit(expr)
        ks.cond_stack.append((r, relational, thread))
        for field in ("consequence", "alternative"):
            c = node.child_by_field_name(field)
            if c is not None:
                self.visit(c)
        ks.cond_stack.pop()

    def _conditional(self, node) -> None:
        ks = self.ks
        if ks is None:
            self.children(node)
            return
        cond = node.child_by_field_name("condition")
        ctext = self.text(cond) if cond is not None else ""
        r = refs(ctext)
        relational = bool(_RELATIONAL.search(ctext.replace("->", ".")))
        thread = ks.is_thread(r)
        if relational and thread:
            ks.k.bounds_guards.append(BoundsGuard(" ".join(ctext.split()), self.line(node)))
        if cond is not None:
            self.visit(cond)
        ks.cond_stack.append((r, relational, thread))
        for field in ("consequence", "alternative"):
            c = node.child_by_field_name(field)
            if c is not None:
                self.visit(c)
        ks.cond_stack.pop()

    # -- expressions -----------------------------------------------------------------------------
    def _field_expression(self, node) -> None:
        arg = node.child_by_field_name("argument")
        if self.ks is not None and arg is not None and arg.type == "identifier":
            base = self.text(arg)
            if base in _BUILTINS:
                f = node.child_by_field_name("field")
                self.ks.k.thread_index_uses.append(ThreadIndexUse(f"{base}.{self.text(f)}", self.line(node)))
                return
        self.children(node)

    def _call(self, node) -> None:
        fn = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        ksyn = next((c for c in node.named_children if c.type == "kernel_call_syntax"), None)
        if ksyn is not None and fn is not None:
            self._launch(node, fn, ksyn)
            self.children(node)
            return
        ks = self.ks
        if ks is None or fn is None:
            self.children(node)
            return
        if fn.type == "field_expression":
            f = fn.child_by_field_name("field")
            name = self.text(f) if f is not None else ""
            method = True
        else:
            full = self.text(fn.child_by_field_name("name") if fn.type == "template_function" else fn)
            name = full.split("::")[-1].strip()
            method = False
        k = ks.k
        line = self.line(node)
        arg_nodes = args.named_children if args is not None else []
        if name in BLOCK_BARRIERS or (name == "sync" and (method or fn.type == "qualified_identifier")):
            kind = "grid" if "grid" in self.text(fn) else "block"
            k.barriers.append(Barrier(kind, name, line, node.start_byte))
            k.syncthreads.append(line)
        elif name in WARP_BARRIERS:
            k.barriers.append(Barrier("warp", name, line, node.start_byte))
        elif SHUFFLE.match(name) and (name.startswith("__") or method or name == "reduce"):
            k.warp_shuffles.append(WarpShuffle(name, line))
        elif not method and (m := ATOMIC.match(name)):
            self._atomic(node, m.group(1).lower(), arg_nodes, line)
            self._visit_args(arg_nodes, first_kind="atomic")
            return
        elif name in FAST_MATH and not method:
            if name in ("tanhf", "tanh"):
                stmt = self.text(self.stmt) if self.stmt is not None else ""
                if GELU_CONSTANTS.search(stmt) or "gelu" in k.name.lower():
                    k.fast_math.append(FastMath(name, line))
            else:
                k.fast_math.append(FastMath(name, line))
        elif name in TENSOR_CORE_CALLS:
            frags = [ks.fragments.get(self.text(a)) for a in arg_nodes]
            a = frags[1] if len(frags) > 1 and frags[1] else None
            b = frags[2] if len(frags) > 2 and frags[2] else None
            c = frags[0] if frags and frags[0] else None
            k.tensor_core.append(TensorCoreUse("wmma", name, (a[1] if a else None, b[1] if b else None,
                                                              c[1] if c else None), line))
            if arg_nodes:
                acc = self.text(arg_nodes[0])
                if len(arg_nodes) == 4 and self.text(arg_nodes[3]) == acc:
                    self._accumulator(acc, node, dtype_override=c[1] if c else None)
        if name in SHARED_WRITERS:
            self.visit(fn)
            self._visit_args(arg_nodes, first_kind="write")
            return
        self.children(node)

    def _visit_args(self, arg_nodes, first_kind: str) -> None:
        ks = self.ks
        for i, a in enumerate(arg_nodes):
            if i == 0:
                ks.override = first_kind
                self.visit(a)
                ks.override = None
            else:
                self.visit(a)

    def _atomic(self, node, op: str, arg_nodes, line: int) -> None:
        ks = self.ks
        target = self.text(arg_nodes[0]) if arg_nodes else "?"
        base = _base_name(target)
        dtype = None
        if base is not None and base in ks.types:
            dtype = ks.types[base].rstrip("*").replace("const ", "").strip()
        if dtype is None and len(arg_nodes) > 1:
            val = self.text(arg_nodes[1]).strip()
            if re.fullmatch(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?[fF]", val):
                dtype = "float"
            elif val in ks.types:
                dtype = ks.types[val].rstrip("*")
        ks.k.atomics.append(Atomic(op, dtype, " ".join(target.split()), line))

    def _gnu_asm(self, node) -> None:
        ks = self.ks
        if ks is None:
            return
        text = self.text(node)
        line = self.line(node)
        for m in PTX_MMA.finditer(text):
            api = "wgmma" if m.group(1).startswith("wgmma") else "mma.sync"
            ks.k.tensor_core.append(TensorCoreUse(api, m.group(0), ptx_mma_dtypes(m.group(0)), line))
        for m in APPROX_PTX.finditer(text):
            ks.k.fast_math.append(FastMath(m.group(0), line))
        if PTX_BARRIER.search(text):
            ks.k.barriers.append(Barrier("block", "bar.sync", line, node.start_byte))
            ks.k.syncthreads.append(line)

    def _subscript(self, node) -> None:
        ks = self.ks
        if ks is None:
            self.children(node)
            return
        base, indices = self._chain(node)
        if base is not None and base.type == "identifier" and self.text(base) in ks.shared:
            kind = ks.override or "read"
            self._shared_access(node, self.text(base), indices, kind)
        elif base is not None:
            self.visit(base)
        saved, ks.override = ks.override, None
        for ix in indices:
            self.visit(ix)
        ks.override = saved

    def _chain(self, node):
        """subscript chain -> (base node, [index argument-list nodes] outermost last)."""
        indices = []
        while node is not None and node.type == "subscript_expression":
            ix = node.child_by_field_name("indices")
            if ix is not None:
                indices.append(ix)
            node = node.child_by_field_name("argument")
        return node, list(reversed(indices))

    def _shared_access(self, node, array: str, indices, kind: str) -> None:
        ks = self.ks
        itext = "".join("".join(self.text(i).split()) for i in indices)
        r = refs(itext)
        thread_index = ks.is_thread(ks.closure(r))
        thread_cond = any(c[2] for c in ks.cond_stack)
        stmt = self.stmt.start_byte if self.stmt is not None else node.start_byte
        ks.k.shared_accesses.append(SharedAccess(
            array, kind, itext, thread_index, thread_cond, self.line(node), self.column(node),
            node.start_byte, stmt, tuple(ks.loop_stack)))

    def _update_expression(self, node) -> None:
        ks = self.ks
        arg = node.child_by_field_name("argument")
        if ks is not None and arg is not None and arg.type == "subscript_expression":
            base, indices = self._chain(arg)
            if base is not None and base.type == "identifier" and self.text(base) in ks.shared:
                self._shared_access(arg, self.text(base), indices, "read")
                self._shared_access(arg, self.text(base), indices, "write")
                for ix in indices:
                    self.visit(ix)
                return
        self.children(node)

    def _assignment(self, node) -> None:
        ks = self.ks
        if ks is None:
            self.children(node)
            return
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        op_node = node.child_by_field_name("operator")
        op = self.text(op_node) if op_node is not None else "="
        rtext = self.text(right) if right is not None else ""
        rrefs = refs(rtext)
        target = left
        while target is not None and target.type in ("parenthesized_expression", "field_expression"):
            nxt = target.child_by_field_name("argument") if target.type == "field_expression" else (
                target.named_children[0] if target.named_children else None)
            if nxt is None:
                break
            target = nxt
        handled = False
        if target is not None and target.type == "subscript_expression":
            base, indices = self._chain(target)
            bname = self.text(base) if base is not None and base.type == "identifier" else None
            if bname in ks.shared:
                if op != "=":
                    self._shared_access(target, bname, indices, "read")
                self._shared_access(target, bname, indices, "write")
                handled = True
            elif bname in ks.global_ptrs:
                itext = "".join(self.text(i) for i in indices)
                self._global_store(node, target, ks.global_ptrs[bname], itext, rtext, rrefs)
                handled = True
            elif bname in ks.types and op in ("+=", "-="):
                self._accumulator(bname, node)
            if handled or bname is not None:
                for ix in indices:
                    self.visit(ix)
                handled = True
        elif target is not None and target.type == "pointer_expression" and self.text(target).startswith("*"):
            arg = target.child_by_field_name("argument")
            atext = self.text(arg) if arg is not None else ""
            ptr = next((ks.global_ptrs[x] for x in refs(atext) if x in ks.global_ptrs), None)
            if ptr is not None:
                self._global_store(node, target, ptr, atext, rtext, rrefs)
            if arg is not None:
                self.visit(arg)
            handled = True
        elif target is not None and target.type == "identifier":
            name = self.text(target)
            if op in ("+=", "-="):
                self._accumulator(name, node)
            elif op == "=" and _is_self_update(name, right, self):
                self._accumulator(name, node)
            else:
                self._assign_deps(name, rrefs, replace=(op == "="))
                if op == "=":
                    ks.hints[name] = self._hints_of(rtext, rrefs, self.line(node))
                else:
                    ks.hints.setdefault(name, []).extend(self._hints_of(rtext, rrefs - {name}, self.line(node)))
            handled = True
        if not handled and left is not None:
            self.visit(left)
        if right is not None:
            self.visit(right)

    def _accumulator(self, name: str, node, dtype_override: str | None = None) -> None:
        ks = self.ks
        if name in ks.acc_seen or not ks.loop_stack:
            return
        pos = ks.decl_pos.get(name)
        if pos is None or pos < 0:
            return
        if not any(ks.k.loops[i].start > pos for i in ks.loop_stack):
            return
        dtype = dtype_override or ks.types.get(name, "").rstrip("*").replace("const ", "").strip() or None
        if dtype_override is None:
            canon = canonical_dtype(dtype)
            if canon not in FLOAT_DTYPES:
                return
        ks.acc_seen.add(name)
        ks.k.accumulators.append(Accumulator(name, dtype, self.line(node)))

    def _global_store(self, node, target, ptr: str, itext: str, rtext: str, rrefs: set[str]) -> None:
        ks = self.ks
        ir = refs(itext)
        closure = ks.closure(ir)
        thread_indexed = ks.is_thread(closure)
        guard_refs: set[str] = set(ks.ret_guards)
        for r, relational, _ in ks.cond_stack:
            if relational:
                guard_refs |= r
        guarded = "min(" in itext or "clamp" in itext
        if not guarded:
            common = closure & guard_refs
            guarded = ks.is_thread(common)
            if not guarded:
                guarded = ks.is_thread(ks.closure(guard_refs) & ir - set(_BUILTIN_FIELDS))
        ks.k.global_stores.append(GlobalStore(ptr, " ".join(itext.split()), self.line(node),
                                              self.column(target), thread_indexed, guarded))
        line = self.line(node)
        hints = self._hints_of(rtext, rrefs, line)
        if ptr in rrefs or any(ks.global_ptrs.get(x) == ptr for x in rrefs):
            hints.append(EpilogueHint("accumulate", ptr, line))
        ks.k.epilogue.extend(hints)

    def _finish_kernel(self, ks: _KernelState) -> None:
        k = ks.k
        seen = set()
        epi = []
        for h in k.epilogue:
            if (h.kind, h.detail) not in seen:
                seen.add((h.kind, h.detail))
                epi.append(h)
        k.epilogue = sorted(epi, key=lambda h: h.line)
        k.locals = {n: t for n, t in ks.types.items() if k.param(n) is None}


_BUILTIN_FIELDS = tuple(f"{b}.{a}" for b in _BUILTINS for a in "xyz")


def _is_exit(node) -> bool:
    if node.type in ("return_statement", "break_statement", "continue_statement"):
        return True
    if node.type == "compound_statement":
        kids = node.named_children
        return len(kids) == 1 and kids[0].type in ("return_statement", "break_statement", "continue_statement")
    return False


def _is_self_update(name: str, right, w: _Walker) -> bool:
    """`x = x + e`, `x = fmaf(a, b, x)`, `x = __hadd(x, e)`."""
    if right is None:
        return False
    if right.type == "binary_expression":
        op = w.text(right.child_by_field_name("operator"))
        if op in ("+", "-"):
            return w.text(right.child_by_field_name("left")).strip() == name
        return False
    if right.type == "call_expression":
        fn = w.text(right.child_by_field_name("function")).split("::")[-1]
        args = right.child_by_field_name("arguments")
        kids = [w.text(a).strip() for a in args.named_children] if args is not None else []
        if fn in _FMA_NAMES and len(kids) == 3:
            return kids[2] == name
        if fn in _ADD_NAMES and kids:
            return name in kids
    return False


def _base_name(expr: str) -> str | None:
    m = re.match(r"\s*&?\s*\(?\s*([A-Za-z_]\w*)", expr)
    return m.group(1) if m else None


def _elem_bytes(dtype: str) -> int | None:
    from .cuda_model import CUDA_TYPE_BYTES

    base = " ".join(dtype.replace("const", "").replace("volatile", "").split())
    return CUDA_TYPE_BYTES.get(base)


def _trip(kind: str, step: str, init: str, op: str, bound: str, fold_fn) -> tuple[str | None, int | None]:
    """Trip-count expression (and value when every part folds) of a counted for-loop."""
    def p(x: str) -> str:
        x = x.strip()
        return x if re.fullmatch(r"[\w.]+", x) else f"({x})"

    s, i, b = fold_fn(step), fold_fn(init), fold_fn(bound)
    text, count = None, None
    if kind == "add" and op in ("<", "<=", "!="):
        span = p(bound) if init.strip() in ("0", "0u") else f"{p(bound)} - {p(init)}"
        if op == "<=":
            span = f"{span} + 1"
        text = span if step.strip() == "1" else f"ceil({p(span)} / {p(step)})"
        if None not in (s, i, b) and s > 0:
            count = max(0, math.ceil((b - i + (1 if op == "<=" else 0)) / s))
    elif kind == "sub" and op in (">", ">="):
        span = f"{p(init)} - {p(bound)}" + (" + 1" if op == ">=" else "")
        text = span if step.strip() == "1" else f"ceil({p(span)} / {p(step)})"
        if None not in (s, i, b) and s > 0:
            count = max(0, math.ceil((i - b + (1 if op == ">=" else 0)) / s))
    elif kind in ("shr", "div") and op in (">", ">=", "!="):
        text = f"floor(log2({init.strip()})) + 1"
        if isinstance(i, int) and i > 0 and (s == 1 if kind == "shr" else s == 2):
            count = int(math.floor(math.log2(i))) + 1
    elif kind in ("shl", "mul") and op in ("<", "<="):
        text = f"ceil(log2({p(bound)} / {p(init)}))"
        if None not in (i, b) and i > 0 and b > 0 and (s == 1 if kind == "shl" else s == 2):
            count = max(0, math.ceil(math.log2(b / i) - 1e-12) + (1 if op == "<=" and math.log2(b / i).is_integer() else 0))
    if count is not None:
        count = int(count)
    return text, count


_HANDLERS = {
    "preproc_def": _Walker._preproc_def,
    "preproc_function_def": _Walker._preproc_function_def,
    "preproc_call": _Walker._preproc_call,
    "template_declaration": _Walker._template_declaration,
    "function_definition": _Walker._function_definition,
    "declaration": _Walker._declaration,
    "expression_statement": _Walker._statement,
    "return_statement": _Walker._statement,
    "for_statement": _Walker._loop,
    "while_statement": _Walker._loop,
    "do_statement": _Walker._loop,
    "for_range_loop": _Walker._loop,
    "if_statement": _Walker._if,
    "conditional_expression": _Walker._conditional,
    "field_expression": _Walker._field_expression,
    "call_expression": _Walker._call,
    "gnu_asm_expression": _Walker._gnu_asm,
    "subscript_expression": _Walker._subscript,
    "update_expression": _Walker._update_expression,
    "assignment_expression": _Walker._assignment,
}
