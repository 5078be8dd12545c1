"""Migration-correctness rules: carried dependencies, unused inputs, unguarded floor-divided trips."""

from __future__ import annotations

from ...api.hardware import Target
from ...findings import Severity
from ...parse import consts
from ...parse.nki import proves_divisible
from ...parse.nki_model import NkiFile
from .preconditions import documented_multiple
from ..registry import RuleSpec
from .common import (
    allocation_of,
    check,
    defined_outside,
    emit,
    fresh_in_loop_before,
    inside,
    loop_label,
    reads_self,
    tail_claim,
)
from .tails import has_tail_block

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI201", "affine-range-carried-dependency", "loop-carried-dependency", Severity.ERROR,
             "Legacy NKI: an nl.affine_range iteration reads a tensor an earlier iteration wrote "
             "(other than `psum += matmul`).",
             fix="Use nl.sequential_range for the loop, or accumulate in PSUM with `acc += nl.matmul(...)`.",
             doc="""\
## What it finds
Legacy NKI only: inside `nl.affine_range`, a tensor defined before the loop is read and written at the same location by every iteration: `acc[...] = nl.add(acc, x)` (an error). `acc += x` (also `-=`, `*=`) outside PSUM is an associative reduction, so the iteration order does not change the result (AWS's fused Mamba tutorial accumulates `scanC_accum[...] += scanC` in SBUF this way), but maintainers report `+=` on SBUF as unreliable in the compiler: a warning. The documented `psum += nl.matmul(...)` accumulation (also into a direct `ncc.psum.mod_alloc(...)` allocation) is allowed. So are writes indexed by the loop variable, tensors freshly created inside the loop, and trace-time Python values: an address counter `addr += size` is unrolled by the tracer, and a predicate over indices and sizes rebound in the loop (`mask = (nl.arange(128)[:, None] + 128 * i < n) & mask`) is built by the tracer too; neither is carried on the device. A tile copied (or cast) into its own name, `x = nl.copy(x, dtype=...)`, reading nothing else the kernel binds, gives the same values in any order: an info that the copy belongs before the loop.

## Why it matters on Trainium
`affine_range` declares the iterations independent, so the compiler may reorder or pipeline them. With a real carried dependency the result is wrong, or the compile fails (`[TEN404] ... Can only handle single store`), and the simulator may not show it.

## Example
```python
acc = nl.zeros((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
for k in nl.affine_range(8):
    acc += nl.load(a[k * 128:(k + 1) * 128, 0:512])
```

## Fix
Use `nl.sequential_range` for loops with a carried dependency, or accumulate matmuls in a PSUM tile with `+=`.
""", emits=(Severity.WARNING, Severity.INFO)),
    RuleSpec("NKI202", "unused-kernel-input", "unused-input", Severity.WARNING,
             "A kernel parameter is never read.",
             fix="Use the input (a missing epilogue such as bias?) or remove it from the signature.",
             doc="""\
## What it finds
A kernel parameter that the kernel body never reads. A parameter the body writes into (`out[...] = ...`, or the `dst=` of an ISA call: an output buffer the caller passes) and `*args`/`**kwargs` are not reported. Only entry kernels (and functions no other checked function calls) are judged: a helper or sub-kernel that ignores a parameter (a buffer manager, a name suffix passed to every helper) is plumbing, not a dropped kernel input. Names read inside f-strings and parameters that are called (`activation_fn(x)`) count as reads.

## Why it matters on Trainium
In a CUDA port this usually means part of the computation was dropped (a bias, a scale, a residual), and the results differ from the CUDA kernel only for inputs where that argument matters.

## Example
```python
def gemm_bias(lhsT, rhs, bias):   # bias is never loaded
```

## Fix
Apply the input the way the CUDA kernel does, or remove it from the signature and the call sites.
"""),
    RuleSpec("NKI203", "floor-div-trip-count-unguarded", "missing-boundary-mask", Severity.WARNING,
             "A loop runs `N // T` iterations with no assert that T divides N and no mask or clamp for the tail.",
             fix="Add `assert N % T == 0`, or iterate ceil(N / T) tiles and clamp the last one (min()/mask=).",
             doc="""\
## What it finds
A loop whose trip count floor-divides by a tile size (`M // 128`, directly or through a name bound to it) when no assert proves divisibility (`assert M % 128 == 0`), and the loop has no mask, `min()` clamp or `if` guard for the tail, and no store after the loop completes the same output (a separate tail tile; NKI207 checks where it starts). An assert on a derived size counts (`L = LX - 128; assert L % 512 == 0`). With constant operands that do not divide, the rule fires as an error and states how many elements are dropped.

The finding declares its runtime claim (`evidence["claim"]`, kind `tail-dropped`, with the numerator as a linear form of the kernel's shape symbols). In a review with a port spec the claim is evaluated on every size: when a size that leaves a partial tile passes with every output element written (a tail handled where the static check cannot see, e.g. in a helper), the finding is demoted to info with that evidence; when such a size leaves output unwritten, it is promoted to error and leads the item as the root cause. Guards also count when they are a library assert helper (`kernel_assert(M % 128 == 0, ...)`), in any function that calls this one (directly or through others, the argument passed for a parameter included), in a validator or config builder such a caller runs, or in a method of a config class (`if self.H % 512 != 0: raise`). A ceiling division (`(T + 15) // 16`) rounds up and is not reported, and constants imported from other checked modules fold (`PSUM_SIZE // TILE_SIZE`). A loop over MX quadrants (`// 32` or `// 4` in a loop whose variable names a quadrant) is not reported: the format keeps the partition dimension a multiple of 32. When the kernel's docstring states the precondition (one sentence naming the size, the tile and "multiple"/"divisible"/"aligned": "K and M are multiples of 128"), the finding is `info`: the contract is documented, only the assert that enforces it is missing. Loops over the same `N // T` in one file are one finding (`evidence["cause"]`), with the other loops' lines listed.

## Why it matters on Trainium
The CUDA kernel guards its tail threads with `if (row < M)`. The floored NKI loop silently skips the last `M % 128` rows: output is correct for aligned test sizes and uninitialised for everything else.

## Example
```python
M, N = a.shape
for i in nl.affine_range(M // 128):   # M % 128 rows are never processed
```

## Fix
Assert the precondition (`assert M % 128 == 0`), or iterate `(M + 127) // 128` tiles and clamp the last one (`min(128, M - i * 128)` in new NKI, `mask=` in legacy NKI).
""", policy="failure", emits=(Severity.ERROR, Severity.INFO)),
    RuleSpec("NKI206", "shape-special-cased", "output-mismatch", Severity.ERROR,
             "The kernel computes only when a shape equals literal values (`if R == 256 and D == 1024`) and "
             "otherwise returns an input or writes no output.",
             fix="Compute for any shape (tile loops over the symbolic sizes, masked/clamped tail), or assert the "
                 "supported shapes so other shapes fail loudly.",
             doc="""\
## What it finds
An `if` whose test compares shape values of kernel inputs (names bound from `x.shape`, or `x.shape[i]`
itself) with literal numbers — `R == 256 and D == 1024`, `x.shape == (256, 1024)`, or the negated form
`R != 256 or D != 1024` — where the path for the literal shape computes and the path for every other shape
computes nothing: it returns a kernel input unchanged, returns a tensor it never wrote, or writes no
output at all. A two-way test only: an `if`/`elif` dispatch, tests such as `K % 128 == 0`, a path that
still computes (a generic fallback) or one that raises/asserts are not reported. Helpers and sub-kernels are not judged: their caller consumes what they return, so a path that passes a tile through unchanged (a bias already broadcast) is no missing output.

## Why it matters on Trainium
A kernel tuned (or faked) for the one shape its author tested passes that test and silently returns
garbage for every other shape; nothing fails, the numbers are just wrong. NKI specialises kernels per
input shape at trace time, so a shape test costs nothing at run time — the problem is only what happens
on the other branch.

## Example
```python
R, D = gate.shape
if R == 256 and D == 1024:          # the tested shape
    ...                              # the real computation
    return out
return gate                          # any other shape: the input, unchanged
```

## Fix
Compute for any shape (loop over `R // 128` tiles with a clamped or masked tail, tile the free axis over
`D`), or, if only some shapes are supported, say so with `assert R % 128 == 0, "..."` so other shapes
fail loudly instead of returning a wrong value.
"""),
]


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
                elif assoc and alloc is not None and alloc.buffer == "psum":
                    # PSUM accumulates only what the Tensor Engine writes; another engine's `+=` is a plain
                    # read-add-write there, as in SBUF (nki-facts: Vector/Scalar treat PSUM as plain SRAM)
                    msg = (f"`{w.name} {w.op} ...` in PSUM accumulates a non-matmul value across iterations of "
                           f"nl.affine_range {loop_label(lp)}: only matmul results accumulate in PSUM; this `{w.op}` is "
                           "a Vector/Scalar engine read-add-write, which maintainers report unreliable under "
                           "affine_range (TEN404). The reduction is associative, so the order is harmless.")
                    fix = (f"Use nl.sequential_range for the loop on line {lp.line}, or reduce with a matmul "
                           "against a ones tile.")
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
                stated = documented_multiple(k.docstring, num_text, den)
                said = (f" The docstring states it as the caller's contract (\"{stated[:120]}\"): an assert would "
                        "enforce it.") if stated else ""
                yield emit("NKI203", nf, lp.line, lp.col, lp.line, lp.col + 3,
                           f"{loop_label(lp)} runs `{num_text} // {den}` iterations with no assert that {den} "
                           f"divides {num_text} and no mask or min() clamp: when {num_text} % {den} != 0 the tail is "
                           "silently skipped." + said,
                           {"numerator": num_text, "tile": den, "trip_expr": lp.trip_expr,
                            "claim": tail_claim(lp, num_text, num, den), "cause": f"{num_text} // {den}",
                            "documented": bool(stated)},
                           severity=Severity.INFO if stated else None,
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
