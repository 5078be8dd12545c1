"""The launch record: one JSON line per kernel launch, appended by every process of the run to one file.

A line is written with a single `write` on a file opened with O_APPEND, so the records of concurrent
processes (pytest-xdist workers, subprocesses) never interleave. A line that cannot be parsed (a process
killed mid-write) is skipped and counted.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from . import RECORD_ENV


@dataclass
class ArgInfo:
    name: str
    kind: str  # array | scalar | other
    shape: list[int] | None = None
    dtype: str | None = None
    value: Any = None  # scalars (JSON-safe), else None
    expr: str | None = None  # the call site's source for this argument, when it could be read
    keyword: bool = False  # passed by name


@dataclass
class Launch:
    kernel: str  # qualified function name
    file: str  # absolute path of the kernel's file
    def_line: int
    api: str  # jit | baremetal | benchmark | simulate_kernel | simulate | profile | trace
    call_file: str | None
    call_line: int | None
    args: list[ArgInfo]
    grid: list[int] | None
    status: str  # ok | kernel-error | tool-limit | out-of-memory
    error: str | None = None
    error_line: int | None = None
    findings: list[dict] = field(default_factory=list)  # Finding.model_dump(mode="json")
    outputs: list[dict] = field(default_factory=list)  # shape, dtype, min, max, nonfinite
    cost: dict | None = None  # the cost model's summary
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    pid: int = 0
    comparisons: list[dict] = field(default_factory=list)  # filled by the parent from comparison records

    def signature(self) -> tuple:
        """The shape family: kernel plus every argument's kind, dtype and shape (scalars by value)."""
        return (self.file, self.kernel, tuple((a.name, a.kind, a.dtype, tuple(a.shape or ()),
                                               json.dumps(a.value, default=str)) for a in self.args))


def append(entry: dict, path: str | None = None) -> None:
    path = path or os.environ.get(RECORD_ENV)
    if not path:
        return
    data = (json.dumps(entry, default=str) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def write_launch(launch: Launch) -> None:
    append({"type": "launch", **asdict(launch)})


def read(path: str) -> tuple[list[Launch], list[dict], int]:
    """(launches, other records such as comparisons, unreadable lines)."""
    launches: list[Launch] = []
    others: list[dict] = []
    bad = 0
    try:
        fh = open(path, encoding="utf-8")
    except FileNotFoundError:
        return launches, others, 0
    with fh:
        for line in fh:
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                if raw.get("type") == "launch":
                    del raw["type"]
                    raw["args"] = [ArgInfo(**a) for a in raw.get("args", [])]
                    launches.append(Launch(**raw))
                else:
                    others.append(raw)
            except (ValueError, TypeError):
                bad += 1
    return launches, others, bad
