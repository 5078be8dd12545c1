"""Declarations, preprocessor and host code (launches) for the CUDA walker."""

from __future__ import annotations

import math
import re

from .cuda_consts import FunctionMacro, fold
from .cuda_model import (
    FLOAT_DTYPES, CudaKernel, CudaParam, EpilogueHint, Launch, SharedDecl, canonical_dtype
)
from .cuda_vocab import SCALE_NAME, SQRT_CALL, value_hints
from .cuda_state import _KernelState, _elem_bytes, refs

_BUILTIN_ONLY = re.compile(r"\s*(?:threadIdx|blockIdx|blockDim|gridDim)\s*\.\s*[xyz]\s*")


class _DeclMixin:
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

    # -- declarations ----------------------------------------------------------------------------
    def _template_declaration(self, node) -> None:
        params = node.child_by_field_name("parameters")
        names = []
        if params is not None:
            for p in params.named_children:
                for c in p.named_children:  # the first name; a default (`= Relu`) follows it
                    if c.type in ("identifier", "type_identifier"):
                        names.append(self.text(c))
                        break
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
        for p in k.params:
            if p.name in scale_names and SCALE_NAME.match(p.name):
                ks.scale_factors[p.name] = ("parameter", p.line)
        if scale_names:
            alt = "|".join(map(re.escape, scale_names))
            ks.scale_re = re.compile(rf"\*\s*({alt})\b|\b({alt})\s*\*")
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
        if ks is not None and ks.scalar_shared and "__shared__" not in quals:
            self._scalar_shared_reads(node)
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
        if dims is None:
            ks.scalar_shared.add(name)
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
        if _BUILTIN_ONLY.fullmatch(vtext):  # `int tx = threadIdx.x;`: same element as threadIdx.x
            ks.aliases[name] = "".join(vtext.split())
        if pointers and any(x in ks.global_ptrs for x in r):
            ks.global_ptrs[name] = next(ks.global_ptrs[x] for x in r if x in ks.global_ptrs)
        elif pointers and any(x in ks.shared for x in r):
            ks.shared[name] = base  # pointer into a __shared__ array (dynamic smem carve-up)
        if not pointers and not dims and canonical_dtype(base.replace("const", "").strip()) in FLOAT_DTYPES:
            self._scale_factor(name, vtext, r, self.line(node))
        if not pointers and not dims:
            if is_const:
                v = fold(vtext, ks.env, self.macros)
                if v is not None:
                    ks.env[name] = v
                    ks.k.constants[name] = v
            ks.hints[name] = self._hints_of(vtext, r, self.line(value))

    def _scale_factor(self, name: str, vtext: str, r, line: int) -> None:
        """`float scale = rsqrtf((float)d)` (a sqrt of a size), a scale/alpha/temperature-named scalar, or
        one derived from another factor: data-independent values a kernel scales by."""
        ks = self.ks
        data = {x for x in r if x in ks.global_ptrs or x in ks.shared or ks.is_thread({x})
                or (x in ks.types and x not in ks.scale_factors
                    and canonical_dtype(ks.types[x].rstrip("*").replace("const", "").strip()) in FLOAT_DTYPES)}
        if data:
            return
        sizes = {x for x in r if (x in ks.types and not ks.types[x].endswith("*")
                                  and canonical_dtype(ks.types[x].replace("const", "").strip()) not in FLOAT_DTYPES)
                 or x in ks.env}
        if (SQRT_CALL.search(vtext) and sizes) or SCALE_NAME.match(name) or any(x in ks.scale_factors for x in r):
            ks.scale_factors[name] = (" ".join(vtext.split()), line)

    def _assign_deps(self, name: str, r: set[str], replace: bool = False) -> None:
        ks = self.ks
        r = r - {name}
        if replace:
            ks.deps[name] = set(r)
        else:
            ks.deps.setdefault(name, set()).update(r)
        # indices are integers (or pointers): a float computed from a thread-indexed load is data
        declared = ks.types.get(name)
        if ks.is_thread(r) and (declared is None or declared.endswith("*")
                                or canonical_dtype(declared) not in FLOAT_DTYPES):
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
        if self.src.find(b"<<<", node.start_byte, node.end_byte) < 0:
            return  # host code matters only for launches (and the dim3/int locals they use)
        outer_env, outer_dims = self.host_env, self.host_dims
        self.host_env, self.host_dims = dict(self.env), {}
        self.children(node)
        self.host_env, self.host_dims = outer_env, outer_dims

    def _launch(self, node, fn, ksyn) -> None:
        name_node = fn.child_by_field_name("name") if fn.type == "template_function" else fn
        name = self.text(name_node) if name_node is not None else self.text(fn)
        name = name.split("<")[0].split("::")[-1].strip()
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

