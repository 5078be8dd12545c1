"""Benchmark (not a test): parse + all static NKI rules on a generated ~1,000-line legacy kernel file.

Run: .venv/bin/python tests/nki/bench_nki_check.py   (prints the median of 30 runs; -p profiles)
"""
import statistics, time, sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki.run import run_nki_rules
from nki_assist.api.hardware import get_target

HDR = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n\n"
BLOCK = '''
@nki.jit
def kern_{i}(lhsT, rhs, bias, out_unused):
    K, M = lhsT.shape
    _, N = rhs.shape
    TILE_K = nl.tile_size.pmax
    TILE_N = nl.tile_size.gemm_moving_fmax
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    stage = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), 512), dtype=nl.bfloat16, buffer=nl.sbuf)
    for n in nl.affine_range(N // TILE_N):
        acc = nl.zeros((nl.par_dim(128), TILE_N), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(K // TILE_K):
            a = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, 0:128])
            b = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
            acc += nl.matmul(a, b, transpose_x=True)
        bb = nl.load(bias[0:1, n * TILE_N:(n + 1) * TILE_N])
        res = nl.add(nl.copy(acc), bb)
        e = nl.exp(res)
        m = nl.mean(e, axis=1)
        v = nl.mean(nl.square(e), axis=1) - m * m
        nl.store(out[0:128, n * TILE_N:(n + 1) * TILE_N], value=e)
    return out
'''
def make(lines=1000):
    parts, i = [HDR], 0
    while sum(p.count("\n") for p in parts) < lines:
        parts.append(BLOCK.format(i=i)); i += 1
    return "".join(parts)

text = make()
print("lines", text.count("\n"))
t = get_target("trn2")
times = []
for _ in range(30):
    t0 = time.perf_counter()
    nf = parse_nki(text, "gen.py")
    fs = run_nki_rules(nf, t)
    times.append(time.perf_counter() - t0)
print("kernels", len(nf.kernels), "findings", len(fs))
print("median ms %.1f  min %.1f" % (statistics.median(times) * 1e3, min(times) * 1e3))
import cProfile, pstats
if "-p" in sys.argv:
    cProfile.run("run_nki_rules(parse_nki(text, 'g.py'), t)", "/tmp/prof")
    pstats.Stats("/tmp/prof").sort_stats("cumtime").print_stats(25)
