"""Memory guards in the parent, applied before anything is allocated: sizes and golden npz files.

A size whose arguments (as the float64 reference receives them) need more than half of the
memory limit is skipped with a TC109 finding naming the size, the bytes and the limit: the child
has to hold those arguments plus the outputs and its own scratch within the limit, so running it
would only fail later, after the parent had allocated gigabytes. Golden npz files are read member
by member after checking each header: no pickled object arrays, no declared shape larger than the
limit (a 100-byte file can declare a terabyte array): see `npz.py`.
"""

from __future__ import annotations

import math

from ..findings import Finding
from ..rules import registry
from .errors import human_bytes
from .spec import PortSpec, SizeSpec

F64 = 8


def size_need_bytes(spec: PortSpec, size: SizeSpec) -> int:
    """Bytes of a size's array arguments in float64 (exact integer arithmetic: no overflow)."""
    return sum(F64 * math.prod(spec.shape_of(n, size)) for n, i in spec.inputs.items() if not i.is_value)


def budget_bytes(memory_mb: int) -> int:
    """What one size's float64 arguments may take: half the child's memory limit."""
    return int(memory_mb) * 2**20 // 2


def size_guard(spec: PortSpec, size: SizeSpec, memory_mb: int) -> Finding | None:
    """TC109 when the size cannot fit; None when it may run."""
    need, budget = size_need_bytes(spec, size), budget_bytes(memory_mb)
    if need <= budget:
        return None
    return registry.get("TC109").finding(
        f"Size {size.name!r} needs {human_bytes(need)} for its inputs (float64, as the reference receives them); "
        f"the limit is {human_bytes(budget)} (half of --memory-mb {memory_mb}, the rest is for outputs and "
        f"scratch). The size was skipped, so it was not checked.",
        file=str(spec.path), evidence={"size": size.name, "bytes": need, "budget_bytes": budget,
                                       "memory_limit_mb": memory_mb})


