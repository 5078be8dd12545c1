"""State of one simulation run: options, findings, trace, SBUF/PSUM ledger, loop context, source lines.

The shim functions read the current context through `current()` (a ContextVar); `runner.run_kernel`
activates it for the duration of a run and resets it afterwards.
"""

from __future__ import annotations

import gc
import itertools
import math
import re
import sys
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

from ..api.hardware import Target
from ..contracts.runs import Operand, ResourcePeaks, TraceEntry
from ..findings import Finding
from ..rules.registry import get as get_rule
from .dtypes import Rounder
from .errors import UnsupportedAPI  # noqa: F401 (part of this module's interface)

# The running kernel's context. A ContextVar, not a module global, so two runs in one process (threads,
# a nested run from a test) each see their own.
_CURRENT: ContextVar["SimContext | None"] = ContextVar("nki_assist_sim_context", default=None)


def current() -> "SimContext | None":
    """The context of the kernel being simulated (None outside a run)."""
    return _CURRENT.get()


def activate(ctx: "SimContext | None") -> Token:
    """Make `ctx` current; pass the token to `deactivate` when the run ends."""
    return _CURRENT.set(ctx)


def deactivate(token: Token) -> None:
    _CURRENT.reset(token)
_LHS = re.compile(r"\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")


class StrictStop(BaseException):
    """Raised in strict mode at the first violation (a BaseException: kernel `except Exception` cannot
    swallow it)."""

    def __init__(self, finding: Finding):
        super().__init__(finding.message)
        self.finding = finding


@dataclass
class LoopFrame:
    kind: str  # affine | sequential | static | range
    uid: int
    start_seq: int  # allocation counter when the loop started (older storages live outside it)
    n: int
    iter: int = -1
    scope: list = field(default_factory=list)  # storages allocated in the current iteration
    value: object = None  # the loop variable's current value (nl.loop_reduce finds its loops by it)
    line: int | None = None  # kernel line of the loop header
    owner: int = 0  # id of the Python frame that runs the loop (block_store drops blocks by it)


