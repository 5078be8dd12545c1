"""Per-file AST checks that remember their findings per kernel (nki_common.kernel_findings): an edit re-runs them
on the edited kernel only, and every check's findings stay those of a cold check, also after edits of what the
memo key holds besides the kernel (imports, the decorator lines above it, the file's environment pin, the target,
the kernel's place in the file)."""

from __future__ import annotations

import pytest

from nki_assist.check import CheckOptions, check_text
from nki_assist.parse.nki import parse_nki
from nki_assist.parse.reuse import ParseCache
from nki_assist.rules.nki import common as nki_common, dim_roles as nki_dim_roles, loopvars as nki_loopvars, partition_broadcast as nki_partition_broadcast, target_gates as nki_target_gates

HEAD = """import os

import nki
import nki.isa as nisa
import nki.language as nl

"""
# NKI112 (a one-partition tile against 128 partitions) and NKI212 (a loop variable read after its loop)
BROADCAST = """

@nki.jit
def add_bias(x, b):
    out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
    bias = nl.ndarray((1, 512), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0:128, 0:512])
    nisa.dma_copy(dst=bias, src=b[0:1, 0:512])
    s = nl.add(t, bias)
    for i in nl.affine_range(4):
        nisa.dma_copy(dst=out, src=s)
    nisa.dma_copy(dst=out[i], src=s)
    return out
"""
# NKI523 (a trn2-only mode; the decorator above names no target)
GATED = """

@nki.jit
def double_row(lhsT, rhs):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    res = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(res, lhsT, rhs, perf_mode='double_row_gen3')
    nisa.dma_copy(dst=out, src=res)
    return out
"""
TEXT = HEAD + BROADCAST + GATED
REMEMBERED = {"NKI112": (nki_partition_broadcast, "_kernel_sites"), "NKI211": (nki_dim_roles, "_kernel_roles"),
              "NKI212": (nki_loopvars, "_kernel_reads"), "NKI523": (nki_target_gates, "_kernel_uses")}


def _rules(result) -> list[tuple]:
    return sorted((f.rule, f.line, f.column, f.message) for f in result.findings)


def _dump(result) -> list[dict]:
    return [f.model_dump() for f in result.findings]


def _counting(monkeypatch) -> dict[str, list[str]]:
    """Each remembered check's per-kernel function, counting the kernels it computes."""
    calls: dict[str, list[str]] = {rule: [] for rule in REMEMBERED}
    for rule, (module, name) in REMEMBERED.items():
        original = getattr(module, name)

        def counted(nf, k, *args, _original=original, _rule=rule, **kwargs):
            calls[_rule].append(k.name)
            return _original(nf, k, *args, **kwargs)

        monkeypatch.setattr(module, name, counted)
    return calls


def test_the_fixture_fires_the_remembered_rules():
    rules = {r for r, *_ in _rules(check_text("k.py", TEXT, CheckOptions(target="trn1")))}
    assert {"NKI112", "NKI212", "NKI523"} <= rules


def test_an_edit_in_one_kernel_recomputes_only_that_kernel(monkeypatch):
    options = CheckOptions(target="trn2")
    cache = ParseCache()
    calls = _counting(monkeypatch)
    first = check_text("k.py", TEXT, options, cache=cache)
    assert calls["NKI112"] == ["add_bias", "double_row"] and calls["NKI523"] == ["double_row"]
    for seen in calls.values():
        seen.clear()
    edited = TEXT.replace("src=res)\n", "src=res)  # edited\n", 1)
    assert edited != TEXT
    second = check_text("k.py", edited, options, cache=cache)
    assert calls["NKI112"] == calls["NKI211"] == calls["NKI212"] == calls["NKI523"] == ["double_row"]
    assert _dump(second) == _dump(check_text("k.py", edited, options)) and _rules(second) == _rules(first)


# edits of what the memo key holds besides the kernel's own lines: each must give the cold check's findings
EDITS = [
    ("an import alias", lambda t: t.replace("import nki.isa as nisa", "import nki.isa as isa_mod", 1)),
    ("a line added above (every kernel moves)", lambda t: t.replace("import nki\n", "import nki\n\n", 1)),
    ("the decorator pins a target", lambda t: t.replace("@nki.jit\ndef double_row",
                                                        "@nki.jit(platform_target='trn1')\ndef double_row", 1)),
    ("the environment pins a target", lambda t: t + "\nos.environ['NEURON_PLATFORM_TARGET_OVERRIDE'] = 'trn1'\n"),
    ("the dialect changes", lambda t: t.replace("import nki\nimport nki.isa as nisa\nimport nki.language as nl\n",
                                                "import neuronxcc.nki as nki\nimport neuronxcc.nki.isa as nisa\n"
                                                "import neuronxcc.nki.language as nl\n", 1)),
    ("a kernel's body", lambda t: t.replace("s = nl.add(t, bias)", "s = nl.add(t, t)", 1)),
    ("the kernel reads the generation", lambda t: t.replace("    return out\n", "    v = nisa.get_nc_version()\n"
                                                            "    return out\n")),
    ("a generation compared with ==", lambda t: t.replace("    return out\n", "    if nisa.get_nc_version() == "
                                                          "nisa.nc_version.gen3:\n        out = out\n    return out\n")),
    ("a kernel renamed", lambda t: t.replace("def add_bias(", "def add_bias_2(", 1)),
]


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
@pytest.mark.parametrize("what, edit", EDITS, ids=[e[0] for e in EDITS])
def test_an_edit_of_the_file_around_the_kernels_gives_the_cold_findings(what, edit, target):
    options = CheckOptions(target=target)
    cache = ParseCache()
    text = TEXT
    for step in range(3):  # there and back and there again: each version meets the previous one's memo
        text = edit(TEXT) if step % 2 == 0 else TEXT
        warm = check_text("k.py", text, options, cache=cache)
        assert _dump(warm) == _dump(check_text("k.py", text, options)), (what, step)


