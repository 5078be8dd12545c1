"""Static CUDA rules over the facts of `parse.cuda` (metadata in rules/specs/cuda.py).

`run_cuda_rules(cuda_file, target)` runs every rule; a rule that raises becomes one low-confidence
info finding naming the crash, and the other rules still run. CUDA facts do not depend on the
Trainium target; it is accepted so every rule family has the same signature.
"""

from __future__ import annotations

from typing import Iterator

from ...findings import Finding, Severity
from ...api.hardware import Target
from ...parse.cuda_model import FLOAT_DTYPES, LOW_PRECISION_DTYPES, CudaFile, CudaKernel, canonical_dtype
from ...parse.cuda_vocab import FAST_MATH
from .sync import find_races
from ..registry import get
from ..runner import Check, CheckSet, crash_message

# The CUDA checks in registration (= definition) order; run by run_cuda_rules.
CHECKS = CheckSet("cuda")


def _col(cf: CudaFile, line: int, token: str) -> int | None:
    if 1 <= line <= len(cf.lines):
        i = cf.lines[line - 1].find(token)
        if i >= 0:
            return i + 1
    return None


def _kernels(cf: CudaFile) -> Iterator[CudaKernel]:
    yield from cf.kernels


@CHECKS.register("CUDA100")
def cuda100_parse_error(cf: CudaFile, target: Target) -> Iterator[Finding]:
    spec = get("CUDA100")
    if cf.syntax_errors:
        first = cf.syntax_errors[0]
        lines = sorted({e.line for e in cf.syntax_errors})
        more = f" (and {len(lines) - 1} more lines)" if len(lines) > 1 else ""
        yield spec.finding(
            f"Could not parse line {first.line}: {first.message}{more}; kernel facts from these lines may be "
            f"missing.", file=cf.path, line=first.line, column=first.column,
            evidence={"lines": lines[:20], "errors": len(cf.syntax_errors)}, confidence="medium")
    for note in cf.notes:
        yield spec.finding(f"CUDA file not analysed: {note}.", file=cf.path, line=1,
                           evidence={"note": note}, confidence="high")


@CHECKS.register("CUDA101", "CUDA102")
def cuda101_102_races(cf: CudaFile, target: Target) -> Iterator[Finding]:
    raw_spec, war_spec = get("CUDA101"), get("CUDA102")
    for k in _kernels(cf):
        raw_lines: set[tuple[int, str]] = set()
        war: list = []
        seen: set[tuple[str, int, str]] = set()
        for race in find_races(k):
            key = (race.kind, race.second.line, race.second.array)
            if key in seen:
                continue
            seen.add(key)
            a, b = race.first, race.second
            where = f" in the next iteration of the loop at line {race.via_loop.line}" if race.via_loop else ""
            ev = {"kernel": k.name, "array": a.array, "first_line": a.line, "first_index": a.index,
                  "second_line": b.line, "second_index": b.index,
                  "loop_line": race.via_loop.line if race.via_loop else None}
            if race.kind == "raw":
                raw_lines.add((b.line, b.array))
                yield raw_spec.finding(
                    f"`{b.array}{b.index}` reads shared memory that other threads write at line {a.line} "
                    f"(`{a.array}{a.index}`){where} with no `__syncthreads()` in between, so it can read the "
                    f"element before it is written.",
                    file=cf.path, line=b.line, column=b.column, evidence=ev,
                    related=[{"file": cf.path, "line": a.line, "message": "shared-memory write"}])
            else:
                war.append((race, ev, where))
        for race, ev, where in war:
            a, b = race.first, race.second
            if (b.line, b.array) in raw_lines:
                continue
            yield war_spec.finding(
                f"`{b.array}{b.index}` overwrites shared memory that other threads read at line {a.line} "
                f"(`{a.array}{a.index}`){where} with no `__syncthreads()` after that read, so a fast thread "
                f"can replace the element before a slow one has used it.",
                file=cf.path, line=b.line, column=b.column, evidence=ev,
                related=[{"file": cf.path, "line": a.line, "message": "shared-memory read"}])


