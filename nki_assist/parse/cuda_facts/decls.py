"""Declarations: kernels and their parameters, `__shared__` arrays, locals and constants, `#define`s and
templates, and the host code's kernel launches.

A collector: functions of the CUDA walker (`ex`, parse/cuda_walk.py) that record one kind of fact.
"""

from __future__ import annotations

import math
import re

from ..cuda_consts import FunctionMacro, fold
from ..cuda_model import FLOAT_DTYPES, CudaKernel, CudaParam, EpilogueHint, Launch, SharedDecl, canonical_dtype
from ..cuda_state import _elem_bytes, _KernelState, refs
from ..cuda_vocab import SCALE_NAME, SQRT_CALL, value_hints
from . import shared, statements

_BUILTIN_ONLY = re.compile(r"\s*(?:threadIdx|blockIdx|blockDim|gridDim)\s*\.\s*[xyz]\s*")


def preproc_def(ex, node) -> None:
    name = node.child_by_field_name("name")
    value = node.child_by_field_name("value")
    if name is None:
        return
    key = ex.text(name)
    if value is not None:
        v = fold(ex.text(value), ex.env, ex.macros)
        if v is not None:
            ex.env[key] = v
            if ex.ks:
                ex.ks.env[key] = v


def preproc_function_def(ex, node) -> None:
    name = node.child_by_field_name("name")
    params = node.child_by_field_name("parameters")
    value = node.child_by_field_name("value")
    if name is not None and params is not None and value is not None:
        names = [ex.text(c) for c in params.children if c.type == "identifier"]
        ex.macros[ex.text(name)] = FunctionMacro(names, ex.text(value))


def template_declaration(ex, node) -> None:
    params = node.child_by_field_name("parameters")
    names = []
    if params is not None:
        for p in params.named_children:
            for c in p.named_children:  # the first name; a default (`= Relu`) follows it
                if c.type in ("identifier", "type_identifier"):
                    names.append(ex.text(c))
                    break
    ex.pending_template = names
    ex.children(node)
    ex.pending_template = []


def function_definition(ex, node) -> None:
    quals = {c.type for c in node.children if not c.is_named}
    qualifier = "global" if "__global__" in quals else "device" if "__device__" in quals else None
    decl = node.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    body = node.child_by_field_name("body")
    template = ex.pending_template
    ex.pending_template = []
    if qualifier is None or decl is None or body is None:
        host_function(ex, node)
        return
    name_node = decl.child_by_field_name("declarator")
    name = ex.text(name_node) if name_node is not None else "?"
    name = name.split("::")[-1].split("<")[0].strip()
    k = CudaKernel(name=name, line=ex.line(node), end_line=node.end_point[0] + 1,
                   qualifier=qualifier, template_params=template)
    for c in node.named_children:
        if c.type == "launch_bounds":
            nums = [x for x in c.named_children]
            if nums:
                v = ex.fold(ex.text(nums[0]))
                k.launch_bounds = int(v) if isinstance(v, (int, float)) else None
    ks = _KernelState(k, ex.env)
    outer, ex.ks = ex.ks, ks
    params = decl.child_by_field_name("parameters")
    if params is not None:
        for p in params.named_children:
            if p.type == "parameter_declaration":
                param_decl(ex, p, ks)
    scale_names = [p.name for p in k.params if not p.is_pointer and canonical_dtype(p.type) in FLOAT_DTYPES]
    for p in k.params:
        if p.name in scale_names and SCALE_NAME.match(p.name):
            ks.scale_factors[p.name] = ("parameter", p.line)
    if scale_names:
        alt = "|".join(map(re.escape, scale_names))
        ks.scale_re = re.compile(rf"\*\s*({alt})\b|\b({alt})\s*\*")
    ex.visit(body)
    statements.finish_kernel(ex, ks)
    ex.ks = outer
    ex.out.kernels.append(k)


def param_decl(ex, p, ks: _KernelState) -> None:
    type_node = p.child_by_field_name("type")
    base = ex.text(type_node) if type_node is not None else "?"
    quals = [ex.text(c) for c in p.children if c.type == "type_qualifier"]
    name, pointers, inner_quals, arrays = declarator(ex, p.child_by_field_name("declarator"))
    quals += inner_quals
    if name is None:
        return
    is_ptr = pointers > 0 or arrays > 0
    param = CudaParam(name=name, type=base, is_pointer=is_ptr, is_const="const" in quals,
                      restrict=any(q in ("__restrict__", "__restrict", "restrict") for q in quals),
                      line=ex.line(p))
    ks.k.params.append(param)
    ks.types[name] = base + ("*" if is_ptr else "")
    ks.decl_pos[name] = -1
    if is_ptr:
        ks.global_ptrs[name] = name


