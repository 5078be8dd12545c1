"""Incremental checking (parse.reuse.ParseCache) gives exactly the cold result after any edits.

The language server keeps one ParseCache per document: tree-sitter reparses incrementally and
functions whose text, position, decorator and module context are unchanged keep their facts (and the
values rules derive from them). These tests compare that path with a cold check after random edit
sequences on our own fixture kernels, and pin down what is reused.
"""

from __future__ import annotations

import random
import re
import threading
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from benchmarks.check_bench import generate
from nki_assist.check import CheckOptions, check_text
from nki_assist.parse.nki import is_nki_source, parse_nki
from nki_assist.parse.reuse import ParseCache, text_edit

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted(p for p in (ROOT / "tests" / "fixtures" / "rules").glob("*/*.py")
                  if is_nki_source(p.read_text(encoding="utf-8")))
GENERATED = generate(100)  # 5 kernels: each of the 4 templates, reading module constants
CORPUS = [("generated.py", GENERATED)] + [(p.name, p.read_text(encoding="utf-8")) for p in FIXTURES]
OPTIONS = CheckOptions()

HELPER = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


def scale(t):
    return nl.multiply(t, 2.0)


@nki.jit
def kernel(a):
    out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a[0:128, 0:512])
    nl.store(out[0:128, 0:512], value=scale(t))
    return out
