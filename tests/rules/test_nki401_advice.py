"""Numerics advice fits the code: NKI401 sends a matmul K loop to fp32 PSUM and an elementwise sum to an fp32 tile;
NKI402 names the loop when exp's argument is a running sum."""

from __future__ import annotations

from pathlib import Path

from nki_assist.check import CheckOptions, check_source

GEMM = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def gemm(lhsT, rhs):
    out = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
    for k in nl.sequential_range(8):
        a = nl.load(lhsT[k * 128:(k + 1) * 128, 0:128])
        b = nl.load(rhs[k * 128:(k + 1) * 128, 0:512])
        acc += {value}
    nl.store(out, value=acc)
    return out
"""


def _nki401(tmp_path: Path, value: str):
    return [f for f in check_source("k.py", GEMM.format(value=value), CheckOptions(select=["NKI401"]))
            if f.rule == "NKI401"]


def test_matmul_accumulator_is_told_to_use_psum(tmp_path):
    (f,) = _nki401(tmp_path, "nl.matmul(a, b, transpose_x=True)")
    assert f.line == 12 and f.evidence["matmul"] is True
    assert "accumulates matmul results" in f.message and "(8 significant bits)" in f.message
    assert "buffer=nl.psum" in f.fix and "dtype=nl.float32" in f.fix


def test_elementwise_accumulator_is_told_to_use_an_fp32_tile(tmp_path):
    (f,) = _nki401(tmp_path, "nl.multiply(b, 2.0)")
    assert f.evidence["matmul"] is False
    assert "psum" not in f.fix.lower() and f.fix.startswith("Allocate `acc` as nl.float32")


def test_exp_of_a_running_sum_names_the_loop():
    src = (Path(__file__).resolve().parent.parent / "fixtures" / "rules" / "NKI402" / "pos_new_cumulative.py").read_text()
    (f,) = [x for x in check_source("k.py", src, CheckOptions(select=["NKI402"]))]
    assert f.evidence["cumulative"] is True and f.evidence["loop_line"] == 14
    assert "a running sum over loop `t`" in f.message and "running max" in f.fix
    # the same exp of a fresh load each iteration is the generic warning
    plain = src.replace("nisa.activation(dst=e, op=nl.exp, data=cum)", "nisa.activation(dst=e, op=nl.exp, data=xt)")
    (g,) = check_source("k.py", plain, CheckOptions(select=["NKI402"]))
    assert "cumulative" not in g.evidence