def declarator(ex, d) -> tuple[str | None, int, list[str], int]:
    """(name, pointer depth, qualifiers inside the declarator, array rank)."""
    pointers = arrays = 0
    quals: list[str] = []
    while d is not None:
        t = d.type
        if t in ("identifier", "field_identifier"):
            return ex.text(d), pointers, quals, arrays
        if t == "pointer_declarator":
            pointers += 1
            quals += [ex.text(c) for c in d.children if c.type == "type_qualifier"]
        elif t == "array_declarator":
            arrays += 1
        elif t not in ("reference_declarator", "init_declarator", "parenthesized_declarator"):
            return None, pointers, quals, arrays
        nxt = d.child_by_field_name("declarator")
        if nxt is None and t == "reference_declarator":
            nxt = next((c for c in d.named_children), None)
        d = nxt
    return None, pointers, quals, arrays


def declaration(ex, node) -> None:
    ex.stmt = node
    ks = ex.ks
    type_node = node.child_by_field_name("type")
    base = " ".join(ex.text(type_node).split()) if type_node is not None else ""
    quals = {ex.text(c) for c in node.children if c.type in ("type_qualifier", "storage_class_specifier")}
    if ks is not None and ks.scalar_shared and "__shared__" not in quals:
        shared.scalar_shared_reads(ex, node)
    is_const = bool(quals & {"const", "constexpr"})
    for d in node.children_by_field_name("declarator"):
        if d.type == "function_declarator":  # `dim3 block(BN, BM);` parses as a declaration of a function
            name_node, params = d.child_by_field_name("declarator"), d.child_by_field_name("parameters")
            if base == "dim3" and ks is None and ex.host_env is not None and name_node is not None:
                ex.host_dims[ex.text(name_node)] = [ex.text(p) for p in params.named_children] if params else []
            continue
        value = d.child_by_field_name("value") if d.type == "init_declarator" else None
        target = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
        name, dims, pointers = decl_shape(ex, target)
        if name is None:
            continue
        if ks is None:
            file_or_host_decl(ex, name, base, is_const, pointers, dims, value)
        elif "__shared__" in quals:
            shared_decl(ex, node, name, base, dims, "extern" in quals)
        else:
            local_decl(ex, node, name, base, is_const, pointers, dims, value)
        if value is not None:
            ex.visit(value)
        for dim in dims or ():
            if dim is not None:
                ex.visit(dim)


def decl_shape(ex, d):
    """(name, [dim nodes] or None, pointer depth) of a declarator."""
    dims = []
    pointers = 0
    while d is not None:
        t = d.type
        if t in ("identifier", "field_identifier"):
            return ex.text(d), list(reversed(dims)) if dims else None, pointers
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


def file_or_host_decl(ex, name, base, is_const, pointers, dims, value) -> None:
    if value is None or pointers or dims:
        if value is not None and base == "dim3" and ex.host_env is not None:
            ex.host_dims[name] = args_text(ex, value)
        return
    if base == "dim3":
        if ex.host_env is not None:
            ex.host_dims[name] = args_text(ex, value)
        return
    v = ex.fold(ex.text(value))
    if v is None:
        return
    if ex.host_env is not None:
        ex.host_env[name] = v
    elif is_const:
        ex.env[name] = v


def args_text(ex, value) -> list[str]:
    if value.type in ("argument_list", "initializer_list"):
        return [ex.text(c) for c in value.named_children]
    if value.type == "call_expression":
        args = value.child_by_field_name("arguments")
        return [ex.text(c) for c in args.named_children] if args is not None else [ex.text(value)]
    return [ex.text(value)]


def shared_decl(ex, node, name, base, dims, extern) -> None:
    ks = ex.ks
    dtype = base.replace("volatile", "").strip()
    folded: list[int | str] = []
    dynamic = extern and (not dims or any(d is None for d in dims))
    for d in dims or ():
        if d is None:
            continue
        v = ex.fold(ex.text(d))
        folded.append(int(v) if isinstance(v, (int, float)) and v == int(v) else ex.text(d))
    elem = _elem_bytes(dtype)
    nbytes = None
    if not dynamic and elem is not None and all(isinstance(x, int) for x in folded):
        nbytes = elem * math.prod(folded) if folded else elem
    ks.k.shared.append(SharedDecl(name, dtype, tuple(folded), nbytes, ex.line(node), dynamic))
    ks.shared[name] = dtype
    ks.types[name] = dtype
    if dims is None:
        ks.scalar_shared.add(name)
    ks.decl_pos[name] = node.start_byte