class SimContext:
    def __init__(self, *, target: Target, kernel_file: str, display_file: str, legacy: bool,
                 precise: bool, stochastic: bool, seed: int, lenient: bool, trace: bool, max_trace: int,
                 static_depth: dict[int, int]):
        self.target = target
        self.kfile = kernel_file  # co_filename of the kernel module
        self.display_file = display_file  # path reported in findings
        self.legacy = legacy
        self.lenient = lenient
        self.round = Rounder(precise, stochastic, seed)
        self.precise = precise
        self.tracing = trace
        self.max_trace = max_trace
        self.static_depth = static_depth
        self.trace: list[TraceEntry] = []
        self.n_instr = 0
        self.findings: list[Finding] = []
        self._seen: dict[tuple[str, int | None], Finding] = {}
        self.counts: dict[tuple[str, int | None], int] = {}
        self.notes: list[str] = []
        # ledger (bytes per partition)
        self.alloc_seq = itertools.count(1)
        self.sbuf_live = 0
        self.psum_live = 0
        self.psum_banks_live = 0
        self.sbuf_intervals = None  # liveness.Intervals: each SBUF tile from allocation to last use
        self.peaks = ResourcePeaks()
        self.pending: list = []  # op results not yet counted (see commit_pending)
        # Set to a list while an elementwise op reads its operands: never-written positions are collected
        # and handed to the result (a masked-off tail stays "unwritten") instead of being reported.
        self.poison: list | None = None
        # loops
        self.loops: list[LoopFrame] = []
        self.loop_uid = itertools.count(1)
        self.affine_path: tuple = ()
        self.tag = 0
        self.aff_start = 0  # start_seq of the innermost affine loop (storages older than it are tracked)
        self._tag_of: dict[tuple, int] = {(): 0}
        self.paths: list[tuple] = [()]
        # grid
        self.grid: tuple[int, ...] = ()
        self.pid: tuple[int, ...] = ()
        self.shared_allocs: list = []
        self.shared_cursor = 0
        self.outputs_created: list = []  # shared_hbm storages created by the kernel
        self.last_chain: tuple = ()  # kernel-file lines of the current call stack (allocation site)
        self.source_lines: list[str] = []
        self._lhs: dict[int, str | None] = {}
        self.acc_counts: dict = {}  # (storage id, region) -> low-precision accumulations seen
        self.stop_code = None  # code object of the runner frame: the stack walk ends there
        self.last_frame = None  # innermost kernel frame of the current call (cleared after the run)
        self.sites: dict = {}
        self.operands: dict = {}  # (shape, dtype, buffer, partitions, name) -> shared trace Operand
        self.alloc_log: list = []  # (seq, line, frame id, weakref) of on-chip tiles, in allocation order
        self.loop_body: dict[int, tuple[int, int]] = {}  # line -> innermost enclosing loop body lines
        self.loop_vars: dict[int, tuple] = {}  # line -> ((loop variable, header line), ...) outermost first
        self.sanitize = False  # NaN/Inf sanitizer on (a second run; see provenance.py)
        self.faults: list = []  # provenance.Fault, in order of appearance (sanitizer runs only)
        self.unwritten_read = False  # the current instruction read never-written elements (sanitizer)
        self.ranges: dict = {}  # (line, function) -> ValueRange of its arguments (value_ranges.py)
        self.loop_trips: dict[int, int] = {}  # loop header line -> largest trip count it ran
        self.block_drops: dict = {}  # loop header line -> block tiles whose blocks die per iteration (block_store)
        self.block_host_bytes = 0  # bytes of block-tile parts held now (block_store)

    # -- source location ---------------------------------------------------------------------------
    def site(self) -> tuple[int | None, int]:
        """Kernel source line of the current call and its loop depth (static nesting over all frames)."""
        f = sys._getframe(2)
        kfile = self.kfile
        line = None
        depth = 0
        sd = self.static_depth
        chain = []
        stop = self.stop_code
        while f is not None and f.f_code is not stop:
            if f.f_code.co_filename == kfile:
                ln = f.f_lineno
                if line is None:
                    line = ln
                    self.last_frame = f
                chain.append(ln)
                depth += sd.get(ln, 0)
            f = f.f_back
        self.last_chain = tuple(chain)
        return line, depth

    def lhs_name(self, line: int) -> str | None:
        """`acc` for a source line `acc = nl.zeros(...)`: names tiles in messages."""
        try:
            return self._lhs[line]
        except KeyError:
            pass
        text = self.source_lines[line - 1] if 0 < line <= len(self.source_lines) else ""
        m = _LHS.match(text)
        name = m.group(1) if m else None
        self._lhs[line] = name
        return name

    def line(self) -> int | None:
        return self.site()[0]

    # -- findings ----------------------------------------------------------------------------------
    def report(self, rule: str, line: int | None, message: str, **evidence: Any) -> None:
        """Record a violation once per (rule, line); strict mode stops at the first."""
        key = (rule, line)
        if key in self._seen:
            self.counts[key] += 1
            return
        spec = get_rule(rule)
        severity = evidence.pop("_severity", None)
        fix = evidence.pop("_fix", None) or spec.fix  # a fix written for this occurrence, else the rule's
        f = spec.finding(message, file=self.display_file, line=line, evidence=evidence, source="simulation",
                         severity=severity, fix=fix)
        self._seen[key] = f
        self.counts[key] = 1
        self.findings.append(f)
        if not self.lenient:
            raise StrictStop(f)

    def add_finding(self, f: Finding) -> None:
        """Record a finding built by the caller (its own location, category, related locations), once per
        (rule, line); never stops (used after the run ended)."""
        key = (f.rule, f.line)
        if key in self._seen:
            self.counts[key] += 1
            return
        self._seen[key] = f
        self.counts[key] = 1
        self.findings.append(f)

    def report_safe(self, rule: str, line: int | None, message: str, **evidence: Any) -> None:
        """Like report, but never stops (used after the run ended)."""
        lenient, self.lenient = self.lenient, True
        try:
            self.report(rule, line, message, **evidence)
        finally:
            self.lenient = lenient

    def seen(self, rule: str, line: int | None) -> bool:
        return (rule, line) in self._seen

    def finish_findings(self) -> list[Finding]:
        for key, f in self._seen.items():
            if self.counts[key] > 1:
                f.evidence["occurrences"] = self.counts[key]
        return self.findings

    # -- trace -------------------------------------------------------------------------------------
    def instr(self, engine: str, op: str, line: int | None, depth: int, dst=None, srcs=(), partitions=None,
              free_elems=None, extra=None, **kw) -> None:
        self.n_instr += 1
        if not self.tracing:
            return
        trace = self.trace
        if len(trace) >= self.max_trace:
            if len(trace) == self.max_trace:
                self.notes.append(f"trace truncated at {self.max_trace} instructions")
                trace.append(None)  # marker, removed at the end
            return
        dst_op = None if dst is None else operand(dst)
        src_ops = []
        for s in srcs:
            if s is not None and hasattr(s, "st"):
                src_ops.append(operand(s))
        main = dst_op or (src_ops[0] if src_ops else None)
        if main is not None:
            if partitions is None:
                partitions = main.partitions
            if free_elems is None:
                free_elems = math.prod(main.shape) // (partitions or 1)
        if kw:
            trace.append(TraceEntry(self.n_instr, engine, op, line, self.display_file, dst_op, src_ops,
                                    partitions or 0, free_elems or 0, loop_depth=depth,
                                    extra={} if extra is None else extra, **kw))
        else:  # positional: the common compute instruction (no DMA fields)
            trace.append(TraceEntry(self.n_instr, engine, op, line, self.display_file, dst_op, src_ops,
                                    partitions or 0, free_elems or 0, 0, 0, None, None, None, depth,
                                    {} if extra is None else extra))

    # -- affine loop tags --------------------------------------------------------------------------
    def retag(self) -> None:
        aff = [f for f in self.loops if f.kind == "affine"]
        path = tuple((f.uid, f.iter) for f in aff)
        self.aff_start = aff[-1].start_seq if aff else 0
        self.affine_path = path
        t = self._tag_of.get(path)
        if t is None:
            t = len(self.paths)
            self._tag_of[path] = t
            self.paths.append(path)
        self.tag = t


