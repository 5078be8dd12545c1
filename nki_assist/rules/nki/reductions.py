"""Reductions the engines cannot execute: a reduction over the partition axis (NKI210)."""

from __future__ import annotations

import re

from ...api.hardware import Target
from ...findings import Severity
from ...parse.nki_model import NkiFile
from ..registry import RuleSpec
from .common import check, emit, shape_str

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI210", "partition-axis-reduction", "unsupported-construct", Severity.ERROR,
             "A Vector Engine reduction (nl.sum/max/min/mean/..., nisa.tensor_reduce) over axis 0, the partition "
             "axis: the engines reduce along free axes only, so the kernel does not compile.",
             fix="Contract the partition axis on the Tensor Engine: matmul with a ones vector into PSUM, or "
                 "transpose first and reduce along the free axis.",
             doc="""\
## What it finds
A reduction call whose `axis` (keyword or positional) is the literal `0`, or a tuple/list containing
`0`, on an on-chip tile that has more than one partition: `nl.sum`, `nl.max`, `nl.min`, `nl.mean`,
`nl.prod`, `nl.all`, `nl.any`, `nl.var`, `nisa.tensor_reduce`. The simulator reports the same
construct at run time as SIM119.

## Why it matters on Trainium
The Vector Engine has one lane per partition and reduces along the free axes of each lane; it cannot
combine lanes (`nki.isa.tensor_reduce`: free axes only, never the partition axis). The compiler
rejects the call: this is a construct the hardware cannot execute, not a slow path. CUDA code that
sums a column with a block-wide tree has no one-instruction equivalent on a NeuronCore.

## Example
```python
t = nl.load(x[0:128, 0:512])
col = nl.sum(t, axis=0, keepdims=True)       # sums across the 128 partitions
```

## Fix
Use the Tensor Engine, which contracts over the partition axis natively:
`nl.matmul(ones, t, transpose_x=True)` with `ones = nl.full((128, 1), 1.0, dtype=nl.float32)` gives
the [1, 512] column sums in fp32 PSUM. For max/min, transpose 128x128 blocks (`nisa.nc_transpose`) and
reduce along the free axis.
"""),
]

# api -> index of `axis` among positional arguments (dst-style calls shift it by one)
_AXIS_POS = {"nl.sum": 1, "nl.max": 1, "nl.min": 1, "nl.mean": 1, "nl.prod": 1, "nl.all": 1, "nl.any": 1,
             "nl.var": 1, "nisa.tensor_reduce": 2}
_ZERO = re.compile(r"^[\(\[]?\s*0\s*(,|[\)\]]|$)|[\(\[,]\s*0\s*(,|[\)\]])")
# the ALU op each reduction applies; a mean is a sum scaled afterwards
_API_OP = {"nl.sum": "add", "nl.mean": "add", "nl.max": "maximum", "nl.min": "minimum", "nl.prod": "multiply",
           "nl.all": "logical_and", "nl.any": "logical_or", "nl.var": "var"}
_OP_ALIAS = {"max": "maximum", "min": "minimum", "sum": "add", "mean": "add", "amax": "maximum", "amin": "minimum"}


def partition_reduce_advice(op: str | None) -> tuple[str, str]:
    """(the message's closing clause, the fix) for a reduction over partitions with this ALU op: only a sum
    has the ones-vector matmul form; a max or min needs GpSimd's partition reduce or a transpose."""
    op = _OP_ALIAS.get(op or "", op or "")
    if op == "add":
        return ("contract the partitions on the Tensor Engine with a ones vector (or transpose first)",
                "Sum across partitions on the Tensor Engine: a [P, 1] ones tile as the stationary operand against "
                "the tile gives the [1, N] sums in PSUM, and successive row tiles accumulate into the same PSUM "
                "tile; or transpose the tile first and reduce along the free axis.")
    if op:
        return ("a ones-vector matmul only sums, so transpose first (or use GpSimd's `tensor_partition_reduce`)",
                f"A ones-vector matmul only sums: transpose the tile on the Tensor Engine (`nisa.nc_transpose`, "
                f"128 x 128 blocks) so the reduced axis becomes a free axis and reduce along it, or use "
                f"`nisa.tensor_partition_reduce` (op {op}, GpSimd), the slower one-instruction form.")
    return ("matmul with a ones vector for a sum, or transpose first",
            "Contract the partition axis on the Tensor Engine: matmul with a ones vector into PSUM for a sum, or "
            "transpose first and reduce along the free axis.")


def _op_of(c) -> str | None:
    if c.api in _API_OP:
        return _API_OP[c.api]
    text = c.kwargs.get("op")
    if text is None:
        pos = 1 if c.dst_style else 0
        text = c.args[pos] if len(c.args) > pos else None
    if not text:
        return None
    name = text.strip().rsplit(".", 1)[-1]
    return _OP_ALIAS.get(name, name) if re.fullmatch(r"[A-Za-z_]\w*", name) else None


def _axis_text(c) -> str | None:
    if "axis" in c.kwargs:
        return c.kwargs["axis"]
    pos = _AXIS_POS[c.api] + (1 if c.dst_style and c.api.startswith("nisa.") else 0)
    return c.args[pos] if len(c.args) > pos else None


@check("NKI210")
def partition_axis_reduction(nf: NkiFile, t: Target):
    for k in nf.kernels:
        for c in k.calls:
            if c.api not in _AXIS_POS:
                continue
            axis = _axis_text(c)
            if axis is None or not _ZERO.search(axis.strip()):
                continue
            data = c.operand("data", "x")
            if data is not None and (data.buffer in ("hbm", "shared_hbm", "private_hbm") or data.partitions == 1):
                continue  # an HBM tensor is not a tile; one partition has nothing to combine
            if data is not None and data.shape is not None and len(data.shape) < 2:
                continue
            shape = list(data.shape) if data is not None and data.shape is not None else None
            op = _op_of(c)
            yield emit("NKI210", nf, c.line, c.col, c.end_line, c.end_col,
                       f"`{c.api}` reduces over axis {axis.strip()} (the partition axis)"
                       + (f" of a {shape_str(data.shape)} tile" if shape else "")
                       + ": Vector Engine reductions run along free axes only, so this does not compile.",
                       {"api": c.api, "axis": axis.strip(), "shape": shape, "op": op},
                       fix=partition_reduce_advice(op)[1])
