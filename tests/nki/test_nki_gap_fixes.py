"""Front-end fixes found by the eval suite: exact floor division of symbols, reduce_res tags."""

from __future__ import annotations

from nki_assist.parse.nki import parse_nki

LEGACY = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"
NEW = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n"


def kernel(body: str, header: str = LEGACY, prelude: str = "CHUNK = 512\n"):
    src = header + prelude + "\n@nki.jit\ndef k(x, y):\n" + "".join("    " + ln + "\n" for ln in body.strip().splitlines())
    return parse_nki(src, "k.py").kernels[0]


def test_asserted_exact_division_of_a_symbol_is_unknown_not_zero():
    # assert L % CHUNK == 0 proves the division exact; L is still unknown, so is the trip count
    k = kernel("""
R, L = x.shape
assert R % 128 == 0 and L % CHUNK == 0
for j in nl.affine_range(L // CHUNK):
    t = nl.load(x[0:128, j * CHUNK:(j + 1) * CHUNK])
n = (2 * L) // 256
for i in nl.affine_range(n):
    t2 = nl.load(x[0:128, 0:512])
""")
    j, i = k.loops
    assert j.trip_count is None and j.trip_expr == "L // CHUNK"
    assert i.trip_count is None


def test_exact_division_keeps_divisible_coefficients_linear():
    # (256 * i) // 128 is 2 * i: a slice extent that still folds to a number
    k = kernel("""
for i in nl.affine_range(4):
    t = nl.ndarray((128, (256 * i + 256) // 128 - (256 * i) // 128), dtype=nl.float32, buffer=nl.sbuf)
""")
    assert k.allocations[0].shape == (128, 2)


def test_min_clamped_chunk_gives_unknown_trip_count():
    k = kernel("""
R, L = x.shape
ch = min(L, CHUNK)
for j in range(L // ch):
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
""", header=NEW)
    assert k.loops[0].trip_count is None


def test_known_exact_division_still_folds():
    k = kernel("""
L = 2048
assert L % CHUNK == 0
for j in range(L // CHUNK):
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
""", header=NEW)
    assert k.loops[0].trip_count == 4


def test_activation_reduce_result_is_a_sum_of_squares():
    k = kernel("""
xt = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
sq = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
s1 = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
s2 = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
m2 = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
v = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
nisa.tensor_reduce(dst=s1, op=nl.add, data=xt, axis=1)
nisa.activation_reduce(dst=sq, op=nl.square, data=xt, reduce_op=nl.add, reduce_res=s2)
nisa.tensor_tensor(dst=m2, data1=s1, data2=s1, op=nl.multiply)
nisa.tensor_tensor(dst=v, data1=s2, data2=m2, op=nl.subtract)
nisa.tensor_tensor(dst=v, data1=sq, data2=m2, op=nl.subtract)
""", header=NEW)
    tags = [(s.left_tag, s.right_tag) for s in k.subtractions]
    # the reduce result is E[x^2]; the elementwise square tile itself is not
    assert tags == [("mean_sq", "sq_mean"), ("square", "sq_mean")]


def test_activation_without_square_does_not_tag_reduce_res():
    k = kernel("""
xt = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
e = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
s1 = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
s2 = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
m2 = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
v = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
nisa.tensor_reduce(dst=s1, op=nl.add, data=xt, axis=1)
nisa.activation_reduce(dst=e, op=nl.exp, data=xt, reduce_op=nl.add, reduce_res=s2)
nisa.tensor_tensor(dst=m2, data1=s1, data2=s1, op=nl.multiply)
nisa.tensor_tensor(dst=v, data1=s2, data2=m2, op=nl.subtract)
""", header=NEW)
    assert all(s.left_tag != "mean_sq" for s in k.subtractions)


def _ln(src: str, needle: str) -> int:
    return next(i for i, t in enumerate(src.splitlines(), 1) if needle in t)


def _rules(src: str, rule: str):
    from nki_assist.api.hardware import get_target
    from nki_assist.rules.nki.run import run_nki_rules
    return [f for f in run_nki_rules(parse_nki(src, "k.py"), get_target("trn2")) if f.rule == rule]


def test_asserted_divisible_loops_are_no_longer_skipped_as_empty():
    # before the exact-division fix the loop had 0 iterations and every in-loop rule stayed silent
    src = LEGACY + """
@nki.jit
def k(x):
    R, L = x.shape
    assert R % 128 == 0 and L % 512 == 0
    out = nl.ndarray((R, L), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    for t in nl.affine_range(R // 128):
        for j in nl.affine_range(L // 512):
            a = nl.load(x[t * 128:(t + 1) * 128, j * 512:j * 512 + 16], dtype=nl.bfloat16)
            nl.store(out[t * 128:(t + 1) * 128, j * 512:j * 512 + 16], value=a)
    return out
"""
    fs = _rules(src, "NKI108")
    # static performance findings are info (severity policy)
    assert [(f.line, f.severity.value) for f in fs] == [(_ln(src, "a = nl.load"), "info"), (_ln(src, "nl.store"), "info")]
    assert fs[0].evidence["bytes_per_partition"] == 32 and "trip L // 512" in fs[0].message


def test_small_dma_of_a_full_partition_column_is_info():
    src = NEW + """
@nki.jit
def k(x, b):
    C, HW = x.shape
    assert C % 128 == 0
    y = nl.ndarray((C, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    for t in range(C // 128):
        bt = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=bt, src=b[t * 128:(t + 1) * 128, 0:1])
        one = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=one, src=b[t:t + 1, 0:1])
        nisa.dma_copy(dst=y[t * 128:(t + 1) * 128, 0:1], src=bt)
    return y
"""
    got = [(f.line, f.severity.value, f.evidence["column_vector"]) for f in _rules(src, "NKI108")]
    # [128, 1] per tile is what an expert recommends for per-row scalars; a [1, 1] load is still a defect
    assert got == [(_ln(src, "dst=bt"), "info", True), (_ln(src, "dst=one"), "info", False),
                   (_ln(src, "src=bt"), "info", True)]


def test_shape_branch_facts():
    k = kernel("""
R, D = x.shape
n = y.shape[0]
if R == 256 and D == 1024:
    out = nl.ndarray((R, D), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x[0:128, 0:1024])
    nl.store(out[0:128, 0:1024], value=t)
    return out
if n != 64:
    w = nl.ndarray((n, 4), dtype=y.dtype, buffer=nl.shared_hbm)
    return w
if R % 128 == 0:
    return y
return x
""")
    b1, b2 = k.shape_branches
    assert (b1.line, b1.literals, b1.matched_computes, b1.other_computes) == (10, [("R", 256), ("D", 1024)], True, False)
    assert (b1.other_returns, b1.other_returns_input) == ("x", True)
    # `n != 64`: the literal shape falls through; the other path only allocates and returns an unwritten tensor
    assert (b2.literals, b2.other_computes, b2.other_returns, b2.other_returns_input) == ([("n", 64)], False, "w", False)
    # `R % 128 == 0` is not a comparison of a shape with a literal
    assert len(k.shape_branches) == 2
