"""Static rules on idioms AWS's public kernels use (our own small kernels): no false errors."""

from nki_assist.findings import Severity
from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki.run import run_nki_rules

LEGACY = """\
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.compiler as ncc
from neuronxcc.nki.language import par_dim
"""


def rules(src: str, rule: str):
    return [f for f in run_nki_rules(parse_nki(LEGACY + src, "k.py"), get_target("trn2")) if f.rule == rule]


def line(src: str, text: str) -> int:
    return next(i for i, s in enumerate((LEGACY + src).splitlines(), 1) if text in s)


def test_a_trace_time_address_counter_is_not_a_carried_tensor():
    src = """
@nki.jit
def k(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    addr = 0
    for i in nl.affine_range(4):
        t = nl.ndarray((par_dim(128), 64), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=addr))
        addr += 64 * 4
        t[...] = nl.load(x[i * 128:(i + 1) * 128, 0:64])
        nl.store(out, value=t)
    return out
"""
    assert rules(src, "NKI201") == []


def test_accumulating_with_augmented_assignment_is_a_warning_and_psum_matmul_is_clean():
    src = """
@nki.jit
def k(x, w):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((par_dim(128), 512), dtype=nl.float32)
    ps = nl.ndarray((par_dim(128), 512), dtype=nl.float32, buffer=ncc.psum.mod_alloc(base_bank=0))
    run = nl.zeros((par_dim(128), 512), dtype=nl.float32)
    for k in nl.affine_range(4):
        xt = nl.load(x[k * 128:(k + 1) * 128, 0:512])
        wt = nl.load(w[k * 128:(k + 1) * 128, 0:128])
        acc += xt
        ps += nisa.nc_matmul(wt, xt)
        run[...] = nl.add(run, xt)
    nl.store(out, value=acc)
    return out
"""
    got = {f.line: f for f in rules(src, "NKI201")}
    # `acc += xt` in SBUF: associative (order-free) but reported unreliable in SBUF: a warning
    assert got[line(src, "acc += xt")].severity == Severity.WARNING
    assert got[line(src, "acc += xt")].evidence["associative"] is True
    # an explicit read-modify-write is a real carried dependency: still an error
    assert got[line(src, "run[...] = nl.add")].severity == Severity.ERROR
    # `psum += matmul` into a direct PSUM allocation is the documented accumulation
    assert line(src, "ps += nisa.nc_matmul") not in got


def test_helper_parameters_are_tiles_not_hbm_inputs():
    src = """
@nki.jit(mode='trace')
def block(q_tile, k_tile, out_tile):
    out_tile[...] = nisa.nc_matmul(q_tile, k_tile)


@nki.jit
def k(q, k):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    qt = nl.load(q)
    kt = nl.load(k)
    ps = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    block(qt, kt, ps)
    bad = nisa.nc_matmul(q, k)
    nl.store(out, value=nl.copy(ps))
    return out
"""
    got = rules(src, "NKI106")
    # the helper's parameters are whatever tiles its caller passes; the kernel's own HBM inputs still count
    assert {f.line for f in got} == {line(src, "bad = nisa.nc_matmul")}


def test_double_row_matmul_tile_limits_count_one_row_per_partition_pair():
    src = """
@nki.jit
def k(a, b):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    at = nl.ndarray((128, 2, 128), dtype=nl.float8_e4m3)
    bt = nl.ndarray((128, 2, 512), dtype=nl.float8_e4m3)
    at[...] = nl.load(a)
    bt[...] = nl.load(b)
    r = nisa.nc_matmul(at, bt, perf_mode='double_row_gen3')
    nl.store(out, value=nl.copy(r, dtype=nl.float32))
    return out
"""
    assert rules(src, "NKI105") == []
    assert rules(src.replace(", perf_mode='double_row_gen3'", ""), "NKI105")  # without it: 256 > 128


def test_a_bias_row_load_is_advice_and_a_single_element_is_not():
    src = """
@nki.jit
def k(x, b):
    R, C = x.shape
    out = nl.ndarray((R, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    for n in nl.affine_range(4):
        row = nl.load(b[0:1, n * 1024:(n + 1) * 1024], dtype=nl.float32)
        one = nl.load(b[0:1, n:n + 1], dtype=nl.float32)
        nl.store(out[0:1, 0:1024], value=row)
    return out
"""
    got = {f.line: f for f in rules(src, "NKI108")}
    assert got[line(src, "row = nl.load")].severity == Severity.INFO
    assert got[line(src, "row = nl.load")].evidence["row_vector"] is True
    assert got[line(src, "one = nl.load")].severity == Severity.INFO  # reported; no row-vector note
    assert not got[line(src, "one = nl.load")].evidence.get("row_vector")
    assert got[line(src, "one = nl.load")].evidence["bytes_per_partition"] == 4
    # a row the loop walks (one row per iteration) is the row-at-a-time defect, not a broadcast row
    walk = src.replace("b[0:1, n * 1024:(n + 1) * 1024]", "b[n:n + 1, 0:1024]")
    got = {f.line: f for f in rules(walk, "NKI108")}
    assert got[line(walk, "row = nl.load")].severity == Severity.INFO  # static performance: info
    assert got[line(walk, "row = nl.load")].evidence["row_vector"] is False


def test_a_slice_bound_to_a_name_keeps_its_extent():
    src = """
@nki.jit
def k(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    for j in nl.affine_range(4):
        sl = nl.ds(j * 128, 128)
        t = nl.load(x[0:128, sl], dtype=nl.float32)
        nl.store(out[0:128, sl], value=t)
    return out
"""
    got = rules(src, "NKI108")
    assert [f.evidence["bytes_per_partition"] for f in got] == [512, 512]
