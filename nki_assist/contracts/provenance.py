"""Where a run's values came from (the `provenance` of a RunResult): plain, picklable data.

- `StoreRecord`: one execution of a store into a kernel output (kernel line, loop-variable values, the
  region written). The records of an output, in order, say which statement last wrote each element.
- `Fault`: an instruction whose result held NaN/Inf (or a value beyond its dtype's finite range) that no
  operand explains: the first fault of a chain, like compute-sanitizer's first-fault report. Later
  instructions that merely carry those values on point back to it.
- `Overlap`: a store that wrote output elements an earlier store had written, before anything read
  them (with the count of elements whose value changed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence


def iteration_text(iteration: Sequence[tuple[str, int]]) -> str:
    """`n=3, k=0` (empty when the statement is outside every loop)."""
    return ", ".join(f"{k}={v}" for k, v in iteration)


@dataclass(slots=True)
class StoreRecord:
    line: int | None
    iteration: tuple[tuple[str, int], ...]  # enclosing loop variables (outermost first); ("pid", p) in a grid
    box: tuple[tuple[int, int], ...]  # region written, storage coordinates: (start, stop) per dim
    step: tuple[int, ...]  # element step per dim (1 for a dense slice)
    exact: bool = True  # False: masked or gathered, `box` only bounds what was written
    fault: int | None = None  # index into Provenance.faults when the stored values were non-finite

    def contains(self, index: Sequence[int]) -> bool:
        for i, (a, b), s in zip(index, self.box, self.step):
            if not a <= i < b or (s > 1 and (i - a) % s):
                return False
        return True

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "iteration": dict(self.iteration), "box": [list(b) for b in self.box],
                "fault": self.fault}


@dataclass(slots=True)
class Overlap:
    line: int | None  # the store that overwrote
    iteration: tuple[tuple[str, int], ...]
    prev_line: int | None  # the store whose values were replaced
    prev_iteration: tuple[tuple[str, int], ...]
    elements: int  # elements written again before anything read them
    differing: int  # ... of which the new value differs from the old one
    index: tuple[int, ...]  # the first differing element (the first rewritten one when all are equal)
    same_region: bool  # both stores wrote exactly the same region (a store repeated by a loop around it)
    prev_constant: bool  # the replaced values were all equal (an initialisation, e.g. zeros)


@dataclass(slots=True)
class Fault:
    line: int | None
    op: str
    iteration: tuple[tuple[str, int], ...]
    kind: str  # overflow (finite result beyond the dtype's range) | nonfinite (NaN/Inf computed) | input
    dtype: str  # destination dtype
    dtype_max: float | None  # its largest finite value
    nan: int
    inf: int
    out_of_range: int  # finite fp32 results whose magnitude exceeds dtype_max
    max_abs: float | None  # largest finite |fp32 result| (before rounding to dtype)
    saturated: bool = False  # an integer destination clamped the values instead
    occurrences: int = 1  # executions of this line that produced a new fault (e.g. loop iterations)

    def describe(self) -> str:
        where = f"line {self.line}" + (f" ({iteration_text(self.iteration)})" if self.iteration else "")
        if self.kind == "overflow":
            verb = "saturates" if self.saturated else "overflows"
            return (f"`{self.op}` at {where} {verb} {self.dtype}: {self.out_of_range} value(s) up to "
                    f"{self.max_abs:.4g} exceed its largest finite value {self.dtype_max:g}")
        counts = " and ".join(f"{n} {what}" for n, what in ((self.nan, "NaN"), (self.inf, "Inf")) if n)
        if self.kind == "input":
            return f"`{self.op}` at {where} loads {counts} from a kernel input"
        return f"`{self.op}` at {where} computes {counts} from finite operands"

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "op": self.op, "iteration": dict(self.iteration), "kind": self.kind,
                "dtype": self.dtype, "dtype_max": self.dtype_max, "nan": self.nan, "inf": self.inf,
                "out_of_range": self.out_of_range, "max_abs": self.max_abs, "saturated": self.saturated,
                "occurrences": self.occurrences}


@dataclass(slots=True)
class OutputProvenance:
    name: str | None
    shape: tuple[int, ...]
    records: list[StoreRecord] = field(default_factory=list)
    overlaps: list[Overlap] = field(default_factory=list)
    truncated: bool = False  # too many stores to record them all

    def writer_of(self, index: Sequence[int]) -> StoreRecord | None:
        """The store that last wrote element `index` (None: never written, or not recorded)."""
        for r in reversed(self.records):
            if r.contains(index):
                return r
        return None


@dataclass(slots=True)
class Provenance:
    outputs: list[OutputProvenance] = field(default_factory=list)  # the kernel's outputs, in return order
    faults: list[Fault] = field(default_factory=list)

    def fault_of(self, record: StoreRecord | None) -> Fault | None:
        if record is None or record.fault is None or record.fault >= len(self.faults):
            return None
        return self.faults[record.fault]
