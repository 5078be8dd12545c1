"""Re-tiling plans for SBUF overflow (issue 29): every number of the plan recomputed here from the shapes."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from nki_assist.api.hardware import get_target
from nki_assist.perf.retile import plan_sbuf_retile, plan_text
from nki_assist.sim import run_kernel

FIX = Path(__file__).resolve().parent.parent / "fixtures"
TRN2 = get_target("trn2")
F32 = 4


def _run(name: str, hp: int):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((128, hp, hp)).astype(np.float32)
    w = rng.standard_normal((128, 9)).astype(np.float32)
    res = run_kernel(str(FIX / "perf" / name), None, [x, w], target=TRN2)
    ref = sum(x[:, dy:dy + hp - 2, dx:dx + hp - 2] * w[:, dy * 3 + dx][:, None, None]
              for dy in range(3) for dx in range(3))
    assert res.status == "ok" and np.allclose(res.outputs[0], ref, rtol=1e-5, atol=1e-5)
    return res


# fixture -> tiles that scale with the band: (padded?, buffers); the legacy one has a multiply temporary too
CASES = {"dwconv_whole_map.py": [(True, 2), (False, 2), (False, 1)],
         "new_dwconv_whole_map.py": [(True, 2), (False, 2)]}


@pytest.mark.parametrize("name", sorted(CASES))
def test_plan_for_a_conv_that_holds_its_whole_feature_map(name):
    hp, h = 172, 170
    res = _run(name, hp)
    assert "SIM104" in {f.rule for f in res.findings}
    p = plan_sbuf_retile(res, TRN2)
    assert p is not None and (p.axis, p.extent, p.halo, p.buffers) == (1, h, 2, 2)
    budget = TRN2.sbuf_usable_bytes_per_partition
    fixed = 9 * F32  # the weights stay whole

    def need(band: int, buffers: int = 2) -> int:
        return fixed + sum((buffers if n == 2 else 1) * (band + (2 if padded else 0)) * (hp if padded else h) * F32
                           for padded, n in CASES[name])

    assert p.before_bytes == fixed + sum((hp * hp if padded else h * h) * F32 for padded, _ in CASES[name])
    assert p.before_bytes > budget
    widest = max(b for b in range(1, h + 1) if need(b) <= budget)  # the largest band that fits, double-buffered
    assert p.bands == math.ceil(h / widest) and p.band == math.ceil(h / p.bands)
    assert p.after_bytes == need(p.band) <= budget
    single = max(b for b in range(1, h + 1) if need(b, 1) <= budget)
    assert p.single_buffer_band == math.ceil(h / math.ceil(h / single))
    by_name = {t["tensor"]: t for t in p.tiles}
    assert by_name["xt"]["bytes_after"] == (p.band + 2) * hp * F32
    assert by_name["acc"]["bytes_after"] == p.band * h * F32
    # HBM: each band loads band + 2 rows of the padded map; 2 rows per band boundary are read twice
    assert p.load_bytes_before == 128 * hp * hp * F32 + 128 * 9 * F32
    assert p.load_bytes_after == p.load_bytes_before + (p.bands - 1) * 2 * 128 * hp * F32
    assert p.dma_after == 2 * p.bands + 1  # a load and a store per band, the weights once
    assert p.est_after_us is not None and p.est_before_us is not None
    assert 0.95 < p.est_after_us / p.est_before_us < 1.1  # same work, a few more DMAs
    text = plan_text(p)
    for s in (f"{p.bands} bands of {p.band} rows", "plus 2 halo rows", f"{p.band + 2} input rows",
              f"{p.after_bytes / 1024:.1f} KiB with the plan", f"{budget / 1024:.1f} KiB usable",
              f"{p.reread_percent:+.1f}%", f"{p.est_after_us:.1f} us"):
        assert s in text, s


def test_no_plan_when_the_map_fits():
    res = _run("dwconv_whole_map.py", 34)
    assert res.findings == [] and plan_sbuf_retile(res, TRN2) is None


def test_plan_reaches_the_review_fix(tmp_path):
    from nki_assist.review import ReviewOptions, review_port

    r = review_port(str(FIX / "ports" / "retile_dwconv" / "port.toml"), ReviewOptions(plots=False)).review
    sbuf = [f for f in r.findings if f.rule == "SIM104"]
    assert sbuf and all("retile_plan" in f.evidence for f in sbuf)
    plan = sbuf[0].evidence["retile_plan"]
    assert plan["size"] == "large" and plan["halo"] == 2 and plan["after_bytes"] <= plan["budget"]
    assert all(f.fix.startswith(f"Band axis 1 (the first free axis, 170 rows) into {plan['bands']} bands")
               for f in sbuf)
    # a kernel that cannot allocate its SBUF gets no time estimate
    assert r.performance.estimated_time_us is None and r.performance.model_extra["not_estimated"] == "SIM104"
    item = next(i for i in r.assessment.items if set(i.finding_ids) & {f.id for f in sbuf})
    assert f"{plan['bands']} bands of {plan['band']} rows" in item.fix


# eval case -> tiles that scale with the band: (padded?, buffers); both hold a product tile beside the accumulator
EVAL_CASES = {"dwconv_sbuf_whole_map_legacy": [(True, 2), (False, 2), (False, 1)],
              "dwconv_sbuf_whole_map_new": [(True, 2), (False, 2), (False, 1)]}


@pytest.mark.parametrize("case", sorted(EVAL_CASES))
def test_eval_case_fix_text_carries_the_recomputed_plan(reviewed_ports, case):
    """The eval cases' review items say the plan whose numbers this test recomputes from the shapes (trn1, a
    127x127 padded map)."""
    r = reviewed_ports[f"evals/cases/{case}/port.toml"].review
    hp, h, budget = 127, 125, get_target("trn1").sbuf_usable_bytes_per_partition
    fixed = 9 * F32

    def need(band: int) -> int:
        return fixed + sum((n if n == 2 else 1) * (band + (2 if padded else 0)) * (hp if padded else h) * F32
                           for padded, n in EVAL_CASES[case])

    widest = max(b for b in range(1, h + 1) if need(b) <= budget)
    bands = math.ceil(h / widest)
    band = math.ceil(h / bands)
    (item,) = [it for it in r.assessment.items if any(
        f.rule == "SIM104" for f in r.findings if f.id in it.finding_ids)]
    assert f"into {bands} bands of {band} rows" in item.fix and f"each band loads {band + 2} input rows" in item.fix
    assert f"{need(band) / 1024:.1f} KiB with the plan" in item.fix
    before = fixed + sum((hp * hp if padded else h * h) * F32 for padded, _ in EVAL_CASES[case])
    assert f"Per partition: {before / 1024:.1f} KiB as written" in item.fix