def local_decl(ex, node, name, base, is_const, pointers, dims, value) -> None:
    ks = ex.ks
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
    vtext = ex.text(value)
    r = refs(vtext)
    assign_deps(ex, name, r, replace=True)
    if _BUILTIN_ONLY.fullmatch(vtext):  # `int tx = threadIdx.x;`: same element as threadIdx.x
        ks.aliases[name] = "".join(vtext.split())
    if pointers and any(x in ks.global_ptrs for x in r):
        ks.global_ptrs[name] = next(ks.global_ptrs[x] for x in r if x in ks.global_ptrs)
    elif pointers and any(x in ks.shared for x in r):
        ks.shared[name] = base  # pointer into a __shared__ array (dynamic smem carve-up)
    if not pointers and not dims and canonical_dtype(base.replace("const", "").strip()) in FLOAT_DTYPES:
        scale_factor(ex, name, vtext, r, ex.line(node))
    if not pointers and not dims:
        if is_const:
            v = fold(vtext, ks.env, ex.macros)
            if v is not None:
                ks.env[name] = v
                ks.k.constants[name] = v
        ks.hints[name] = hints_of(ex, vtext, r, ex.line(value))


def scale_factor(ex, name: str, vtext: str, r, line: int) -> None:
    """`float scale = rsqrtf((float)d)` (a sqrt of a size), a scale/alpha/temperature-named scalar, or
    one derived from another factor: data-independent values a kernel scales by."""
    ks = ex.ks
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


def assign_deps(ex, name: str, r: set[str], replace: bool = False) -> None:
    ks = ex.ks
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


def hints_of(ex, text: str, r: set[str], line: int) -> list[EpilogueHint]:
    ks = ex.ks
    hints = value_hints(text, line, ks.scale_re)
    for x in r:
        hints.extend(ks.hints.get(x, ()))
    return hints[:32]


def host_function(ex, node) -> None:
    if ex.src.find(b"<<<", node.start_byte, node.end_byte) < 0:
        return  # host code matters only for launches (and the dim3/int locals they use)
    outer_env, outer_dims = ex.host_env, ex.host_dims
    ex.host_env, ex.host_dims = dict(ex.env), {}
    ex.children(node)
    ex.host_env, ex.host_dims = outer_env, outer_dims


def launch(ex, node, fn, ksyn) -> None:
    name_node = fn.child_by_field_name("name") if fn.type == "template_function" else fn
    name = ex.text(name_node) if name_node is not None else ex.text(fn)
    name = name.split("<")[0].split("::")[-1].strip()
    parts = [c for c in ksyn.named_children]
    texts = [ex.text(c) for c in parts]
    while len(texts) < 2:
        texts.append("?")
    la = Launch(kernel=name, grid=texts[0], block=texts[1],
                smem=texts[2] if len(texts) > 2 else None,
                stream=texts[3] if len(texts) > 3 else None, line=ex.line(node))
    la.grid_dims = launch_dims(ex, parts[0]) if parts else ()
    la.block_dims = launch_dims(ex, parts[1]) if len(parts) > 1 else ()
    if la.block_dims and all(isinstance(x, int) for x in la.block_dims):
        la.block_threads = math.prod(la.block_dims)
    if la.smem is not None:
        v = ex.fold(la.smem)
        la.smem_bytes = int(v) if isinstance(v, (int, float)) else None
    ex.out.launches.append(la)


def launch_dims(ex, node) -> tuple[int | str, ...]:
    if node.type == "call_expression" and ex.text(node.child_by_field_name("function")) == "dim3":
        items = args_text(ex, node)
    elif node.type == "identifier" and ex.text(node) in ex.host_dims:
        items = ex.host_dims[ex.text(node)]
    else:
        items = [ex.text(node)]
    out: list[int | str] = []
    for item in items:
        v = ex.fold(item)
        out.append(int(v) if isinstance(v, (int, float)) and v == int(v) else item)
    return tuple(out)
