"""Repairs proven by the simulator: candidate edits re-run on every size, in the sandboxed child.

The candidates of the top suspects (mutate.py) are tried in rank order. Each candidate's kernel runs on the
failing sizes first (smallest first: most candidates fail there at once), then on every other size of the spec
(the distinct-dims size included); it is proven when every size runs and matches the reference within the
spec's tolerance. Runs go to the sandboxed child in batches (a killed batch loses only its own candidates) under
a time budget; results are cached by the candidate's source and the sizes, so a second review re-runs nothing.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import signal
import time
from contextlib import contextmanager
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .mutate import Edit

BATCH = (8, 32)  # candidates in the first child call, then in each later one (the child stops at its deadline)
# The first MIN_CANDIDATES always run, past the budget if the machine is slow (up to HARD_FACTOR x the budget), so a
# review names the same proven fix on a loaded machine as on an idle one: every proof of the diagnosis corpus came
# within the first 42 candidates (docs/diagnosis.md). Only candidates beyond them depend on the machine's speed.
MIN_CANDIDATES = 48
HARD_FACTOR = 5.0
_CACHE: dict[str, dict[str, Any]] = {}  # sha of (source, sizes) -> the child's verdict


@dataclass
class Trial:
    edit: Edit
    passed: bool
    failed_size: str | None = None
    status: str = "ok"  # of the first run that failed
    sizes: list[str] = field(default_factory=list)  # sizes that passed
    cached: bool = False


@dataclass
class Proof:
    trials: list[Trial] = field(default_factory=list)
    seconds: float = 0.0
    budget_s: float = 0.0
    exhausted: bool = False  # the budget ended before every candidate ran

    @property
    def proven(self) -> list[Trial]:
        return [t for t in self.trials if t.passed]


def apply(source: str, edit: Edit) -> str:
    lines = source.splitlines(keepends=True)
    end = "\n" if lines[edit.line - 1].endswith("\n") else ""
    lines[edit.line - 1] = edit.new + end
    return "".join(lines)


def unified_diff(source: str, edit: Edit, path: str) -> str:
    new = apply(source, edit)
    return "".join(difflib.unified_diff(source.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}", n=1))


def child_try(runner: str, name: str, kernel: str | None, sources: list[str], jobs: list[dict],
              options: dict[str, Any], rtol: float, atol: float, seconds: float) -> list[dict[str, Any] | None]:
    """Executed in the child: each source runs size by size until one fails; one verdict per source (None for
    the sources left when `seconds` ran out)."""
    # deferred: this runs in the sandboxed child, which imports only what the runs need
    import importlib

    from ..api.hardware import get_target

    mod, fn = runner.split(":")
    run_kernel = getattr(importlib.import_module(mod), fn)
    opts = dict(options, target=get_target(options["target"]))
    out: list[dict[str, Any] | None] = []
    end = time.perf_counter() + seconds
    for i, src in enumerate(sources):
        if time.perf_counter() > end:
            out.append(None)
            continue
        path = os.path.abspath(os.path.join(f"cand{i}", name))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(src)
        verdict: dict[str, Any] = {"passed": True, "sizes": []}
        for job in jobs:
            try:
                with _time_limit(min(job.get("limit_s", 5.0), max(end - time.perf_counter(), 0.05))):
                    res = run_kernel(path, kernel, job["args"], None, **opts)
                status = res.status
                ok = status == "ok" and _matches(res.outputs, job["ref"], rtol, atol)
                # an edit that passes by a violation the simulator tolerates (an out-of-bounds access) is no repair
                new = sorted({f.rule for f in res.findings if f.severity.value == "error"} - set(job["allowed"]))
                if ok and new:
                    ok, status = False, f"new simulator error {', '.join(new)}"
            except _Slow:
                status, ok = "too slow", False
            except Exception as exc:  # a candidate that breaks the runner fails, nothing more
                status, ok = f"error: {type(exc).__name__}", False
            if not ok:
                verdict = {"passed": False, "failed_size": job["size"], "status": status, "sizes": verdict["sizes"]}
                break
            verdict["sizes"].append(job["size"])
        out.append(verdict)
    return out


class _Slow(Exception):
    """A candidate run past its time limit (an edit that multiplied a trip count)."""


@contextmanager
def _time_limit(seconds: float):
    """Interrupt the run after `seconds` (SIGALRM; the child is single-threaded and the simulator is Python)."""
    def stop(signum, frame):
        raise _Slow(f"over {seconds:.2f} s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _matches(outputs: list, refs: list, rtol: float, atol: float) -> bool:
    if len(outputs) != len(refs):
        return False
    for a, e in zip(outputs, refs):
        a, e = np.asarray(a).astype(np.float64), np.asarray(e).astype(np.float64)
        if a.shape != e.shape:
            return False
        with np.errstate(invalid="ignore", over="ignore"):
            ok = (np.abs(a - e) <= atol + rtol * np.abs(e)) | (np.isnan(a) & np.isnan(e))
        if not ok.all():
            return False
    return True


def _key(source: str, jobs: list[dict]) -> str:
    h = hashlib.sha256(source.encode())
    for j in jobs:
        h.update(j["size"].encode())
        for a in j["args"]:
            if isinstance(a, np.ndarray):
                h.update(str(a.shape).encode() + str(a.dtype).encode())
                h.update(np.ascontiguousarray(a).view(np.uint8)[:4096].tobytes())
    return h.hexdigest()


def prove(source: str, kernel_file: str, kernel: str | None, edits: list[Edit], jobs: list[dict], *,
          runner: str, options: dict[str, Any], rtol: float, atol: float, budget_s: float, memory_mb: int,
          stop_after: int = 1, progress: Callable[[str], None] | None = None) -> Proof:
    """Try `edits` in order until `stop_after` are proven or the budget ends. `jobs`: per size, in run order,
    {"size", "args", "ref"}."""
    from ..toolchain.sandbox import blas_env, run_in_child  # deferred: only a failing size needs the child

    t0 = time.perf_counter()
    proof = Proof(budget_s=budget_s)
    pending = list(edits)
    name = os.path.basename(kernel_file)
    while pending and len(proof.proven) < stop_after:
        owed = MIN_CANDIDATES - len(proof.trials)  # the floor is kept whatever the clock says, within the hard cap
        left = (budget_s * HARD_FACTOR if owed > 0 else budget_s) - (time.perf_counter() - t0)
        if left <= 0 or budget_s <= 0:
            proof.exhausted = True
            break
        size = BATCH[0] if not proof.trials else BATCH[1]
        if owed > 0:
            size = min(size, owed)
        batch, pending = pending[:size], pending[size:]
        sources = [apply(source, e) for e in batch]
        keys = [_key(s, jobs) for s in sources]
        todo = [i for i, k in enumerate(keys) if k not in _CACHE]
        if todo:
            if progress:
                progress(f"re-running {len(todo)} candidate edit(s) on {len(jobs)} size(s)")
            got = run_in_child("nki_assist.diagnose.repair:child_try",
                               {"runner": runner, "name": name, "kernel": kernel,
                                "sources": [sources[i] for i in todo], "jobs": jobs, "options": options,
                                "rtol": rtol, "atol": atol, "seconds": 0.7 * left},
                               timeout_s=left + 2.0, memory_mb=memory_mb, env=blas_env(),
                               preload=(runner.split(":")[0],))
            if got.status == "ok" and isinstance(got.value, list) and len(got.value) == len(todo):
                for i, v in zip(todo, got.value):
                    if isinstance(v, dict):
                        _CACHE[keys[i]] = v
                    else:
                        proof.exhausted = True
            elif got.status == "timeout":
                proof.exhausted = True
        for i, (e, k) in enumerate(zip(batch, keys)):
            v = _CACHE.get(k)
            if v is None:
                continue
            proof.trials.append(Trial(e, bool(v.get("passed")), v.get("failed_size"), str(v.get("status", "ok")),
                                      list(v.get("sizes") or []), cached=i not in todo))
            if len(proof.proven) >= stop_after:
                break
    proof.seconds = time.perf_counter() - t0
    return proof