@CHECKS.register("CUDA103")
def cuda103_float_atomics(cf: CudaFile, target: Target) -> Iterator[Finding]:
    spec = get("CUDA103")
    for k in _kernels(cf):
        for at in k.atomics:
            dtype = canonical_dtype(at.dtype)
            if at.op not in ("add", "sub") or dtype not in FLOAT_DTYPES:
                continue
            yield spec.finding(
                f"atomic {at.op} on {at.dtype} `{at.target}` in `{k.name}`: the order in which threads add "
                f"changes from run to run, so the CUDA result is not bitwise reproducible and the port must "
                f"be compared with a tolerance.",
                file=cf.path, line=at.line, column=_col(cf, at.line, "tomic"),
                evidence={"kernel": k.name, "op": at.op, "dtype": at.dtype, "target": at.target})


@CHECKS.register("CUDA104")
def cuda104_fast_math(cf: CudaFile, target: Target) -> Iterator[Finding]:
    spec = get("CUDA104")
    for k in _kernels(cf):
        seen = set()
        for name, line in k.fast_math:
            approx, note = FAST_MATH.get(name, (".approx" in name, "PTX approximate instruction"))
            if not approx or (name, line) in seen:
                continue
            seen.add((name, line))
            token = name.split(".")[0]
            yield spec.finding(
                f"`{name}` in `{k.name}` is an approximation ({note}); the port's ScalarE function uses a "
                f"different approximation, so expect element differences at this level rather than bitwise "
                f"equality.",
                file=cf.path, line=line, column=_col(cf, line, token),
                evidence={"kernel": k.name, "intrinsic": name, "error": note})


@CHECKS.register("CUDA105")
def cuda105_low_precision_accumulator(cf: CudaFile, target: Target) -> Iterator[Finding]:
    spec = get("CUDA105")
    for k in _kernels(cf):
        lines = set()
        for acc in k.accumulators:
            dtype = canonical_dtype(acc.dtype)
            if dtype in LOW_PRECISION_DTYPES:
                lines.add(acc.line)
                yield spec.finding(
                    f"`{acc.name}` ({acc.dtype}) accumulates inside a loop in `{k.name}`: every add rounds "
                    f"to {dtype}'s {'8' if dtype == 'bfloat16' else '11'}-bit significand, so long sums "
                    f"lose the small terms.",
                    file=cf.path, line=acc.line, column=_col(cf, acc.line, acc.name),
                    evidence={"kernel": k.name, "variable": acc.name, "dtype": acc.dtype})
        for tc in k.tensor_core:
            acc_dtype = tc.dtypes[2] if len(tc.dtypes) > 2 else None
            if acc_dtype in LOW_PRECISION_DTYPES and tc.line not in lines:
                lines.add(tc.line)
                yield spec.finding(
                    f"Tensor-core {tc.api} in `{k.name}` accumulates in {acc_dtype} (`{tc.op}`); the port "
                    f"should accumulate in fp32 PSUM and will differ from this kernel.",
                    file=cf.path, line=tc.line, column=_col(cf, tc.line, tc.op.split(".")[0]),
                    evidence={"kernel": k.name, "api": tc.api, "dtypes": list(tc.dtypes)})


@CHECKS.register("CUDA106")
def cuda106_unguarded_store(cf: CudaFile, target: Target) -> Iterator[Finding]:
    spec = get("CUDA106")
    for k in _kernels(cf):
        if k.qualifier != "global":
            continue  # a __device__ helper's pointer may be __shared__ scratch (block_sum(v, red)); its callers are judged
        seen = set()
        for st in k.global_stores:
            if not st.thread_indexed or st.guarded or (st.line, st.target) in seen:
                continue
            seen.add((st.line, st.target))
            yield spec.finding(
                f"Store to `{st.target}{st.index}` in `{k.name}` is indexed by the thread index but no "
                f"bounds check covers it; with sizes that are not a multiple of the block, threads past the "
                f"end write out of bounds (a port that floors trip counts drops the same tail).",
                file=cf.path, line=st.line, column=st.column,
                evidence={"kernel": k.name, "target": st.target, "index": st.index,
                          "bounds_guards": [g.line for g in k.bounds_guards]})


def run_cuda_rules(cuda_file: CudaFile, target: Target) -> list[Finding]:
    """All CUDA rules on one parsed file; one rule's crash never loses the others' findings."""

    def crashed(check: Check, exc: Exception) -> Finding:
        return get(check.rules[0]).finding(
            crash_message(check, exc), severity=Severity.INFO, file=cuda_file.path, confidence="low",
            evidence={"internal_error": f"{type(exc).__name__}: {exc}", "check": check.name})

    return CHECKS.run(cuda_file, target, on_crash=crashed)
