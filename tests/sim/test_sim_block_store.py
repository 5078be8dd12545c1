"""Per-block storage of legacy block-dimension tiles (sim/block_store.py, sim/block_scope.py).

Every kernel here runs twice, with per-block storage and with the whole-array model it replaces: outputs,
findings, trace and ledger peaks must be the same. The blocks a kernel's source proves dead are dropped, so
a tile used one block per iteration holds one block at a time."""

from __future__ import annotations

import ast
import textwrap

import numpy as np
import pytest

from nki_assist.api.hardware import get_target
from nki_assist.sim import block_scope, block_store, run_kernel

LEGACY = "import numpy as np\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"

ONE_AT_A_TIME = """
@nki.jit
def k(x):
    out = nl.ndarray((8, 2, 128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    buf = nl.ndarray((8, 2, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
    tmp = nl.ndarray((8, 2, 2, nl.par_dim(128), 256), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(8):
        for j in nl.affine_range(2):
            buf[i, j, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(x[i, j])
            for h in nl.affine_range(2):
                tmp[i, j, h] = nl.multiply(buf[i, j, :, h * 256:(h + 1) * 256], 2.0)
                buf[i, j, :, h * 256:(h + 1) * 256] = nl.add(tmp[i, j, h], 1.0)
            nl.store(out[i, j], value=buf[i, j])
    return out
"""

KERNELS = {
    "one block at a time": (ONE_AT_A_TIME, (8, 2, 128, 512)),
    "read again after the loop (no block dies)": (ONE_AT_A_TIME.replace(
        "    return out", "    nl.store(out[0, 0], value=nl.add(buf[3, 1], buf[5, 0]))\n    return out"),
        (8, 2, 128, 512)),
    "a view across blocks (one array again)": ("""
@nki.jit
def k(x):
    out = nl.ndarray((4, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    buf = nl.ndarray((4, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        buf[i] = nl.load(x[i])
    both = nl.copy(buf[1:3])
    nl.store(out[1:3], value=both)
    nl.store(out[0], value=buf[0])
    nl.store(out[3], value=buf[3])
    return out
""", (4, 128, 64)),
    "a never-written block is read (SIM111)": ("""
@nki.jit
def k(x):
    out = nl.ndarray((4, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    buf = nl.ndarray((4, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(3):
        buf[i] = nl.load(x[i])
    for i in nl.affine_range(4):
        nl.store(out[i], value=nl.add(buf[i], 1.0))
    return out
""", (4, 128, 64)),
    "iterations write one block (SIM109)": ("""
@nki.jit
def k(x):
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    buf = nl.ndarray((4, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        buf[0] = nl.load(x[i])
    nl.store(out, value=buf[0])
    return out
""", (4, 128, 64)),
    "masked tail leaves holes in a block": ("""
@nki.jit
def k(x):
    out = nl.ndarray((4, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    buf = nl.ndarray((4, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    ip = nl.arange(128)[:, None]
    jf = nl.arange(64)[None, :]
    for i in nl.affine_range(4):
        buf[i, ip, jf] = nl.load(x[i, ip, jf], mask=(i * 128 + ip < 400))
        nl.store(out[i, ip, jf], value=nl.exp(buf[i, ip, jf]), mask=(i * 128 + ip < 400))
    return out
""", (4, 128, 64)),
    "PSUM zeros accumulated per block": ("""
@nki.jit
def k(x):
    out = nl.ndarray((4, 128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((4, nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.psum, lazy_initialization=True)
    for i in nl.affine_range(4):
        for kk in nl.affine_range(2):
            a = nl.load(x[i, kk])
            acc[i] += nisa.nc_matmul(a, a)
        nl.store(out[i], value=nl.copy(acc[i]))
    return out
""", (4, 2, 128, 128)),
}


def _run(tmp_path, src, args, monkeypatch, blocks: bool):
    monkeypatch.setattr(block_store, "ENABLED", blocks)
    path = tmp_path / "k.py"
    path.write_text(LEGACY + textwrap.dedent(src))
    return run_kernel(str(path), None, args, target=get_target("trn2"))


def _same(a, b):
    assert a.status == b.status and a.error == b.error
    assert [(f.rule, f.severity, f.line, f.message, f.evidence) for f in a.findings] == \
        [(f.rule, f.severity, f.line, f.message, f.evidence) for f in b.findings]
    assert len(a.outputs) == len(b.outputs)
    for x, y in zip(a.outputs, b.outputs):
        assert np.asarray(x).dtype == np.asarray(y).dtype
        np.testing.assert_array_equal(np.asarray(x).view(np.uint8), np.asarray(y).view(np.uint8))
    assert a.trace == b.trace and a.peaks == b.peaks


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_per_block_storage_changes_nothing_the_run_reports(tmp_path, monkeypatch, name):
    src, shape = KERNELS[name]
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    dense = _run(tmp_path, src, [x], monkeypatch, blocks=False)
    parts = _run(tmp_path, src, [x], monkeypatch, blocks=True)
    _same(dense, parts)
    expected = {"a never-written block is read (SIM111)": "SIM111", "iterations write one block (SIM109)": "SIM109"}
    if name in expected:
        assert expected[name] in {f.rule for f in parts.findings}
    else:
        assert parts.status == "ok" and not [f for f in parts.findings if f.severity.value == "error"]


