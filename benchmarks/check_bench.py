"""`check` speed: a generated 1,000-line NKI kernel file, in process and through the CLI, next to ruff.

- cold: `check_source` in process on a file it has not seen (no parse cache; the per-text expression
  cache is cleared before every run), median of 21. Target (design.md, issue 14): < 50 ms.
- incremental: what the language server does per edit: `check_text` with the document's ParseCache
  after a one-line edit inside one kernel.
- ruff: `ruff check --isolated --no-cache` on the same file (a subprocess, as the CLI runs) and the
  ratio of nki-assist's CLI time to it. ruff is a dev dependency used only here.
- floor: the front end's share (`parse_nki`), the rules' (cold check minus front end), and what any
  Python front end over tree-sitter pays before recording a fact: the tree-sitter parse and one Python
  visit of every named node.
CLI times are a fresh interpreter each run. Target: CLI cold start < 1 s.

Repository scale (issue 30): `nki-assist check` and `ruff check` on AWS's nki-library snapshot
(`../shared/corpora/nki-library@d2ad3a5` beside the repository; skipped with a reason when absent), both
pinned to 2 cores (sched_setaffinity) and run in alternation in the same run, with bytecode caching on
as in a normal install: cold (no cache: nki-assist with an empty cache folder, so it also writes its
cache; ruff --no-cache), an unchanged re-run from the cache (both tools' caches warm), and nki-assist's
re-run after one file of a copy of the tree was edited (`repo_nki_edit_*`; against ruff's cold run). Wall and CPU
(user+sys) medians of REPO_REPEAT runs; targets: cold <= 6x ruff, cached <= 2x ruff's cached run.
`repo_python_floor_*`: what any CPython linter pays before its first rule (FLOOR_SCRIPT: start, then Python's own
parse and one visit of every node of the tree in 2 forked workers), and its ratio to ruff's cold run.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LINES = 1000
REPEAT = 21
CLI_REPEAT = 5

HEADER = '''"""Generated benchmark kernels: tiled matmuls, fused elementwise, softmax and rmsnorm."""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

TILE_P = 128
TILE_F = 512

'''

MATMUL = '''@nki.jit
def matmul_{i}(lhsT, rhs):
    K, M = lhsT.shape
    K2, N = rhs.shape
    assert K == K2
    TILE_M = nl.tile_size.gemm_stationary_fmax
    TILE_K = nl.tile_size.pmax
    TILE_N = nl.tile_size.gemm_moving_fmax
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            acc = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                a = nl.ndarray((TILE_K, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((TILE_K, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                a[...] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
                b[...] = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
                acc += nisa.nc_matmul(a, b)
            res = nl.copy(acc, dtype=out.dtype)
            nl.store(out[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], value=res)
    return out


'''

ELEMENTWISE = '''@nki.jit
def add_relu_{i}(a_tensor, b_tensor, scale):
    rows, cols = a_tensor.shape
    out = nl.ndarray((rows, cols), dtype=a_tensor.dtype, buffer=nl.shared_hbm)
    F = {free}
    assert rows % TILE_P == 0
    for p in nl.affine_range(rows // TILE_P):
        for f in nl.affine_range(cols // F):
            a_tile = nl.load(a_tensor[p * TILE_P:(p + 1) * TILE_P, f * F:(f + 1) * F])
            b_tile = nl.load(b_tensor[p * TILE_P:(p + 1) * TILE_P, f * F:(f + 1) * F])
            s = nl.add(a_tile, b_tile)
            s = nl.multiply(s, scale)
            r = nl.maximum(s, 0.0)
            nl.store(out[p * TILE_P:(p + 1) * TILE_P, f * F:(f + 1) * F], value=r)
    return out


'''

SOFTMAX = '''@nki.jit
def softmax_{i}(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for p in nl.affine_range(rows // TILE_P):
        tile = nl.load(x[p * TILE_P:(p + 1) * TILE_P, 0:cols])
        row_max = nl.max(tile, axis=[1], keepdims=True)
        shifted = nl.subtract(tile, row_max)
        e = nl.exp(shifted)
        total = nl.sum(e, axis=[1], keepdims=True)
        inv = nl.reciprocal(total)
        y = nl.multiply(e, inv)
        nl.store(out[p * TILE_P:(p + 1) * TILE_P, 0:cols], value=y)
    return out


'''

RMSNORM = '''@nki.jit
def rmsnorm_{i}(x, gamma, eps):
    rows, hidden = x.shape
    out = nl.ndarray((rows, hidden), dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.load(gamma.reshape((1, hidden)))
    for p in nl.sequential_range(rows // TILE_P):
        xt = nl.load(x[p * TILE_P:(p + 1) * TILE_P, 0:hidden])
        sq = nl.multiply(xt, xt, dtype=nl.float32)
        ms = nl.mean(sq, axis=[1], keepdims=True)
        rs = nl.rsqrt(nl.add(ms, eps))
        y = nl.multiply(nl.multiply(xt, rs), g)
        nl.store(out[p * TILE_P:(p + 1) * TILE_P, 0:hidden], value=y)
    return out


'''

TEMPLATES = (MATMUL, ELEMENTWISE, SOFTMAX, RMSNORM)


def generate(lines: int = LINES) -> str:
    """A syntactically valid NKI module of at least `lines` lines (kernels cycle through 4 shapes)."""
    parts, n, i = [HEADER], HEADER.count("\n"), 0
    while n < lines:
        block = TEMPLATES[i % len(TEMPLATES)].format(i=i, free=(256, 512, 1024)[i % 3])
        parts.append(block)
        n += block.count("\n")
        i += 1
    return "".join(parts)


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank q-quantile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def p95(values: list[float]) -> float:
    return percentile(values, 0.95)


def rss_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process in KiB (empty when it is gone)."""
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def edit_line(lines: list[str], anchor: str, needle: str) -> int:
    """The first line containing `needle` at or after the line starting with `anchor` (a kernel's `def`)."""
    start = next(i for i, line in enumerate(lines) if line.startswith(anchor))
    return next(i for i in range(start, len(lines)) if needle in lines[i])


