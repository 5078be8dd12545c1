"""Migration-correctness rules: carried dependencies, unused inputs, unguarded floor-divided trips."""

from __future__ import annotations

from ...findings import Severity
from ...api.hardware import Target
from ...parse import consts
from ...parse.nki import proves_divisible
from ...parse.nki_model import NkiFile
from .tails import has_tail_block
from .common import allocation_of, check, defined_outside, emit, fresh_in_loop_before, inside, loop_label, reads_self, tail_claim


@check("NKI201")
def affine_carried(nf: NkiFile, t: Target):
    if nf.dialect not in ("legacy", "transitional"):
        return
    for k in nf.kernels:
        for w in k.assignments:
            if w.scalar or not reads_self(w):
                continue  # a trace-time Python counter is unrolled by the tracer, not carried on device
            alloc = allocation_of(k, w.name, w.line)
            if w.value_kind == "matmul" and w.op in ("+=", "call") and alloc is not None and alloc.buffer == "psum":
                continue  # psum += matmul: the documented associative accumulation
            # `t += x` outside PSUM is an associative reduction: the iteration order does not change the result
            # (AWS's fused Mamba tutorial accumulates `scanC_accum[...] += scanC` in SBUF under affine_range), but
            # maintainers report SBUF `+=` as unreliable in the compiler: a warning, not an error
            assoc = w.op in ("+=", "-=", "*=")
            recopy = _recopy(k, w)
            for lp in reversed(w.loops):
                if lp.kind != "affine_range" or lp.id in w.index_dep_loops:
                    continue
                if not defined_outside(k, w.name, lp) or fresh_in_loop_before(k, w, lp):
                    continue
                where = f" in {alloc.buffer.upper()}" if alloc is not None and alloc.buffer != "unknown" else ""
                evidence = {"tensor": w.name, "loop_var": lp.var, "loop_line": lp.line, "op": w.op,
                            "buffer": alloc.buffer if alloc else None, "associative": assoc}
                severity = Severity.WARNING if assoc else None
                msg = (f"`{w.name}`{where} is read and written by every iteration of nl.affine_range "
                       f"{loop_label(lp)}: a loop-carried dependency, but affine_range iterations may run in "
                       "any order (legacy NKI).")
                fix = (f"Use nl.sequential_range for the loop on line {lp.line}"
                       + (", or accumulate the matmul into a PSUM tile with `+=`." if w.value_kind == "matmul"
                          else "."))
                if recopy:
                    msg = (f"`{w.name} = {w.value_api}({w.name}, ...)`{where} copies a tile defined before "
                           f"nl.affine_range {loop_label(lp)} into itself on every iteration: each iteration "
                           "yields the same values, so the order is harmless, but the copy runs once per iteration.")
                    evidence["idempotent"] = True
                    severity = Severity.INFO
                    fix = f"Copy `{w.name}` once before the loop on line {lp.line} and use the copy inside."
                elif assoc:
                    msg = (f"`{w.name} {w.op} ...`{where} accumulates across iterations of nl.affine_range "
                           f"{loop_label(lp)}: an associative reduction, so the order is harmless, but `{w.op}` "
                           "outside PSUM is reported unreliable in the NKI compiler (TEN404); accumulate in PSUM "
                           "or use nl.sequential_range.")
                yield emit("NKI201", nf, w.line, w.col, w.end_line, w.end_col, msg, evidence, severity=severity,
                           fix=fix)
                break


def _recopy(k, w) -> bool:
    """`x = nl.copy(x, dtype=...)`: a copy (or cast) of the tile into its own name, reading nothing else the
    kernel binds, gives the same values however often and in whatever order it runs."""
    if w.op != "=" or w.subscript or w.value_api not in ("nl.copy", "nisa.tensor_copy"):
        return False
    bound = {p.name for p in k.params} | {a.name for a in k.assignments}
    return w.name in w.reads and not (w.reads - {w.name}) & bound


@check("NKI202")
def unused_input(nf: NkiFile, t: Target):
    for k in nf.kernels:
        if "locals" in k.called_functions or "vars" in k.called_functions:
            continue
        if k.role in ("helper", "sub-kernel"):
            continue  # called from another kernel: a parameter it ignores is plumbing, not an unread kernel input
        # a parameter the kernel writes into (`out[...] = ...`, `dst=out`) is an output buffer, not an unread input
        written = {a.name for a in k.assignments if a.subscript or a.op == "call"}
        for p in k.params:
            if p.name in k.used_names or p.name in written or p.splat or p.name.startswith("_") \
                    or p.name in ("self", "cls"):
                continue
            yield emit("NKI202", nf, p.line, p.col, p.line, p.col + len(p.name),
                       f"Input `{p.name}` of kernel `{k.name}` is never read.",
                       {"parameter": p.name, "kernel": k.name, "root_cause": f"unread-input:{p.name}",
                        "claim": {"kind": "input-unused", "nki_param": p.name}},
                       fix=f"Apply `{p.name}` in `{k.name}` where the reference (or the CUDA kernel) uses it; drop it "
                           "from the signature only if the computation truly does not need it.")