def test_the_target_is_part_of_the_key():
    """The same parsed kernels checked at two targets: NKI523's finding follows the target."""
    nf = parse_nki(TEXT, "k.py")
    from nki_assist.api.hardware import get_target

    trn1 = [f.severity for f in nki_target_gates.generation_gated_api(nf, get_target("trn1"))]
    trn3 = [f.severity for f in nki_target_gates.generation_gated_api(nf, get_target("trn3"))]
    cold1 = [f.severity for f in nki_target_gates.generation_gated_api(parse_nki(TEXT, "k.py"), get_target("trn1"))]
    assert trn1 == cold1 and trn1 and trn3 == [f.severity for f in nki_target_gates.generation_gated_api(
        parse_nki(TEXT, "k.py"), get_target("trn3"))]


def test_the_key_holds_the_kernel_lines_and_place():
    nf = parse_nki(TEXT, "k.py")
    k = nf.kernels[0]
    ran = []

    def compute(f, kernel):
        ran.append(kernel.name)
        return []

    nki_common.kernel_findings(nf, k, "NKI999", compute)
    nki_common.kernel_findings(nf, k, "NKI999", compute)
    assert ran == [k.name]  # remembered
    nf.lines = [*nf.lines]
    nf.lines[k.line] += "  # a comment"  # the same kernel object, its text changed: computed again
    nki_common.kernel_findings(nf, k, "NKI999", compute)
    nki_common.kernel_findings(nf, k, "NKI999", compute, "another key")
    assert ran == [k.name] * 3


def test_per_kernel_gate_of_nki521_sees_an_aliased_import():
    text = HEAD.replace("import nki.language as nl\n", "import nki.language as nl\nfrom nki.isa import "
                        "get_nc_version as gv\n") + """

@nki.jit
def branchy(x):
    out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    if gv() == nisa.nc_version.gen3:
        nisa.dma_copy(dst=out, src=x)
    return out
"""
    plain = text.replace("if gv() ==", "if nisa.get_nc_version() ==")
    for t in (text, plain):
        found = [f for f in check_text("k.py", t, CheckOptions(target="trn2")).findings if f.rule == "NKI521"]
        assert len(found) == 1, t


LEGACY = """from neuronxcc import nki
import neuronxcc.nki.language as nl


@nki.jit
def scale(x, out):
    t = nl.load(x[0:128, 0:512])
    nl.store(out[0:128, 0:512], value=nl.multiply(t, 2.0))


@nki.jit
def column(x):
    out = nl.ndarray((128, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((128,), dtype=nl.float32, buffer=nl.sbuf)
    nl.store(out[0:128, 0:1], value=acc)
    return out
"""


def test_legacy_output_parameter_and_tile_rank_are_remembered_per_kernel(monkeypatch):
    from nki_assist.rules.nki import kernel_io as nki_kernel_io, tile_rank as nki_tile_rank

    calls: dict[str, list[str]] = {"NKI520": [], "NKI113": []}
    for rule, module, name in (("NKI520", nki_kernel_io, "_kernel_outputs"), ("NKI113", nki_tile_rank, "_kernel_tiles")):
        original = getattr(module, name)

        def counted(nf, k, *args, _original=original, _rule=rule, **kwargs):
            calls[_rule].append(k.name)
            return _original(nf, k, *args, **kwargs)

        monkeypatch.setattr(module, name, counted)
    cache = ParseCache()
    first = check_text("k.py", LEGACY, CheckOptions(), cache=cache)
    assert {(f.rule, f.line) for f in first.findings} >= {("NKI520", 6), ("NKI113", 14)}
    assert calls == {"NKI520": ["scale", "column"], "NKI113": ["scale", "column"]}
    edited = LEGACY.replace("nl.multiply(t, 2.0)", "nl.multiply(t, 3.0)")
    warm = check_text("k.py", edited, CheckOptions(), cache=cache)
    assert calls == {"NKI520": ["scale", "column", "scale"], "NKI113": ["scale", "column", "scale"]}  # the edited one
    assert _dump(warm) == _dump(check_text("k.py", edited, CheckOptions()))
