"""The distinct-dims size (numerics/distinct_size.py): review adds one size with pairwise distinct dimensions, none a
multiple of another, when the spec's sizes let two dimensions or tile constants coincide; never replaces a size.

Fixtures (ours): dims_tile_k_rows stores result rows at `m * TILE_K` where M is meant, with TILE_K = min(K, 128)
and TILE_M = min(M, 128), so every size with M, K >= 128 hides it; dims_tile_m_rows_ok is its fixed twin;
dims_assert_pow2 asserts powers of two through a helper the planner cannot read.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from nki_assist.api.hardware import get_target
from nki_assist.numerics.distinct_size import NAME, plan
from nki_assist.numerics.errors import SpecError
from nki_assist.numerics.spec import load_spec
from nki_assist.review import ReviewOptions, review_port

PORTS = Path(__file__).resolve().parents[1] / "fixtures" / "ports"
BUGGY = PORTS / "dims_tile_k_rows" / "port.toml"
FIXED = PORTS / "dims_tile_m_rows_ok" / "port.toml"
DISTINCT = PORTS / "dims_tile_m_rows_ok" / "port_distinct.toml"
POW2 = PORTS / "dims_assert_pow2" / "port.toml"
TRN2 = get_target("trn2")


def _plan(path: Path, mode: str = "auto", sizes: list[str] | None = None):
    spec = load_spec(path)
    chosen = [spec.size(n) for n in sizes] if sizes else spec.sizes
    return plan(spec, chosen, TRN2, mode)


def _apart(values) -> bool:
    return all(a != b and a % b and b % a for a, b in itertools.combinations(values, 2))


# ---- the plan (no kernel runs) ----------------------------------------------------------------------

def test_tile_constants_that_coincide_at_every_size_get_a_size_that_separates_them():
    p = _plan(BUGGY)
    assert [(c.kind, c.names, c.values, c.movable) for c in p.coincidences] == \
        [("tiles", ("TILE_K", "TILE_M"), [128, 128], True)]
    assert p.size is not None and p.size.name == NAME
    assert p.size.bindings == {"K": 48, "M": 256, "N": 80}
    assert p.tiles == {"TILE_K": 48, "TILE_M": 128, "TILE_N": 80}
    b = p.size.bindings
    assert _apart(b.values())
    # legal for the kernel: its tiles divide every dimension, and M (the axis TILE_K is misused on) has two tiles
    assert b["K"] % p.tiles["TILE_K"] == 0 and b["M"] % p.tiles["TILE_M"] == 0 and b["N"] % p.tiles["TILE_N"] == 0
    assert b["M"] // p.tiles["TILE_M"] == 2
    assert "TILE_K = TILE_M = 128 at every size" in p.why and "K=48, M=256, N=80" in p.why


def test_equal_dimensions_at_every_size_get_a_size_that_separates_them():
    p = _plan(PORTS / "rev_gemm_offset" / "port.toml")  # M = K = 256, tiles are the literals 128 and 512
    assert [(c.kind, c.names, c.values) for c in p.coincidences] == [("dims", ("K", "M"), [256])]
    assert p.size.bindings == {"K": 384, "M": 640, "N": 512}  # 3, 5 and 1 tiles: aligned, apart, smallest
    assert _apart(p.size.bindings.values())


def test_sizes_that_already_tell_every_role_apart_add_nothing():
    p = _plan(DISTINCT)
    assert p.coincidences == [] and p.size is None and p.notes == []
    # one of its sizes alone has M = K = 256 and TILE_K = TILE_M: selecting it brings the size back
    p = _plan(DISTINCT, sizes=["square"])
    assert {c.names for c in p.coincidences} == {("K", "M"), ("TILE_K", "TILE_M")}
    assert p.size is not None and _apart(p.size.bindings.values())


def test_modes_off_and_always():
    assert _plan(BUGGY, "off").size is None and _plan(BUGGY, "off").coincidences == []
    p = _plan(DISTINCT, "always")
    assert p.size is not None and p.coincidences == [] and p.reason == "asked for (distinct_dims = always)"
    assert _apart(p.size.bindings.values())


def test_literal_tiles_that_coincide_are_a_note_not_a_size():
    # TILE_K = TILE_M = 128 as constants: no size changes them, so only the static rule can judge their roles
    p = _plan(PORTS / "rev_gemm_nobias" / "port.toml")
    assert p.size is None
    assert [(c.names, c.movable) for c in p.coincidences] == [(("TILE_K", "TILE_M"), False)]
    assert len(p.notes) == 1 and "no size can show a mix-up" in p.notes[0] and "NKI211" in p.notes[0]


def test_no_legal_size_is_said_not_invented():
    # M and N must be multiples of BLOCK_M = BLOCK_N = 1024 (kernel defaults): within 2048 they divide each other
    p = _plan(PORTS / "unseen_matmul_blocked" / "port.toml")
    assert p.size is None
    assert any(n.startswith("distinct-dims: no size with pairwise distinct dimensions") and "M = N = 1024" in n
               for n in p.notes)


def test_spec_option(tmp_path):
    def spec_with(review: str) -> Path:
        text = BUGGY.read_text().replace('[port]', f'{review}\n[port]')
        text = text.replace('"matmul_tiles_nki.py"', json.dumps(str(BUGGY.parent / "matmul_tiles_nki.py")))
        text = text.replace('"matmul_tiles.cu"', json.dumps(str(BUGGY.parent / "matmul_tiles.cu")))
        text = text.replace('"reference.py:', json.dumps(str(BUGGY.parent / "reference.py"))[:-1] + ':')
        p = tmp_path / "port.toml"
        p.write_text(text)
        return p

    assert load_spec(BUGGY).review.distinct_dims == "auto"
    assert load_spec(spec_with('[review]\ndistinct_dims = "off"\n')).review.distinct_dims == "off"
    with pytest.raises(SpecError, match="review.distinct_dims"):
        load_spec(spec_with('[review]\ndistinct_dims = "sometimes"\n'))


# ---- reviews (the kernels run) ----------------------------------------------------------------------

CASES = {"buggy-off": (BUGGY, "off"), "buggy": (BUGGY, None), "fixed": (FIXED, None), "distinct": (DISTINCT, None),
         "pow2": (POW2, None)}


@pytest.fixture(scope="module")
def reviews():
    def one(item):
        name, (path, mode) = item
        return name, review_port(str(path), ReviewOptions(plots=False, distinct_dims=mode)).review

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, CASES.items()))


def _sizes(review) -> list[str]:
    return [s["name"] for s in review.numerics.sizes]


def _failing(review) -> set[str]:
    return {r["size"] for r in review.numerics.matrix if r["against"] == "reference" and not r["passed"]}


def test_without_the_added_size_the_mix_up_is_invisible_at_run_time(reviews):
    r = reviews["buggy-off"]
    assert _sizes(r) == ["square", "tall"] and _failing(r) == set()
    assert not [f for f in r.findings if f.severity.value == "error"]
    assert [f.severity.value for f in r.findings if f.rule == "NKI211"] == ["warning"]  # static, unconfirmed
    assert "distinct_dims" not in (r.numerics.model_extra or {})


def test_with_the_added_size_the_run_shows_the_mismatch_there(reviews):
    r = reviews["buggy"]
    assert _sizes(r) == ["square", "tall", NAME]  # added after the spec's sizes, which all stay
    added = r.numerics.sizes[-1]
    assert (added["K"], added["M"], added["N"], added["added_by"]) == (48, 256, 80, "nki-assist")
    assert _failing(r) == {NAME}
    (num102,) = [f for f in r.findings if f.rule == "NUM102"]
    assert num102.severity.value == "error" and num102.evidence["sizes"] == [NAME]
    assert num102.evidence["added_size"] is True and num102.line == 30
    assert f"Size {NAME} (K=48, M=256, N=80; TILE_K=48, TILE_M=128, TILE_N=80) was added by nki-assist" \
        in num102.message
    # rows 176..255 are never stored: m * TILE_K steps 48 where the 128-row tiles need 128
    unwritten = [f for f in r.findings if f.rule == "SIM112"]
    assert unwritten and unwritten[0].evidence["size"] == NAME and unwritten[0].evidence["unwritten_elements"] == 80 * 80
    # the static finding is confirmed by the run and becomes an error
    (nki211,) = [f for f in r.findings if f.rule == "NKI211"]
    assert nki211.severity.value == "error" and nki211.line == 30
    assert nki211.evidence["run_evidence"] == {"status": "confirmed", "size": NAME,
                                               "bindings": {"K": 48, "M": 256, "N": 80},
                                               "tiles": {"TILE_K": 48, "TILE_M": 128, "TILE_N": 80}}
    assert nki211.evidence["reconciled"]["status"] == "confirmed" and nki211.evidence["reconciled"]["sizes"] == [NAME]
    # the confirmed static finding leads the item's fix: the tile of the M axis, not the symptom's literal
    (item,) = [i for i in r.assessment.items if nki211.id in i.finding_ids]
    assert item.fix.startswith("Use the M tile size `TILE_M` here instead of `TILE_K`.")
    dd = r.numerics.model_extra["distinct_dims"]
    assert dd["ran"] is True and dd["added_by"] == "nki-assist" and dd["bindings"] == {"K": 48, "M": 256, "N": 80}
    # the cost model and the GPU gap stay on the spec's sizes
    assert r.performance.model_extra["size"] in ("square", "tall")
    assert all(f.evidence.get("size") != NAME for f in r.findings if f.rule == "NUM106")
    assert r.assessment.verdict == "block" and r.unchecked == []


def test_the_fixed_kernel_runs_the_added_size_and_matches(reviews):
    r = reviews["fixed"]
    assert _sizes(r) == ["square", "tall", NAME] and _failing(r) == set()
    assert {row["size"] for row in r.numerics.matrix} == {"square", "tall", NAME}
    assert not [f for f in r.findings if f.severity.value in ("error", "warning")]
    assert r.assessment.verdict != "block"


def test_distinct_sizes_get_no_added_size(reviews):
    r = reviews["distinct"]
    assert _sizes(r) == ["square", "narrow"]
    assert "distinct_dims" not in (r.numerics.model_extra or {})


def test_a_size_the_kernel_refuses_is_dropped_with_a_note(reviews):
    r = reviews["pow2"]
    assert _sizes(r) == ["square"] and r.unchecked == []
    assert not [f for f in r.findings if f.evidence.get("added_size") or f.rule == "SIM114"]
    dd = r.numerics.model_extra["distinct_dims"]
    assert dd["ran"] is False and dd["bindings"] == {"K": 384, "M": 640, "N": 512}
    assert dd["refused"] == "AssertionError: M and K must be powers of two"
    assert any(n.startswith(f"distinct-dims: the kernel's assert refuses the added size {NAME}") for n in r.notes)


def test_cli_flag_turns_it_off():
    def run(*extra):
        return subprocess.run([sys.executable, "-m", "nki_assist", "review", str(BUGGY), "--format", "json", "-q",
                               *extra], capture_output=True, text=True, timeout=300)

    off = run("--distinct-dims", "off")
    assert off.returncode == 0, off.stderr  # NKI211 alone is a warning: nothing at --fail-on error
    assert [s["name"] for s in json.loads(off.stdout)["numerics"]["sizes"]] == ["square", "tall"]


def test_many_coinciding_dimensions_are_searched_within_bounds(tmp_path):
    # six dimensions, all 128 at the only size, each tiled by 16: the search is bounded and still finds a size
    loops = "".join(f"    for i in nl.affine_range({d} // 16):\n        pass\n" for d in "ABCDEF")
    (tmp_path / "k.py").write_text("import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n\n\n"
                                   "@nki.jit\ndef k(a, b, c):\n    A, B = a.shape\n    C, D = b.shape\n"
                                   f"    E, F = c.shape\n{loops}    return a\n")
    (tmp_path / "port.toml").write_text(
        '[port]\nname = "six"\nnki = "k.py"\n[inputs]\n'
        'a = { shape = ["A", "B"], dtype = "float32" }\nb = { shape = ["C", "D"], dtype = "float32" }\n'
        'c = { shape = ["E", "F"], dtype = "float32" }\n[[sizes]]\nname = "s"\n'
        + "".join(f"{d} = 128\n" for d in "ABCDEF"))
    import time

    t0 = time.perf_counter()
    p = _plan(tmp_path / "port.toml")
    assert time.perf_counter() - t0 < 2.5
    assert len(p.coincidences) == 15 and p.size is not None
    values = list(p.size.bindings.values())
    assert _apart(values) and all(v % 16 == 0 for v in values)
