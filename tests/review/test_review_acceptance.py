"""Acceptance: each planted defect in a port fixture is reported with the right category and line,
the faithful port gets info findings only, and the error-growth slopes tell bf16 from fp32 accumulation."""

from __future__ import annotations

from review_helpers import line_of


def _at(review, category, line, severities=("error", "warning")):
    return [f for f in review.findings if f.category == category and f.line == line and f.severity.value in severities]


def test_missing_bias_is_a_missing_epilogue_at_the_store(reviews):
    r = reviews["rev_gemm_nobias"].review
    store = line_of("rev_gemm_nobias", "gemm_bias_nki.py", "nisa.dma_copy(dst=out[")
    hits = _at(r, "missing-epilogue", store)
    assert {f.rule for f in hits} >= {"MIG102", "NUM102"}
    mig = next(f for f in hits if f.rule == "MIG102")
    assert mig.source == "migration" and mig.severity.value == "error"
    assert mig.related[0].file == "gemm_bias.cu"
    assert mig.related[0].line == line_of("rev_gemm_nobias", "gemm_bias.cu", "acc + bias[col]")
    num = next(f for f in hits if f.rule == "NUM102")
    assert num.evidence["mismatch_fraction"] > 0.5  # bias ~ N(1, 1) is missing from every element


def test_wrong_lhsT_offset_is_an_indexing_error_at_the_load(reviews):
    r = reviews["rev_gemm_offset"].review
    load = line_of("rev_gemm_offset", "gemm_bias_nki.py", "a_tile = nl.load(lhsT[")
    hits = _at(r, "indexing-error", load)
    assert {"MIG110", "NUM102"} <= {f.rule for f in hits}
    mig = next(f for f in hits if f.rule == "MIG110")
    assert mig.evidence["kind"] == "output-tile-not-selected" and mig.evidence["loop_vars"] == ["m"]
    # the numerics confirm it fails even with fp32 storage, and name the same line
    num = next(f for f in hits if f.rule == "NUM102")
    assert num.evidence["cause_rule"] == "MIG110"


def test_unmasked_ragged_tail_fails_only_on_the_ragged_size(reviews):
    r = reviews["rev_bias_ragged"].review
    loop = line_of("rev_bias_ragged", "add_bias_nki.py", "for t in nl.affine_range(rows // 128)")
    hits = _at(r, "missing-boundary-mask", loop)
    rules = {f.rule for f in hits}
    assert {"MIG101", "NUM103"} <= rules
    num = next(f for f in hits if f.rule == "NUM103")
    assert num.evidence["ragged_bindings"] == {"R": 200}
    mig = next(f for f in hits if f.rule == "MIG101")
    assert mig.related[0].line == line_of("rev_bias_ragged", "add_bias.cu", "if (r < rows && c < cols)")


def test_exp_without_max_subtraction_is_an_overflow_at_the_exp(reviews):
    r = reviews["rev_softmax_nomax"].review
    exp = line_of("rev_softmax_nomax", "softmax_nki.py", "op=nl.exp")
    hits = _at(r, "overflow-risk", exp)
    assert {"NKI402", "NUM104"} <= {f.rule for f in hits}
    num = next(f for f in hits if f.rule == "NUM104")
    assert num.evidence["nan"] + num.evidence["inf"] > 0
    # the CUDA kernel's __expf is named as an approximation difference (info), on the same exp line
    assert any(f.rule == "MIG107" and f.line == exp and f.severity.value == "info" for f in r.findings)


def test_one_pass_bf16_variance_is_cancellation_at_the_subtraction(reviews):
    r = reviews["rev_variance_bf16"].review
    sub = line_of("rev_variance_bf16", "row_var_nki.py", "op=nl.subtract")
    hits = _at(r, "catastrophic-cancellation", sub)
    assert {"NKI403", "NUM101"} <= {f.rule for f in hits}
    num = next(f for f in hits if f.rule == "NUM101")
    # fails with real dtypes, passes with fp32 storage: precision, not algorithm
    assert num.evidence["fp32_max_abs"] < 1e-2 < num.evidence["max_abs"]


def test_bf16_running_sum_is_low_precision_accumulation_at_the_add(reviews):
    r = reviews["rev_rowsum_bf16"].review
    add = line_of("rev_rowsum_bf16", "row_sum_nki.py", "data1=acc, data2=part")
    hits = _at(r, "low-precision-accumulation", add)
    assert {"MIG104", "NKI401", "NUM105"} <= {f.rule for f in hits}
    mig = next(f for f in hits if f.rule == "MIG104")
    assert mig.evidence["cuda_dtype"] == "float" and mig.evidence["nki_dtype"] == "bfloat16"
    assert mig.related[0].line == line_of("rev_rowsum_bf16", "row_sum.cu", "acc += __bfloat162float")


def test_faithful_port_gets_info_findings_only(reviews):
    r = reviews["rev_rowsum_fp32"].review
    bad = [(f.rule, f.severity.value, f.message) for f in r.findings if f.severity.value != "info"]
    assert bad == []
    rules = {f.rule for f in r.findings}
    assert "MIG106" in rules  # warp-shuffle tree vs sequential reduction: explained, not a defect
    assert "NUM106" in rules


def test_error_growth_slopes_separate_bf16_from_fp32_accumulation(reviews):
    bf16 = {g["scenario"]: g for g in reviews["rev_rowsum_bf16"].review.numerics.growth}["trainium"]
    fp32 = {g["scenario"]: g for g in reviews["rev_rowsum_fp32"].review.numerics.growth}["trainium"]
    assert bf16["lengths"] == fp32["lengths"] == [512, 2048, 8192, 65536]
    assert bf16["slope"] >= 0.85 and fp32["slope"] <= 0.6
    assert bf16["slope"] - fp32["slope"] >= 0.3
    num105 = [f for f in reviews["rev_rowsum_bf16"].review.findings if f.rule == "NUM105"]
    assert len(num105) == 1
    f = num105[0]
    assert f.evidence["slope"] == round(bf16["slope"], 3)
    assert f"slope {bf16['slope']:.2f}" in f.message and "65536" in f.message
    assert not any(f.rule == "NUM105" for f in reviews["rev_rowsum_fp32"].review.findings)


def test_every_size_that_ran_gets_its_own_time_estimate(reviews):
    p = reviews["rev_rowsum_fp32"].review.performance
    per = p.model_extra["per_size_us"]
    assert list(per) == ["L512", "L2048", "L8192", "L65536"] and p.model_extra["size"] == "L65536"
    assert per["L65536"] == p.estimated_time_us
    # a row sum streams its input: the time grows with L (128x more data from L512 to L65536)
    times = list(per.values())
    assert times == sorted(times) and times[-1] > 8 * times[0]