def _median_ms(fn, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), min(times)


def _cli(args: list[str], repeat: int) -> tuple[float, int]:
    exe = Path(sys.executable).with_name("nki-assist")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "nki_assist.cli"]
    rc = 0

    def once():
        nonlocal rc
        rc = subprocess.run(cmd + args, capture_output=True, timeout=60).returncode

    once()  # warm the OS file cache and .pyc files; "cold" = a fresh interpreter each time
    return _median_ms(once, repeat)[0], rc


def _ruff() -> list[str] | None:
    exe = Path(sys.executable).with_name("ruff")
    found = str(exe) if exe.exists() else shutil.which("ruff")
    return [found, "check", "--isolated", "--no-cache", "--exit-zero", "--quiet"] if found else None


def _subprocess_ms(cmd: list[str], repeat: int) -> float:
    subprocess.run(cmd, capture_output=True, timeout=60)  # warm the OS file cache
    return _median_ms(lambda: subprocess.run(cmd, capture_output=True, timeout=60), repeat)[0]


def _incremental(text: str, options) -> tuple[float, float]:
    """Median and p95 of `check_text` with a ParseCache after one-line edits inside one kernel."""
    from nki_assist.check import check_text
    from nki_assist.parse.reuse import ParseCache

    cache = ParseCache()
    check_text("bench_kernels.py", text, options, cache=cache)
    lines = text.split("\n")
    line = edit_line(lines, "def softmax_30(", "nl.exp(")
    variants = (lines[line].replace("(shifted)", "(tile)"), lines[line])
    times = []
    for i in range(REPEAT * 3):
        lines[line] = variants[i % 2]
        edited = "\n".join(lines)
        t0 = time.perf_counter()
        check_text("bench_kernels.py", edited, options, cache=cache)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), p95(times)


def _floor(text: str) -> dict[str, float]:
    """Where a cold check's time goes: the NKI front end, and inside it the two costs any Python front end
    over tree-sitter pays: the tree-sitter parse, and visiting every named node once from Python (no facts)."""
    from nki_assist.parse.nki import _parser, parse_nki

    src = text.encode()
    tree = _parser().parse(src)

    def walk() -> None:
        stack = [tree.root_node]
        while stack:
            node = stack.pop()
            node.type  # noqa: B018 - the attribute read every walker makes per node
            stack.extend(node.named_children)

    parse_nki(text, "bench_kernels.py")
    return {name: round(_median_ms(fn, REPEAT)[0], 2) for name, fn in (
        ("parse_nki", lambda: parse_nki(text, "bench_kernels.py")),
        ("tree_sitter", lambda: _parser().parse(src)), ("walk", walk))}


