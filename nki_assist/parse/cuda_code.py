"""Statements (loops, conditions) and expressions (calls, stores, shared accesses) for the CUDA walker."""

from __future__ import annotations

import re

from .cuda_model import (
    FLOAT_DTYPES, Accumulator, Atomic, Barrier, BoundsGuard, CudaLoop, EpilogueHint, FastMath, GlobalStore,
    GridStrideLoop, ScaleUse, SharedAccess, TensorCoreUse, ThreadIndexUse, WarpShuffle, canonical_dtype
)
from .cuda_vocab import (
    APPROX_PTX, ATOMIC, BLOCK_BARRIERS, FAST_MATH, GELU_CONSTANTS, PTX_BARRIER, PTX_MMA, SHARED_WRITERS,
    SHUFFLE, TENSOR_CORE_CALLS, WARP_BARRIERS, inline_scales, ptx_mma_dtypes, scaled_by
)
from .cuda_state import (
    _BUILTIN_FIELDS, _BUILTIN_HEADS, _BUILTINS, _RELATIONAL, _KernelState, _base_name, _is_exit,
    _is_self_update, _trip, refs
)

_IDENT_SUB = re.compile(r"(?<![\w.])[A-Za-z_]\w*")


class _CodeMixin:
    # -- statements ------------------------------------------------------------------------------
    def _statement(self, node) -> None:
        self.stmt = node
        if self.ks is not None and self.ks.scalar_shared:
            self._scalar_shared_reads(node)
        self.children(node)

    def _loop(self, node) -> None:
        ks = self.ks
        if ks is None:
            self.children(node)
            return
        lp = CudaLoop(kind={"for_statement": "for", "while_statement": "while", "do_statement": "do",
                            "for_range_loop": "range-for"}[node.type],
                      line=self.line(node), end_line=node.end_point[0] + 1,
                      unroll=self._unroll_before(node), start=node.start_byte, end=node.end_byte)
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
                ks.cond_stack.append((r, True, ks.is_thread(r), lp.cond))
                pushed = True
        ks.loop_stack.append(idx)
        skip = init.start_byte if init is not None else -1
        for c in node.named_children:
            if c.start_byte != skip and c.child_count:
                self.visit(c)
        ks.loop_stack.pop()
        if pushed:
            ks.cond_stack.pop()

    def _unroll_before(self, node) -> int | bool | None:
        """`#pragma unroll [N]` on one of the two lines above the loop (blank lines between allowed)."""
        if not self.unroll_pragmas:
            return None
        row = node.start_point[0]
        for ln in range(row, max(0, row - 3), -1):  # 1-based lines row .. row-2 precede the loop
            if ln in self.unroll_pragmas:
                arg = self.unroll_pragmas[ln]
                if not arg:
                    return True
                v = self.fold(arg)
                return int(v) if isinstance(v, (int, float)) else True
            text = self.line_bytes[ln - 1] if 0 < ln <= len(self.line_bytes) else b""
            if text.strip():
                return None
        return None

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
        if self.ks is None:
            self.children(node)
            return
        cond = node.child_by_field_name("condition")
        expr = cond.named_children[0] if cond is not None and cond.named_children else cond
        self._branches(node, expr, exit_guard=True)

    def _conditional(self, node) -> None:
        if self.ks is None:
            self.children(node)
            return
        self._branches(node, node.child_by_field_name("condition"), exit_guard=False)

    def _branches(self, node, cond, *, exit_guard: bool) -> None:
        """An `if` or `?:`: record a thread-index bounds guard, then visit both branches under it."""
        ks = self.ks
        ctext = self.text(cond) if cond is not None else ""
        r = refs(ctext)
        relational = bool(_RELATIONAL.search(ctext.replace("->", ".")))
        thread = ks.is_thread(r)
        if relational and thread:
            ks.k.bounds_guards.append(BoundsGuard(" ".join(ctext.split()), self.line(node)))
        cons = node.child_by_field_name("consequence")
        if exit_guard and relational and cons is not None and _is_exit(cons):
            ks.ret_guards |= r  # `if (i >= n) return;` guards everything after it
        if cond is not None:
            self.visit(cond)
        ks.cond_stack.append((r, relational, thread, ctext))
        for field in ("consequence", "alternative"):
            c = node.child_by_field_name(field)
            if c is not None:
                self.visit(c)
        ks.cond_stack.pop()

    # -- expressions -----------------------------------------------------------------------------
    def _field_expression(self, node) -> None:
        if self.ks is None:
            self.children(node)
            return
        head = self.src[node.start_byte:node.start_byte + 9]
        if head[:8] not in _BUILTIN_HEADS:
            self.children(node)
            return
        arg = node.child_by_field_name("argument")
        if arg is not None and arg.type == "identifier":
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
        if not method and not name.startswith("__"):
            k.calls.append((name, line))  # filtered to this file's __device__ functions at the end
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
        parts = ["".join(self.text(i).split()) for i in indices]
        itext = "".join(parts)
        r = refs(itext)
        thread_index = ks.is_thread(ks.closure(r))
        thread_cond = any(c[2] for c in ks.cond_stack)
        stmt = self.stmt.start_byte if self.stmt is not None else node.start_byte
        conds = " && ".join(c[3] for c in ks.cond_stack if c[2])
        key = itext
        if ks.aliases and r & ks.aliases.keys():
            key = _IDENT_SUB.sub(lambda m: ks.aliases.get(m.group(0), m.group(0)), itext)
        lead_uniform = len(parts) > 1 and not ks.is_thread(ks.closure(refs(parts[0])))
        ks.k.shared_accesses.append(SharedAccess(
            array, kind, itext, thread_index, thread_cond, self.line(node), self.column(node),
            node.start_byte, stmt, tuple(ks.loop_stack), conds, key, lead_uniform))

    def _scalar_shared_reads(self, node) -> None:
        """Reads of scalar `__shared__` variables (`s_mean`) in a statement: identifiers are not walked."""
        ks = self.ks
        text = self.text(node)
        names = refs(text) & ks.scalar_shared
        if not names:
            return
        first = node.named_children[0] if node.named_children else None
        if first is not None and first.type == "assignment_expression":
            left = first.child_by_field_name("left")
            op = first.child_by_field_name("operator")
            right = first.child_by_field_name("right")
            if left is not None and left.type == "identifier" and op is not None and self.text(op) == "=":
                names -= {self.text(left)} - refs(self.text(right) if right is not None else "")
        for name in sorted(names):
            self._shared_access(node, name, (), "read")

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
        if ks.scale_factors or "sqrt" in rtext:
            self._scale_uses(node, target, op, rtext)
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
            elif bname in ks.types and (op in ("+=", "-=") or (
                    op == "=" and _is_self_update("".join(self.text(target).split()), right, self))):
                self._accumulator(bname, node)  # acc[i][j] += ... / acc[i][j] = fmaf(a, b, acc[i][j])
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
            if name in ks.scalar_shared:
                self._shared_access(target, name, (), "write")
            elif op in ("+=", "-="):
                if op == "+=" and ks.loop_stack:
                    self._while_grid_stride(name, rtext, rrefs)
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

    def _scale_uses(self, node, target, op: str, rtext: str) -> None:
        ks = self.ks
        tname = self.text(target) if target is not None else "?"
        if tname in ks.scale_factors:
            return  # the factor's own definition (`scale = scale * log2e`)
        line = self.line(node)
        for f in scaled_by(rtext, op, ks.scale_factors):
            origin, fline = ks.scale_factors[f]
            ks.k.scale_uses.append(ScaleUse(f, origin, fline, line, " ".join(tname.split())))
        for expr in inline_scales(rtext):
            r = refs(expr)
            if any(x in ks.types and not ks.types[x].endswith("*") and x not in ks.shared
                   and canonical_dtype(ks.types[x].replace("const", "").strip()) not in FLOAT_DTYPES
                   or x in ks.env for x in r):
                e = " ".join(expr.split())
                ks.k.scale_uses.append(ScaleUse(e, e, line, line, " ".join(tname.split())))

    def _while_grid_stride(self, var: str, step: str, rrefs) -> None:
        """`while (i < n) { ...; i += blockDim.x * gridDim.x; }` is a grid-stride loop too."""
        ks = self.ks
        lp = ks.k.loops[ks.loop_stack[-1]]
        if lp.kind not in ("while", "do") or lp.grid_stride or var not in refs(lp.cond or ""):
            return
        if any(x.startswith("gridDim.") or x in ks.grid_vars for x in rrefs):
            lp.grid_stride, lp.var, lp.step = True, var, f"{var} += {step}"
            ks.k.grid_stride_loops.append(GridStrideLoop(var, " ".join(step.split()), lp.line))

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
        for r, relational, _, _ in ks.cond_stack:
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
        params = {p.name for p in k.params}
        k.locals = {n: t for n, t in ks.types.items() if n not in params}