def _held(monkeypatch):
    """Record the most block bytes held at once and the blocks dropped."""
    seen = {"max": 0, "drops": 0, "densified": 0}
    make, drop, densify = block_store._materialise, block_store.drop, block_store.densify

    def materialise(st, b, key):
        part = make(st, b, key)
        seen["max"] = max(seen["max"], st.ctx.block_host_bytes)
        return part

    def dropped(st, values):
        seen["drops"] += 1
        return drop(st, values)

    def dens(st):
        seen["densified"] += st.parts is not None
        return densify(st)

    monkeypatch.setattr(block_store, "_materialise", materialise)
    monkeypatch.setattr(block_store, "drop", dropped)
    monkeypatch.setattr(block_store, "densify", dens)
    return seen


def test_blocks_proven_dead_are_dropped_so_one_nest_iteration_is_held(tmp_path, monkeypatch):
    x = np.random.default_rng(4).standard_normal((8, 2, 128, 512)).astype(np.float32)
    seen = _held(monkeypatch)
    res = _run(tmp_path, ONE_AT_A_TIME, [x], monkeypatch, blocks=True)
    assert res.status == "ok" and res.findings == []
    np.testing.assert_array_equal(res.outputs[0], x * np.float32(2) + np.float32(1))
    # buf dies per (i, j), tmp per (i, j, h): 16 + 32 drops; at most one buf block and two tmp blocks held
    assert seen["drops"] == 16 + 32 and seen["densified"] == 0
    assert seen["max"] <= 128 * 512 * 4 + 2 * 128 * 256 * 4


def test_blocks_read_after_their_nest_are_kept(tmp_path, monkeypatch):
    src, shape = KERNELS["read again after the loop (no block dies)"]
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    seen = _held(monkeypatch)
    res = _run(tmp_path, src, [x], monkeypatch, blocks=True)
    assert res.status == "ok"
    assert seen["drops"] == 32  # tmp's blocks still die per (i, j, h); buf's are used again after the nest
    assert seen["max"] >= 16 * 128 * 512 * 4


def _chain(src: str, name: str = "buf"):
    src = textwrap.dedent(src)
    tree = ast.parse(src)
    line = next(i for i, ln in enumerate(src.splitlines(), 1) if ln.strip().startswith(f"{name} = "))
    found, roots = block_scope.chain(tree, line, name, "k")
    assert not found or roots == {"nl"}  # the names the block-taking calls go through (checked to be NKI's)
    return found, src.splitlines()


def test_the_chain_names_each_loop_of_the_nest_and_its_block_dimension():
    (chain, lines) = _chain(LEGACY + ONE_AT_A_TIME)
    assert [(lines[lo - 1].strip(), d) for lo, _hi, d in chain] == [
        ("for i in nl.affine_range(8):", 0), ("for j in nl.affine_range(2):", 1)]
    (chain, _) = _chain(LEGACY + ONE_AT_A_TIME, "tmp")
    assert [d for _, _, d in chain] == [0, 1, 2]


@pytest.mark.parametrize("change", [
    ("    return out", "    y = buf[0, 0]\n    return out"),  # a view kept in a variable
    ("    return out", "    helper(buf)\n    return out"),  # the tile itself escapes
    ("    return out", "    return buf"),
    ("    return out", "    nl.store(out[0, 0], value=buf[1, 1])\n    return out"),  # used outside the nest
    ("    for i in nl.affine_range(8):", "    for i in range(8):"),  # a loop the simulator does not see end
])
def test_no_chain_when_a_block_could_be_used_again(change):
    src = ONE_AT_A_TIME.replace(*change)
    (chain, _) = _chain(LEGACY + src)
    assert chain == ()


def test_the_chain_stops_at_a_rebound_variable_or_an_intermediate_loop():
    rebound = ONE_AT_A_TIME.replace("            nl.store(out[i, j], value=buf[i, j])",
                                    "            nl.store(out[i, j], value=buf[i, j])\n            j = 0")
    (chain, _) = _chain(LEGACY + rebound)
    assert [d for _, _, d in chain] == [0]
    between = """
    @nki.jit
    def k(x):
        buf = nl.ndarray((4, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
        for r in nl.sequential_range(2):
            for i in nl.affine_range(4):
                buf[i] = nl.load(x[i])
                nl.store(x[i], value=buf[i])
    """
    (chain, _) = _chain(LEGACY + textwrap.dedent(between))
    assert chain == ()  # the loop over r re-runs i = 0..3: the blocks are not dead after one i


def test_a_block_handed_to_a_helper_module_is_never_dropped(tmp_path, monkeypatch):
    (tmp_path / "helper.py").write_text("def keep(t):\n    return t\n")
    src = ONE_AT_A_TIME.replace("nl.store(out[i, j], value=buf[i, j])", "nl.store(out[i, j], value=keep(buf[i, j]))")
    x = np.random.default_rng(4).standard_normal((8, 2, 128, 512)).astype(np.float32)
    seen = _held(monkeypatch)
    res = _run(tmp_path, "from helper import keep\n" + src, [x], monkeypatch, blocks=True)
    assert res.status == "ok" and res.findings == []
    np.testing.assert_array_equal(res.outputs[0], x * np.float32(2) + np.float32(1))
    assert seen["drops"] == 32  # tmp's blocks only: keep() is not NKI, it could hold on to buf's blocks