REPO_REPEAT = 5
CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpora" / "nki-library@d2ad3a5"


def _two_cores() -> None:
    import os

    try:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:2])
    except (AttributeError, OSError):
        pass


def _timed(cmd: list[str], env: dict) -> tuple[float, float, int]:
    """(wall s, CPU s of the process and its children, exit code)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    rc = subprocess.run(cmd, capture_output=True, timeout=300, env=env, preexec_fn=_two_cores).returncode
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), rc


EDITED = "src/nkilib_src/nkilib/core/attention/attention_tkg.py"  # the tree's largest kernel file


def _edit_reruns(corpus: Path, nki: list[str], tmp: Path, env: dict, repeat: int) -> list[tuple[float, float]]:
    """A re-run after one file changed (a comment appended to EDITED, in a copy of the tree), cache warm:
    what pre-commit pays after an edit. Only the files whose slice of the project changed are checked."""
    tree = tmp / "edited"
    shutil.copytree(corpus, tree)
    edited = tree / EDITED
    if not edited.is_file():
        return []
    cmd = nki + ["check", str(tree), "--fail-on", "never", "--cache-dir", str(tmp / "edit-cache")]
    subprocess.run(cmd, capture_output=True, timeout=300, env=env)
    out = []
    for i in range(repeat):
        with open(edited, "a", encoding="utf-8") as fh:
            fh.write(f"# edit {i}\n")
        out.append(_timed(cmd, env)[:2])
    return out


# What any CPython linter pays before its first rule: start, then in 2 forked workers Python's own parse of every
# .py file and one visit of each node (no import of ours, no rule, no output). Its ratio to ruff bounds what the
# cold target can mean for a Python engine.
FLOOR_SCRIPT = """
import ast, os, sys
from multiprocessing import get_context
def work(paths):
    n = 0
    for p in paths:
        try:
            tree = ast.parse(open(p, 'rb').read())
        except (SyntaxError, ValueError):
            continue
        n += sum(1 for _ in ast.walk(tree))
    return n
if __name__ == '__main__':
    files = sorted((os.path.join(d, f) for d, _, fs in os.walk(sys.argv[1]) for f in fs if f.endswith('.py')),
                   key=os.path.getsize, reverse=True)
    with get_context('fork').Pool(2) as pool:
        print(sum(pool.map(work, [files[0::2], files[1::2]])))
