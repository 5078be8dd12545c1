"""Issue 12 at the review level: numerics findings cite the statement the simulator traced them to (the
first NaN/Inf fault, the store of the first wrong element, the CUDA store of the same output), the
kernel-level location stays related, and findings that different stages report for one defect merge."""

from __future__ import annotations

from pathlib import Path

import pytest

from review_helpers import PORTS, line_of

from nki_assist.findings import Finding
from nki_assist.review import ReviewOptions, review_port
from nki_assist.review.stage_links import link_stages

CASES = Path(__file__).resolve().parents[2] / "evals" / "cases"


def test_nan_output_is_located_at_the_first_fault(reviews):
    r = reviews["rev_softmax_nomax"].review
    exp = line_of("rev_softmax_nomax", "softmax_nki.py", "op=nl.exp")
    store = line_of("rev_softmax_nomax", "softmax_nki.py", "nl.store(")
    (num,) = [f for f in r.findings if f.rule == "NUM104"]
    assert num.line == exp
    fault = num.evidence["first_fault"]
    assert (fault["line"], fault["op"], fault["kind"]) == (exp, "activation", "nonfinite")
    assert fault["inf"] > 0 and "from finite operands" in num.message
    assert num.evidence["stored_at"]["line"] == store
    assert {(x.line, x.message) for x in num.related} >= {(store, "store that writes the values out")}


def test_mismatch_without_a_static_cause_is_located_at_the_producing_store():
    r = review_port(str(PORTS / "rev_tail_epilogue_new" / "port.toml"), ReviewOptions(plots=False)).review
    tail_store = line_of("rev_tail_epilogue_new", "scale_bias_nki.py", "nisa.dma_copy(dst=y[0:R, c0:C]")
    (num,) = [f for f in r.findings if f.rule == "NUM102"]
    assert (num.line, num.category) == (tail_store, "output-mismatch")
    ev = num.evidence
    assert ev["first_mismatch_index"] == [0, 1024]  # C = 1100: two full 512-blocks, then the tail
    # x * alpha + beta expected, x * alpha - beta computed: off by 2 * beta
    assert ev["first_mismatch_expected"] - ev["first_mismatch_actual"] == pytest.approx(2 * 0.25, abs=1e-6)
    assert ev["producing_store"] == {"line": tail_store, "iteration": {}, "region": [[0, 128], [1024, 1100]]}
    cuda = line_of("rev_tail_epilogue_new", "scale_bias.cu", "y[(long)r * cols + c] =")
    assert ev["cuda_store_line"] == cuda
    related = {(x.file, x.line) for x in num.related}
    kernel = line_of("rev_tail_epilogue_new", "scale_bias_nki.py", "def scale_bias")
    assert {("scale_bias.cu", cuda), ("scale_bias_nki.py", kernel)} <= related


def test_fp8_scale_constant_cast_overflow_and_mismatch_form_one_item():
    r = review_port(str(CASES / "fp8_quant_ocp_scale_legacy" / "port.toml"), ReviewOptions(plots=False)).review
    by = {f.rule: f for f in r.findings}
    mig, num104 = by["MIG112"], by["NUM104"]
    assert mig.line == 10 and (mig.evidence["nki_max"], mig.evidence["cuda_max"]) == (240.0, 448.0)
    fault = num104.evidence["first_fault"]
    assert (num104.line, fault["kind"], fault["dtype"], fault["dtype_max"]) == (25, "overflow", "float8_e4m3", 240.0)
    assert fault["max_abs"] > 240 and mig.evidence["cast_line"] == 25
    item = next(it for it in r.assessment.items if mig.id in it.finding_ids)
    assert num104.id in item.finding_ids and by["NUM101"].id in item.finding_ids


def F(rule, line, **ev):
    return Finding(rule=rule, name="n", category="redundant-dma", severity="warning", message="m",
                   file="k_nki.py", line=line, evidence=ev)


def test_loop_invariant_load_confirmed_by_the_cost_model():
    nki109 = F("NKI109", 23, redundant_reads_expr="(R // 64) - 1")
    other = F("NKI109", 40)
    perf = F("PERF101", 23, by_line={"23": {"loaded_bytes": 4096, "unique_bytes": 512}})
    out = {f.line if f.rule == "NKI109" else 0: f for f in link_stages([nki109, other, perf])}
    assert out[23].evidence["confirmed_by"] == {"rule": "PERF101", "line": 23, "loaded_bytes": 4096,
                                                 "unique_bytes": 512}
    assert out[23].evidence["root_cause"] == out[0].evidence["root_cause"] == "redundant-hbm-loads"
    assert "confirmed_by" not in out[40].evidence  # the cost model measured nothing on that line


def test_anchored_mismatch_keeps_its_cause_and_names_the_producing_store_legacy(reviews):
    """rev_gemm_offset (legacy): MIG110 names the wrong lhsT offset, so NUM102 stays there; the store that
    wrote the first wrong element and the CUDA store of the same output become related locations."""
    r = reviews["rev_gemm_offset"].review
    load = line_of("rev_gemm_offset", "gemm_bias_nki.py", "a_tile = nl.load(lhsT[")
    store = line_of("rev_gemm_offset", "gemm_bias_nki.py", "nl.store(out[")
    (num,) = [f for f in r.findings if f.rule == "NUM102"]
    assert num.line == load and num.evidence["cause_rule"] == "MIG110"
    prod = num.evidence["producing_store"]
    idx = num.evidence["first_mismatch_index"]
    assert prod["line"] == store and prod["region"][0][0] <= idx[0] < prod["region"][0][1]
    assert set(prod["iteration"]) == {"m", "n"}  # the loop variables around the store
    assert (store, "statement the simulator traced it to") in {(x.line, x.message) for x in num.related}
    assert num.evidence["cuda_store_line"] == line_of("rev_gemm_offset", "gemm_bias.cu", "C[(size_t)row * N + col] =")
