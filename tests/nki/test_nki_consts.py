"""Constant propagation: tile_size constants, arithmetic, bound-once names, shapes, asserts."""

from __future__ import annotations

from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import kernel_resources, parse_nki, proves_divisible

LEGACY = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"
NEW = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n"


def kernel(body: str, header: str = LEGACY, prelude: str = ""):
    src = header + prelude + "\n@nki.jit\ndef k(a, b):\n" + "".join("    " + ln + "\n" for ln in body.strip().splitlines())
    return parse_nki(src, "k.py").kernels[0]


def test_required_block_dim_sbuf_bytes():
    k = kernel("""
K = 4096
BK = 32
N = 2048
t = nl.ndarray((K // BK, nl.par_dim(BK), N), dtype=nl.bfloat16, buffer=nl.sbuf)
""")
    a = k.allocations[0]
    assert a.bytes_per_partition == 524288
    assert (a.shape, a.partition_dim, a.block_dims, a.partitions) == ((128, 32, 2048), 1, (128,), 32)
    assert kernel_resources(k, get_target("trn2"))["sbuf_peak_bytes_per_partition"] == 524288


def test_tile_size_constants_and_arithmetic():
    k = kernel("""
t1 = nl.ndarray((nl.tile_size.pmax, nl.tile_size.gemm_moving_fmax), dtype=nl.float32, buffer=nl.sbuf)
t2 = nl.ndarray((nl.tile_size.gemm_stationary_fmax, nl.tile_size.psum_fmax), dtype=nl.float32, buffer=nl.psum)
t3 = nl.ndarray((min(200, 128), max(3, 7) * 2 % 5 + 1000 // 3), dtype=nl.float16)
t4 = nl.ndarray((nl.tile_size.psum_bank_fmax // 4, 2 ** 3 - (1 << 2)), dtype=nl.int8)
""")
    shapes = [a.shape for a in k.allocations]
    assert shapes == [(128, 512), (128, 512), (128, 337), (128, 4)]
    assert [a.bytes_per_partition for a in k.allocations] == [2048, 2048, 674, 4]


def test_module_and_kernel_names_bound_once():
    k = kernel("""
TILE = 128
x = nl.ndarray((TILE, WIDTH), dtype=nl.bfloat16)
y = nl.ndarray((TWICE, 64), dtype=nl.bfloat16)
""", prelude="WIDTH = 256\nTWICE = 1\nTWICE = 2\n")
    assert k.allocations[0].shape == (128, 256) and k.allocations[0].bytes_per_partition == 512
    assert k.allocations[1].shape == ("TWICE", 64)  # bound twice at module level: stays a symbol
    assert k.allocations[1].partitions == "TWICE" and k.allocations[1].bytes_per_partition == 128


def test_names_rebound_in_kernel_stay_symbols():
    k = kernel("""
n = 64
t = nl.ndarray((128, n), dtype=nl.float32)
n = 128
""")
    assert k.allocations[0].shape == (128, "n")


def test_shape_unpacking_and_symbolic_shapes():
    k = kernel("""
M, N = a.shape
t = nl.ndarray((M // 2, nl.par_dim(128), N), dtype=nl.float32)
x = nl.load(a[0:128, 0:N])
""")
    t = k.allocations[0]
    assert t.shape == ("M // 2", 128, "N") and t.bytes_per_partition is None
    load = next(c for c in k.calls if c.api == "nl.load")
    assert load.operand("src").shape == (128, "N")


def test_shape_of_known_tile_binds_values():
    k = kernel("""
t = nl.ndarray((128, 384), dtype=nl.float32)
P, F = t.shape
u = nl.ndarray((P, F // 3), dtype=nl.float32)
""")
    assert k.allocations[1].shape == (128, 128)


def test_slice_extents_cancel_symbolic_offsets():
    k = kernel("""
T = 128
for i in nl.affine_range(8):
    x = nl.load(a[i * T:(i + 1) * T, 0:512])
    y = nl.load(b[nl.ds(i * 64, 64), 3, 10:20:2])
""")
    loads = [c for c in k.calls if c.api == "nl.load"]
    assert loads[0].operand("src").shape == (128, 512)
    assert loads[1].operand("src").shape == (64, 5)  # integer index drops the dim, step 2
    x = next(a for a in k.allocations if a.name == "x")
    assert x.implicit and x.loop_depth == 1 and x.loops[0].var == "i"


def test_arange_and_mgrid_indices():
    k = kernel("""
i_p = nl.arange(128)[:, None]
i_f = nl.arange(256)[None, :]
x = nl.load(a[i_p, i_f])
ip, jf = nl.mgrid[0:64, 0:32]
y = nl.load(b[ip, jf])
""")
    loads = [c for c in k.calls if c.api == "nl.load"]
    assert loads[0].operand("src").shape == (128, 256)
    assert loads[1].operand("src").shape == (64, 32)