"""


def repository(corpus: Path = CORPUS, repeat: int = REPO_REPEAT) -> dict:
    """nki-assist check vs ruff check on a public NKI repository, cold and cached, 2 cores."""
    import os

    if not corpus.is_dir():
        return {"repository": f"skipped: {corpus} not found (shared/ corpora beside the repository)"}
    exe = Path(sys.executable).with_name("nki-assist")
    nki = [str(exe)] if exe.exists() else [sys.executable, "-m", "nki_assist.cli"]
    ruff = _ruff()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "NKI_ASSIST_CACHE_DIR",
                                                           "NKI_ASSIST_NO_CACHE")}
    rows: dict[str, list[tuple[float, float]]] = {k: [] for k in ("nki_cold", "nki_cached", "ruff_cold", "ruff_cached",
                                                                 "python_floor")}
    with tempfile.TemporaryDirectory() as tmp:
        nki_cmd = nki + ["check", str(corpus), "--fail-on", "never", "--cache-dir"]
        warm_dir = str(Path(tmp) / "warm")
        subprocess.run(nki_cmd + [warm_dir], capture_output=True, timeout=300, env=env)  # .pyc + warm cache
        ruff_cached = (ruff[:-3] + ["--exit-zero", "--quiet", "--cache-dir", str(Path(tmp) / "ruff")]) if ruff else None
        if ruff:
            subprocess.run(ruff_cached + [str(corpus)], capture_output=True, timeout=300)
        findings = None
        for i in range(repeat):
            wall, cpu, rc = _timed(nki_cmd + [str(Path(tmp) / f"cold{i}")], env)
            rows["nki_cold"].append((wall, cpu))
            wall, cpu, rc = _timed(nki_cmd + [warm_dir], env)
            rows["nki_cached"].append((wall, cpu))
            if ruff:
                rows["ruff_cold"].append(_timed(ruff + [str(corpus)], env)[:2])
                rows["ruff_cached"].append(_timed(ruff_cached + [str(corpus)], env)[:2])
            rows["python_floor"].append(_timed([sys.executable, "-c", FLOOR_SCRIPT, str(corpus)], env)[:2])
        out = subprocess.run(nki_cmd + [warm_dir], capture_output=True, timeout=300, env=env, text=True).stdout
        findings = out.count("\n")
        rows["nki_edit"] = _edit_reruns(corpus, nki, Path(tmp), env, repeat)
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in rows.items() if v}
    files = sum(1 for p in corpus.rglob("*") if p.suffix in (".py", ".cu", ".cuh"))
    result = {"repo_files": files, "repo_findings": findings}
    for k, (wall, cpu) in med.items():
        result[f"repo_{k}_s"] = round(wall, 3)
        result[f"repo_{k}_cpu_s"] = round(cpu, 3)
    if "ruff_cold" in med:
        result["repo_cold_vs_ruff"] = round(med["nki_cold"][0] / med["ruff_cold"][0], 1)
        result["repo_cached_vs_ruff_cached"] = round(med["nki_cached"][0] / med["ruff_cached"][0], 1)
        result["repo_cold_vs_ruff_cpu"] = round(med["nki_cold"][1] / med["ruff_cold"][1], 1)
        result["repo_cached_vs_ruff_cached_cpu"] = round(med["nki_cached"][1] / med["ruff_cached"][1], 1)
        if "nki_edit" in med:
            result["repo_edit_vs_ruff"] = round(med["nki_edit"][0] / med["ruff_cold"][0], 1)
        result["repo_python_floor_vs_ruff"] = round(med["python_floor"][0] / med["ruff_cold"][0], 1)
    try:
        result["load_average_1min"] = round(os.getloadavg()[0], 2)
    except OSError:
        pass
    return result


def run() -> dict:
    from nki_assist.check import CheckOptions, check_source
    from nki_assist.rules.migration.index import clear_caches

    text = generate()
    options = CheckOptions()
    first_t0 = time.perf_counter()
    findings = check_source("bench_kernels.py", text, options)  # also pays one-time imports
    first_ms = (time.perf_counter() - first_t0) * 1000

    def cold():
        clear_caches()
        check_source("bench_kernels.py", text, options)

    median_ms, min_ms = _median_ms(cold, REPEAT)
    inc_median, inc_p95 = _incremental(text, options)
    floor = _floor(text)
    parse_ms = floor.pop("parse_nki")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench_kernels.py"
        path.write_text(text, encoding="utf-8")
        cli_ms, rc = _cli(["check", str(path), "--fail-on", "never", "--no-cache"], CLI_REPEAT)  # cold, as ruff
        version_ms, _ = _cli(["--version"], CLI_REPEAT)
        ruff = _ruff()
        ruff_ms = _subprocess_ms(ruff + [str(path)], CLI_REPEAT * 2) if ruff else None
    return {
        "lines": text.count("\n"),
        "kernels": text.count("@nki.jit"),
        "findings": len(findings),
        "first_check_ms": round(first_ms, 2),
        "cold_check_median_ms": round(median_ms, 2),
        "cold_check_min_ms": round(min_ms, 2),
        "median_parse_nki_ms": parse_ms,
        "median_rules_and_check_ms": round(median_ms - parse_ms, 2),
        "median_tree_sitter_parse_ms": floor["tree_sitter"],
        "median_python_walk_ms": floor["walk"],
        "incremental_check_median_ms": round(inc_median, 2),
        "incremental_check_p95_ms": round(inc_p95, 2),
        "cli_check_ms": round(cli_ms, 1),
        "cli_check_exit": rc,
        "cli_version_ms": round(version_ms, 1),
        "ruff_check_cli_ms": round(ruff_ms, 1) if ruff_ms else None,
        "cli_check_vs_ruff_ratio": round(cli_ms / ruff_ms, 1) if ruff_ms else None,
        "in_process_check_vs_ruff_cli_ratio": round(median_ms / ruff_ms, 1) if ruff_ms else None,
        **repository(),
    }