def lp_outer(k, lp):
    """The loops that enclose `lp`."""
    return [x for x in k.loops if x is not lp and x.line < lp.line <= x.end_line]


def _ceil_div(num, den: int) -> bool:
    """`(X + den - 1) // den`: a ceiling division, whose last iteration is the partial tile."""
    const = consts.as_int(num.const) if isinstance(num, consts.Lin) else None
    return bool(const is not None and num.terms and const > 0 and (const + 1) % den == 0)


@check("NKI203")
def floor_div_trip(nf: NkiFile, t: Target):
    for k in nf.kernels:
        for lp in k.loops:
            for num_text, num, den, *_ in lp.floor_divs:
                if proves_divisible(k, num, den):
                    continue
                n_int = consts.as_int(num)
                if n_int is not None:
                    tail = n_int % den
                    yield emit("NKI203", nf, lp.line, lp.col, lp.line, lp.col + 3,
                               f"{loop_label(lp)} runs {num_text} // {den} = {n_int // den} tiles of {den}: the last "
                               f"{tail} of {n_int} elements are never processed.",
                               {"numerator": n_int, "tile": den, "trip_count": n_int // den, "dropped": tail,
                                "claim": tail_claim(lp, num_text, num, den)},
                               severity=Severity.ERROR,
                               fix=f"Loop `{lp.var}` over ceil({num_text} / {den}) = {-(-n_int // den)} tiles and "
                                   + (f"mask the last one to {tail} elements (mask=)." if nf.dialect == "legacy"
                                      else f"clamp the last one to {tail} elements with min()-bounded slices."))
                    continue
                syms = {s for term, _ in (num.terms if isinstance(num, consts.Lin) else ()) for s in [term]}
                if syms & k.guarded_names or any(inside(g, lp) for g in k.guard_lines):
                    continue  # an assert / if / min() / mask= handles the tail
                if den in (4, 32) and any("quad" in (x.var or "").lower() for x in [lp, *lp_outer(k, lp)]):
                    continue  # MX quadrants: 32-partition blocks of a partition dim the format keeps a multiple of 32
                if _ceil_div(num, den):
                    continue  # `(T + 15) // 16` rounds up: the last partial tile is a loop iteration
                if k.context is not None and syms and all(
                        k.context.proves_divisible(str(s).rsplit(".", 1)[-1], den) for s in syms):
                    continue  # the function, a caller (transitively) or its config class checks `X % den`
                if has_tail_block(k, lp):
                    continue  # a partial tile after the loop completes it (NKI207 checks where it starts)
                yield emit("NKI203", nf, lp.line, lp.col, lp.line, lp.col + 3,
                           f"{loop_label(lp)} runs `{num_text} // {den}` iterations with no assert that {den} "
                           f"divides {num_text} and no mask or min() clamp: when {num_text} % {den} != 0 the tail is "
                           "silently skipped.",
                           {"numerator": num_text, "tile": den, "trip_expr": lp.trip_expr,
                            "claim": tail_claim(lp, num_text, num, den)},
                           fix=f"Add `assert {num_text} % {den} == 0` at the top of the kernel, or loop `{lp.var}` over "
                               f"ceil({num_text} / {den}) tiles and "
                               + ("mask the last one (mask=)." if nf.dialect == "legacy"
                                  else "clamp the last one with min()-bounded slices."))


@check("NKI206")
def shape_special_cased(nf: NkiFile, t: Target):
    for k in nf.kernels:
        if k.role in ("helper", "sub-kernel"):
            continue  # its caller consumes what it returns: a path that passes a tile through is no missing output
        for b in k.shape_branches:
            if not b.matched_computes or b.other_computes or b.other_raises:
                continue  # both paths compute (a dispatch), or other shapes are rejected explicitly
            shape = ", ".join(f"{s}={v}" for s, v in b.literals)
            if b.other_returns_input:
                what = f"returns its input `{b.other_returns}` unchanged (line {b.other_line})"
            elif b.other_returns:
                what = f"returns `{b.other_returns}` without computing it (line {b.other_line})"
            else:
                what = f"writes no output (line {b.other_line})"
            yield emit("NKI206", nf, b.line, b.col, b.end_line, b.end_col,
                       f"`if {b.test}` computes only for the literal shape {shape}; for every other shape the "
                       f"kernel {what}: a wrong result, not an error, on any shape but the tested one.",
                       {"test": b.test, "literals": [[s, list(v) if isinstance(v, tuple) else v]
                                                     for s, v in b.literals],
                        "other_returns": b.other_returns, "other_returns_input": b.other_returns_input,
                        "other_line": b.other_line},
                       fix="Compute for any shape (tile loops over the symbolic sizes with a masked/clamped "
                           "tail), or reject unsupported shapes with an assert instead of returning a value.")