def test_assert_derived_facts():
    k = kernel("""
M, K = a.shape
assert K % 128 == 0 and M <= 128
assert 0 < M
n = K // 128
""")
    assert k.divisors == {"K": {128}}
    assert k.upper_bounds["M"] == 128
    from nki_assist.parse.consts import Lin
    assert proves_divisible(k, Lin.sym("K"), 64)
    assert proves_divisible(k, Lin.sym("K"), 128)
    assert not proves_divisible(k, Lin.sym("K"), 256)
    assert not proves_divisible(k, Lin.sym("M"), 2)
    assert proves_divisible(k, 1024, 128) and not proves_divisible(k, 1000, 128)


def test_assert_equality_binds_a_symbol():
    k = kernel("""
M, N = a.shape
assert N == 512
t = nl.ndarray((128, N), dtype=nl.float32)
""")
    assert k.allocations[0].shape == (128, 512)


def test_matmul_shapes_resolved_in_both_dialects():
    legacy = kernel("""
x = nl.load(a[0:128, 0:64])
y = nl.load(b[0:128, 0:512])
r = nl.matmul(x, y, transpose_x=True)
s = nl.matmul(y[0:64, 0:128], x)
""")
    m1, m2 = legacy.matmuls
    assert (m1.K, m1.M, m1.N) == (128, 64, 512)
    assert (m2.K, m2.M, m2.N) == (128, 64, 64)
    r = next(al for al in legacy.allocations if al.name == "r")
    assert (r.buffer, r.shape, r.dtype) == ("psum", (64, 512), "float32")
    new = kernel("""
st = nl.ndarray((128, 128), dtype=nl.bfloat16)
mv = nl.ndarray((128, 512), dtype=nl.bfloat16)
ps = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
nisa.nc_matmul(ps, st, mv)
""", header=NEW)
    mm = new.matmuls[0]
    assert (mm.K, mm.M, mm.N) == (128, 128, 512)
    assert mm.dst.buffer == "psum" and mm.stationary.dtype == "bfloat16"


def test_resources_follow_loop_scopes():
    k = kernel("""
top = nl.ndarray((128, 1024), dtype=nl.float32)
for i in nl.affine_range(4):
    a1 = nl.ndarray((128, 2048), dtype=nl.float32)
    p1 = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    p2 = nl.ndarray((2, nl.par_dim(128), 768), dtype=nl.float32, buffer=nl.psum)
    s = nl.add(p1[0:128, 0:512], p2[0, 0:128, 0:512])
for j in nl.affine_range(4):
    b1 = nl.ndarray((128, 4096), dtype=nl.float32)
    p3 = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
""")
    res = kernel_resources(k, get_target("trn2"))
    assert res["sbuf_peak_bytes_per_partition"] == 4096 + 16384  # top + b1; a1 is in a sibling loop
    # PSUM by liveness: p1 is still read when p2 is allocated; p2, a legacy block-dim tile, holds one block
    # (ceil(3072 / 2048) = 2 banks) at a time; p3 in the sibling loop never overlaps them
    assert res["psum_banks"] == 1 + 2
    assert res["psum_bytes_per_partition"] == 2048 + 3072
    assert res["sbuf_percent"] == round(100 * 20480 / 212728, 1)


def test_module_tuple_unpacking_binds_like_separate_assignments():
    # `BM, BN, BK = 128, 512, 32` on one line must give the same facts as three lines (issue 29)
    body = "t = nl.ndarray((BK, BN), dtype=nl.float32, buffer=nl.sbuf)\nu = nl.ndarray((BM, BK), dtype=nl.float32)"
    one = kernel(body, prelude="BM, BN, BK = 128, 512, 32\n")
    three = kernel(body, prelude="BM = 128\nBN = 512\nBK = 32\n")
    assert [a.shape for a in one.allocations] == [a.shape for a in three.allocations] == [(32, 512), (128, 32)]
    # a name bound twice stays a symbol either way; a starred or unequal unpack binds nothing
    twice = kernel("t = nl.ndarray((BK, 8), dtype=nl.float32)", prelude="BM, BK = 128, 32\nBK = 64\n")
    assert twice.allocations[0].shape[0] != 32 and twice.allocations[0].shape[0] != 64
    uneven = kernel("t = nl.ndarray((BK, 8), dtype=nl.float32)", prelude="BM, BK = (128, 32, 4)[:2]\n")
    assert uneven.allocations[0].shape[0] != 32