'''
CORPUS.append(("helper.py", HELPER))

# Pieces an edit may insert: whitespace, syntax that breaks and mends, non-ASCII text (byte vs character
# columns), NKI calls, numbers, a new kernel.
PALETTE = [" ", "\n", "#", "(", ")", ":", ",", "1", "128", "64", "    ", "nl.", "x", "\n\n", "# é😀\n", "ü",
           "    t = nl.load(a[0:128, 0:512])\n", "    assert K % 128 == 0\n",
           "\n@nki.jit\ndef extra(a):\n    return a\n", "TILE = 256\n", "for i in nl.affine_range(4):\n"]


def _apply(text: str, edit: tuple) -> str:
    kind, where, arg = edit
    if not text:
        return text + (arg if isinstance(arg, str) else "")
    if kind == "insert":
        pos = int(where * len(text))
        return text[:pos] + arg + text[pos:]
    if kind == "delete":
        pos = int(where * len(text))
        return text[:pos] + text[pos + arg:]
    lines = text.split("\n")
    i = int(where * len(lines)) % len(lines)
    if kind == "copy-line":  # one line over another: moves code between kernels and scopes
        lines[i] = lines[int(arg * len(lines)) % len(lines)]
        return "\n".join(lines)
    if kind == "number":  # retype a number on a line: tile sizes, trip counts, constants
        lines[i] = re.sub(r"\b\d+\b", str(arg), lines[i], count=1)
        return "\n".join(lines)
    if kind in ("constant", "import"):  # a module-level constant's value / an import: context of every kernel
        pattern = r"^[A-Z_][A-Z0-9_]* = " if kind == "constant" else r"^(?:import|from) "
        found = [j for j, line in enumerate(lines) if re.match(pattern, line)]
        if not found:
            return text
        j = found[int(where * len(found))]
        lines[j] = lines[j].split("= ")[0] + f"= {arg}" if kind == "constant" else arg
        return "\n".join(lines)
    raise AssertionError(kind)


fraction = st.floats(min_value=0, max_value=0.999, allow_nan=False)
edits = st.one_of(
    st.tuples(st.just("insert"), fraction, st.sampled_from(PALETTE)),
    st.tuples(st.just("delete"), fraction, st.integers(min_value=1, max_value=40)),
    st.tuples(st.just("copy-line"), fraction, fraction),
    st.tuples(st.just("number"), fraction, st.sampled_from([0, 1, 2, 3, 64, 100, 128, 512, 4096])),
    st.tuples(st.just("constant"), fraction, st.sampled_from([1, 64, 100, 128, 256, "TILE_P * 2", "None"])),
    st.tuples(st.just("import"), fraction, st.sampled_from([
        "", "import numpy as nl", "import nki.language as nl", "import neuronxcc.nki.isa as nisa",
        "from neuronxcc import nki", "import nki", "import neuronxcc.nki.language as nl"])),
)


def _result(outcome):
    return ([f.model_dump() for f in outcome.findings], [f.model_dump() for f in outcome.suppressed],
            outcome.status, outcome.reason)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Half the runs start from the generated file: it has module constants that kernels read.
@given(start=st.one_of(st.just(0), st.sampled_from(range(len(CORPUS)))), steps=st.lists(edits, min_size=1, max_size=8))
# found by this test: a per-function pyflakes run named its line-1 stand-in for the module's `nl` in "defined in
# enclosing scope on line N" (project/incremental.py binding_lines)
@example(start=0, steps=[("import", 0.25, "import numpy as nl"), ("delete", 0.5753974287725214, 28)])
def test_incremental_check_equals_cold_check_after_random_edits(start, steps):
    name, text = CORPUS[start]
    cache = ParseCache()
    check_text(name, text, OPTIONS, cache=cache)
    for step in steps:
        text = _apply(text, step)
        warm = check_text(name, text, OPTIONS, cache=cache)
        cold = check_text(name, text, OPTIONS)
        assert _result(warm) == _result(cold), step
        assert warm.parsed == cold.parsed, step  # every fact, not only the ones a rule reported


def test_the_edit_found_between_two_texts_rebuilds_the_new_text():
    rng = random.Random(7)
    base = GENERATED.encode()
    for _ in range(300):
        a = bytearray(base[:rng.randrange(50, 400)])
        b = bytearray(a)
        for _ in range(rng.randrange(1, 4)):
            pos = rng.randrange(len(b) + 1)
            if rng.random() < 0.5:
                b[pos:pos] = rng.choice([b"x", b"\n", b"  \n", b"abc"])
            else:
                del b[pos:pos + rng.randrange(1, 6)]
        e = text_edit(bytes(a), bytes(b))
        if a == b:
            assert e is None
            continue
        s, oe, ne = e["start_byte"], e["old_end_byte"], e["new_end_byte"]
        assert bytes(a[:s]) + bytes(b[s:ne]) + bytes(a[oe:]) == bytes(b)
        assert e["start_point"] == (a[:s].count(b"\n"), s - (a[:s].rfind(b"\n") + 1))
        assert e["new_end_point"][0] == b[:ne].count(b"\n")


def _kernel_edit(text: str, kernel: str, old: str, new: str) -> str:
    start = text.index(f"def {kernel}(")
    at = text.index(old, start)
    return text[:at] + new + text[at + len(old):]


def test_an_edit_inside_one_kernel_re_extracts_only_that_kernel():
    """Also when it changes the byte length of the kernel (facts of the kernels below do not move)."""
    text = generate(150)  # 8 kernels
    cache = ParseCache()
    first = parse_nki(text, "g.py", cache=cache)
    assert cache.misses == len(first.kernels) == 8 and cache.hits == 0
    edited = _kernel_edit(text, "softmax_2", "nl.exp(shifted)", "nl.exp(shifted_more)")
    second = parse_nki(edited, "g.py", cache=cache)
    assert (cache.misses, cache.hits) == (9, 7)
    assert cache.reparses == 1  # incremental: the old tree was edited and reused
    assert second == parse_nki(edited, "g.py")
    # The other kernels are the very objects of the first parse; the edited one is new.
    same = [a is b for a, b in zip(first.kernels, second.kernels)]
    assert same.count(False) == 1 and not same[[k.name for k in second.kernels].index("softmax_2")]


def test_a_module_constant_edit_re_extracts_the_kernels_that_read_it():
    text = generate(150)  # 8 kernels; TILE_P is read by the 6 elementwise/softmax/rmsnorm ones, TILE_F by none
    cache = ParseCache()
    first = parse_nki(text, "g.py", cache=cache)
    readers = [k.name for k in first.kernels if not k.name.startswith("matmul")]
    assert len(readers) == 6
    second = parse_nki(text.replace("TILE_P = 128", "TILE_P = 64"), "g.py", cache=cache)
    assert (cache.misses, cache.hits) == (8 + 6, 2)
    assert second == parse_nki(text.replace("TILE_P = 128", "TILE_P = 64"), "g.py")
    parse_nki(text.replace("TILE_P = 128", "TILE_P = 64").replace("TILE_F = 512", "TILE_F = 256"), "g.py",
              cache=cache)
    assert (cache.misses, cache.hits) == (14, 10)  # nobody reads TILE_F
    # An import is context for every function: all are re-extracted.
    parse_nki("import numpy as np\n" + text, "g.py", cache=cache)
    assert cache.misses == 22
    # A module-level comment is not context: nothing is re-extracted (the rows are unchanged).
    parse_nki("import numpy as np\n" + text + "# trailing note\n", "g.py", cache=cache)
    assert cache.misses == 22


def test_a_kernel_edited_to_read_a_constant_follows_that_constant():
    """The names a function reads are remembered per text: after an edit makes a kernel read TILE_F,
    retyping TILE_F re-extracts it (remembering them per position would keep the old text's names)."""
    text = generate(150)
    cache = ParseCache()
    parse_nki(text, "g.py", cache=cache)
    reads = _kernel_edit(text, "softmax_2", "        e = nl.exp(shifted)\n",
                         "        e = nl.exp(shifted)\n        width = TILE_F\n")
    parse_nki(reads, "g.py", cache=cache)
    misses = cache.misses
    retyped = reads.replace("TILE_F = 512", "TILE_F = 256")
    warm = parse_nki(retyped, "g.py", cache=cache)
    assert cache.misses == misses + 1  # softmax_2 only: it is the one kernel reading TILE_F
    assert warm == parse_nki(retyped, "g.py")
    assert warm.kernel("softmax_2")._env.values["width"] == 256


def test_the_cache_holds_only_the_current_version():
    text = generate(150)
    cache = ParseCache()
    for i in range(30):  # 30 different versions of one kernel
        parse_nki(_kernel_edit(text, "matmul_0", "TILE_K = nl.tile_size.pmax", f"TILE_K = {i + 1}"), "g.py",
                  cache=cache)
    assert len(cache._facts) == 8


def test_a_syntax_error_parses_cold_and_matches():
    text = generate(200)
    cache = ParseCache()
    parse_nki(text, "g.py", cache=cache)
    broken = _kernel_edit(text, "add_relu_1", "rows, cols = a_tensor.shape", "rows, cols = a_tensor.shape(")
    warm = parse_nki(broken, "g.py", cache=cache)
    assert warm.syntax_errors and warm == parse_nki(broken, "g.py")
    fixed = parse_nki(text, "g.py", cache=cache)
    assert not fixed.syntax_errors and fixed == parse_nki(text, "g.py")


def test_a_busy_cache_is_not_waited_for():
    cache = ParseCache()
    held, done = threading.Event(), threading.Event()

    def other_check():  # another thread's check of this document is in flight
        with cache.lock:
            held.set()
            done.wait(10)

    thread = threading.Thread(target=other_check)
    thread.start()
    try:
        assert held.wait(10)
        result = parse_nki(GENERATED, "g.py", cache=cache)
        checked = check_text("generated.py", GENERATED, OPTIONS, cache=cache)
    finally:
        done.set()
        thread.join()
    assert result == parse_nki(GENERATED, "g.py") and cache.misses == 0
    assert _result(checked) == _result(check_text("generated.py", GENERATED, OPTIONS)) and cache.misses == 0
    assert not checked.parsed.from_cache  # ran cold: no findings were remembered on shared kernels


def test_helper_and_decorator_status_follow_the_rest_of_the_file():
    """`helper` and a `nki.jit(fn)` decorator come from other code: a reused function gets them anew."""
    cache = ParseCache()
    jitted = HELPER.replace("def scale", "@nki.jit\ndef scale")
    versions = [HELPER, HELPER.replace("value=scale(t)", "value=t"), HELPER,
                HELPER + "\nscaled = nki.jit(scale)\n", HELPER,
                jitted, jitted.replace("value=scale(t)", "value=t")]
    seen = []
    for text in versions:
        warm, cold = parse_nki(text, "h.py", cache=cache), parse_nki(text, "h.py")
        assert warm == cold
        seen.append(tuple((k.name, k.helper, k.decorator) for k in warm.kernels))
    assert seen[0] == (("scale", True, None), ("kernel", False, "nki.jit"))
    assert seen[1] == (("kernel", False, "nki.jit"),)  # no caller: `scale` is no kernel of the file
    assert seen[3][0] == ("scale", True, "nki.jit") and seen[4] == seen[0]
    # A decorated `scale` stays a kernel when nothing calls it any more: it is no longer a helper.
    assert seen[5][0] == ("scale", True, "nki.jit") and seen[6][0] == ("scale", False, "nki.jit")
    assert cache.hits == 7  # `scale` reused in 1-4 and 6, `kernel` in 3 and 4 (5 adds a line above both)


PROJECT = '''import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