def operand(t) -> Operand:
    op = t.operand  # cached on the view: an op result is usually the next instruction's source
    if op is None:
        st = t.st
        shape = t.shape
        buffer = st.buffer
        parts = _partitions(t) if buffer in ("sbuf", "psum") else 1
        # equal operands share one (never mutated) object: a loop's tiles all look alike
        key = (shape, st.dt.name, buffer, parts, st.name)
        cache = st.ctx.operands
        op = cache.get(key)
        if op is None:
            op = cache[key] = Operand(shape=shape, dtype=st.dt.name, buffer=buffer, partitions=parts, name=st.name)
        t.operand = op
    return op


def _partitions(t) -> int:
    """Rows on the partition axis: with legacy block dims (`(B, nl.par_dim(128), F)`) the partition axis
    is the storage's `pax`, not the view's first axis."""
    pax = t.st.pax
    if pax and t.fancy is None and pax < len(t.desc):
        e = t.desc[pax]
        return e[2] if type(e) is tuple else 1
    return t.shape[0] if t.shape else 1


@contextmanager
def gc_frozen():
    """Move the objects that exist before the run out of the collector's reach while it runs.

    A run allocates several container objects per instruction (trace entries, operands) that all stay
    alive, so the collector runs often; every full collection also walked the whole pre-existing heap
    (numpy, pydantic, ...), about a fifth of the time of a small-instruction loop. Objects created during
    the run are still collected as usual. Left alone when someone else already froze objects."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
