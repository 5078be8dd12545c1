"""A reduction over the partition axis gets the fix its op allows (issue 29): only a sum has the ones-vector
matmul form; a max or min is told to use GpSimd's tensor_partition_reduce or a transpose. Static (NKI210) and
run-time (SIM119) findings agree."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nki_assist.check import CheckOptions, check_source
from nki_assist.api.hardware import get_target
from nki_assist.rules.nki.reductions import partition_reduce_advice
from nki_assist.sim import run_kernel

FIX = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.mark.parametrize("op", ["maximum", "minimum", "max"])
def test_max_and_min_are_not_told_to_matmul_with_ones(op):
    clause, fix = partition_reduce_advice(op)
    assert "tensor_partition_reduce" in fix and "transpose" in fix and "only sums" in fix
    assert "ones tile as the stationary" not in fix and "tensor_partition_reduce" in clause


@pytest.mark.parametrize("op", ["add", "sum", "mean"])
def test_sums_are_told_to_matmul_with_ones(op):
    clause, fix = partition_reduce_advice(op)
    assert "[P, 1] ones tile as the stationary operand" in fix and "ones vector" in clause
    assert "tensor_partition_reduce" not in fix


def _nki210(name: str):
    path = FIX / "rules" / "NKI210" / name
    return check_source(str(path), path.read_text(), CheckOptions(select=["NKI210"]))


def test_static_findings_read_the_op_of_each_call():
    """pos_legacy.py: nl.sum (line 10) and nisa.tensor_reduce(nl.maximum, ...) (line 11)."""
    fs = {f.line: f for f in _nki210("pos_legacy.py")}
    assert (fs[10].evidence["op"], fs[11].evidence["op"]) == ("add", "maximum")
    assert fs[10].fix == partition_reduce_advice("add")[1]
    assert fs[11].fix == partition_reduce_advice("maximum")[1]
    new = _nki210("pos_new.py")
    assert [f.evidence["op"] for f in new] == ["maximum"]


def test_run_time_finding_carries_the_same_advice():
    x = np.random.default_rng(5).standard_normal((128, 512)).astype(np.float32)
    (f,) = run_kernel(str(FIX / "sim" / "new_partition_reduce.py"), None, [x], target=get_target("trn2")).findings
    assert f.rule == "SIM119" and f.evidence["op"] == "maximum"
    assert f.fix == partition_reduce_advice("maximum")[1] and "only sums" in f.message