def project(x, w):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    out[...] = nisa.nc_matmul(x, w)
    return out


@nki.jit
def caller(a, b):
    ta = nl.load(a[0:128, 0:128])
    tb = nl.load(b[0:128, 0:512])
    r = project(ta, tb)
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out[0:128, 0:512], value=r)
    return out
'''


def _rules_of(outcome, function_line: int) -> list[str]:
    return sorted(f.rule for f in outcome.findings if f.line is not None and f.line >= function_line
                  and f.line < function_line + 5)


def test_reused_kernels_findings_follow_helper_and_decorator_status():
    """A reused kernel keeps its rule findings only while what the file says of it is unchanged: whether it
    is a helper (NKI106 trusts a helper's parameters) and its decorator (NKI110 judges only kernels)."""
    line = PROJECT.split("\n").index("def project(x, w):") + 1
    uncalled = PROJECT.replace("    r = project(ta, tb)\n", "    r = ta\n")
    wrapped = PROJECT + "\nproject_kernel = nki.jit(project)\n"
    versions = [PROJECT, wrapped, PROJECT, uncalled.replace("def project", "@nki.jit\ndef project"),
                wrapped.replace("def project", "@nki.jit\ndef project")]
    cache = ParseCache()
    seen = []
    for text in versions:
        warm, cold = check_text("p.py", text, OPTIONS, cache=cache), check_text("p.py", text, OPTIONS)
        assert _result(warm) == _result(cold)
        at = line + (1 if "@nki.jit\ndef project" in text else 0)
        seen.append(_rules_of(warm, at))
    # a helper (called by `caller`) with no decorator: its parameters are the caller's tiles, no output rule
    assert seen[0] == [] and seen[2] == []
    # wrapped by nki.jit further down: the same function object, now a kernel returning an SBUF tile
    assert seen[1] == ["NKI110"]
    # decorated and no longer called: its parameters are HBM inputs fed to the Tensor Engine
    assert seen[3] == ["NKI106", "NKI106", "NKI110"]
    assert seen[4] == ["NKI110"]  # called again: a helper
    assert cache.hits >= 3  # `project` was reused across the status changes
