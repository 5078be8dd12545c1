"""NKI front end: imports and dialects, kernel discovery, loops, positions, broken input."""

from __future__ import annotations

import pytest

from nki_assist.parse.nki import is_nki_source, parse_nki

LEGACY = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"
NEW = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n"


@pytest.mark.parametrize("src", [
    "import nki\n", "import nki.language as nl\n", "from neuronxcc import nki\n",
    "import neuronxcc.nki.language as nl\n", "from nki import language as nl\n",
    "from neuronxcc.nki import isa\n", "    import nki.isa as nisa\n", "from torch_neuronx import nki_jit\n",
])
def test_is_nki_source_accepts_every_import_form(src):
    assert is_nki_source("x = 1\n" + src)


@pytest.mark.parametrize("src", [
    "import numpy as np\n", "# uses nki later\nimport torch\n", "import nkix\n", "s = 'import nki'\n", "",
])
def test_is_nki_source_rejects_other_files(src):
    assert not is_nki_source(src)


@pytest.mark.parametrize("header,dialect", [
    (LEGACY, "legacy"), (NEW, "new"), ("import nki\nimport neuronxcc.nki.language as nl\n", "transitional"),
    ("from neuronxcc import nki\nimport neuronxcc.nki.language as nl\n", "legacy"),
    ("import numpy as np\n", "unknown"),
])
def test_dialect_per_file(header, dialect):
    nf = parse_nki(header + "\ndef f(a):\n    return a\n", "k.py")
    assert nf.dialect == dialect


def test_imports_map_aliases_to_modules():
    nf = parse_nki(LEGACY + "from neuronxcc.nki.language import par_dim as pd\n", "k.py")
    assert nf.imports["nl"] == "neuronxcc.nki.language"
    assert nf.imports["nisa"] == "neuronxcc.nki.isa"
    assert nf.imports["pd"] == "neuronxcc.nki.language.par_dim"


def test_kernel_discovery_decorators_and_subkernels():
    src = LEGACY + "from torch_neuronx import nki_jit\n" + """
def helper(t):
    return nl.exp(t)

def unrelated(x):
    return x + 1

@nki.jit
def k_plain(a):
    x = nl.load(a[0:128, 0:512])
    return helper(x)

@nki.jit(mode="simulation")
def k_called(a):
    return a

@nki_jit
def k_torch(a):
    return a

def wrapped(a):
    return a

wrapped_kernel = nki.jit(wrapped)
"""
    nf = parse_nki(src, "k.py")
    by_name = {k.name: k for k in nf.kernels}
    assert set(by_name) == {"helper", "k_plain", "k_called", "k_torch", "wrapped"}
    assert by_name["k_plain"].decorator == "nki.jit"
    assert by_name["k_called"].decorator == "nki.jit"
    assert by_name["k_torch"].decorator == "nki_jit"
    assert by_name["helper"].decorator is None  # sub-kernel
    assert by_name["wrapped"].decorator == "nki.jit"
    assert by_name["k_plain"].line == 13 and [p.name for p in by_name["k_plain"].params] == ["a"]


def test_without_decorated_kernels_functions_using_nki_are_kernels():
    nf = parse_nki(NEW + "\ndef body(a, out):\n    nisa.dma_copy(dst=out, src=a)\n\ndef util(x):\n    return x\n", "k.py")
    assert [k.name for k in nf.kernels] == ["body"]


def test_loops_kinds_and_trip_counts():
    src = LEGACY + """
@nki.jit
def k(a):
    K = 1024
    M, N = a.shape
    for i in nl.affine_range(K // 128):
        for j in nl.sequential_range(2, 10, 3):
            pass
    for s in nl.static_range(M // 128):
        pass
    for r in range(nl.tile_size.pmax // 32):
        pass
"""
    k = parse_nki(src, "k.py").kernels[0]
    kinds = [(lp.var, lp.kind, lp.trip_count, lp.trip_expr, lp.line) for lp in k.loops]
    assert kinds == [
        ("i", "affine_range", 8, "K // 128", 9),
        ("j", "sequential_range", 3, "2, 10, 3", 10),
        ("s", "static_range", None, "M // 128", 12),
        ("r", "range", 4, "nl.tile_size.pmax // 32", 14),
    ]
    assert k.loops[0].end_line == 11


def test_new_dialect_fori_and_dst_style_calls():
    src = NEW + """
@nki.jit
def k(a, b):
    t = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
    u = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
    nl.load(t, a[0:128, 0:512])
    x = nl.load(b[0:128, 0:512])
    nisa.tensor_tensor(dst=u, data1=t, data2=x, op=nl.add)
"""
    k = parse_nki(src, "k.py").kernels[0]
    loads = [c for c in k.calls if c.api == "nl.load"]
    assert loads[0].dst_style and loads[0].operand("dst").name == "t"
    assert loads[0].operand("src").shape == (128, 512)
    assert not loads[1].dst_style and loads[1].target == "x"
    tt = next(c for c in k.calls if c.api == "nisa.tensor_tensor")
    assert tt.op == "nl.add" and tt.operand("data1").dtype == "bfloat16"
    w = [a for a in k.assignments if a.op == "call" and a.name == "u"]
    assert w and w[0].reads >= {"t", "x"} and "u" not in w[0].reads


def test_positions_are_one_based_and_columns_count_characters():
    src = NEW + '\n@nki.jit\ndef k(a):\n    s = "héllo—ü"; t = nl.ndarray((128, 64), dtype=nl.float32)\n'
    k = parse_nki(src, "k.py").kernels[0]
    a = k.allocations[0]
    line = src.splitlines()[a.line - 1]
    assert a.line == 7
    assert line[a.col - 1:].startswith("nl.ndarray(")  # character column, not byte column
    assert a.col == line.index("nl.ndarray") + 1
    assert a.end_col == len(line) + 1


def test_broken_syntax_keeps_facts_for_the_parts_that_parse():
    src = LEGACY + """
@nki.jit
def good(a):
    t = nl.ndarray((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
    return a

@nki.jit
def bad(a):
    x = nl.load(a[0:128, 0:512]
    y = nl.exp(x +)
    return y

@nki.jit
def also_good(b):
    u = nl.zeros((128, 256), dtype=nl.bfloat16, buffer=nl.psum)
    return b
"""
    nf = parse_nki(src, "k.py")
    assert nf.syntax_errors and all(err[0] >= 11 for err in nf.syntax_errors)
    names = {k.name: k for k in nf.kernels}
    assert names["good"].allocations[0].bytes_per_partition == 2048
    assert names["also_good"].allocations[0].shape == (128, 256)
    assert names["also_good"].allocations[0].line == 18


@pytest.mark.parametrize("text", [
    "", "\x00\x01\x02binary\xff", "import nki\n" + "(" * 3000, "import nki\n@nki.jit\ndef k(:\n",
    "import nki\n" + "x = " + "1 + " * 5000 + "1\n", "import nki\ndef k(a):\n    " + "a[" * 400 + "0" + "]" * 400 + "\n",
])
def test_never_raises_on_bad_input(text):
    nf = parse_nki(text, "bad.py")
    assert nf.path == "bad.py"
