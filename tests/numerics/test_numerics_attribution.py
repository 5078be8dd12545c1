"""Attribution of the scenario matrix to causes, on hand-built scenario results."""

from __future__ import annotations

import numpy as np

from nki_assist.contracts.runs import RunResult
from nki_assist.findings import Finding
from nki_assist.numerics.attribution import attribute, ragged_sizes
from nki_assist.numerics.growth import fit
from nki_assist.numerics.reference import ReferenceResult
from nki_assist.numerics.scenarios import NumericsResult, SizeResult, gpu_model_args, reduction_symbol
from nki_assist.rules.registry import get
from nki_assist.contracts.tolerance import compare

NKI = "k_nki.py"
RTOL, ATOL = 1e-2, 1e-3


def size_result(name, bindings, ref, outs: dict[str, np.ndarray | str], gpu=None, red=None):
    sr = SizeResult(name, bindings, red, ReferenceResult("ok", outputs=[ref]))
    for scen, out in outs.items():
        if isinstance(out, str):
            sr.runs[scen] = RunResult("builtin", out, error="AssertionError: tail")
        else:
            sr.runs[scen] = RunResult("builtin", "ok", outputs=[out])
            sr.agreements[(scen, "reference")] = [compare(out, ref, rtol=RTOL, atol=ATOL)]
    if gpu is not None:
        sr.gpu_model, sr.gpu_model_source = [gpu], "reference@float32"
        sr.agreements[("trainium", "gpu-model")] = [compare(outs["trainium"], gpu, rtol=RTOL, atol=ATOL)]
    return sr


def result(*sizes, red="K"):
    return NumericsResult(list(sizes), ["reference", "trainium", "trainium-fp32", "gpu-model"], "float32", red)


def static(rule, category, line):
    return Finding(rule=rule, name="x", category=category, severity="warning", message="m", file=NKI, line=line)


rng = np.random.default_rng(0)
REF = rng.normal(size=(128, 64))


def test_precision_failure_is_attributed_to_the_static_low_precision_line():
    bad = REF + 0.5  # fails with real storage
    res = result(size_result("aligned", {"M": 128, "K": 256}, REF, {"trainium": bad, "trainium-fp32": REF.copy()}))
    prior = [static("NKI301", "catastrophic-cancellation", 17)]
    (f,) = [f for f in attribute(res, prior, nki_path=NKI, kernel_line=5) if f.rule == "NUM101"]
    assert f.category == "catastrophic-cancellation" and f.line == 17 and f.confidence == "high"
    assert abs(f.evidence["max_abs"] - 0.5) < 1e-12 and f.evidence["fp32_max_abs"] == 0.0
    assert f.evidence["mismatch_fraction"] == 1.0


def test_fp32_failure_on_aligned_size_is_algorithmic_and_adopts_migration_category():
    wrong = REF * 2
    res = result(size_result("aligned", {"M": 128, "K": 256}, REF, {"trainium": wrong, "trainium-fp32": wrong}))
    prior = [static("MIG102", "missing-epilogue", 30)]
    (f,) = [f for f in attribute(res, prior, nki_path=NKI, kernel_line=5) if f.rule == "NUM102"]
    assert f.category == "missing-epilogue" and f.line == 30
    assert "even with fp32 storage" in f.message
    # without a static cause it stays output-mismatch, anchored at the kernel with medium confidence
    (g,) = [g for g in attribute(res, [], nki_path=NKI, kernel_line=5) if g.rule == "NUM102"]
    assert g.category == "output-mismatch" and g.line == 5 and g.confidence == "medium"


def test_ragged_only_failure_is_boundary_mask():
    ok = size_result("aligned", {"M": 128, "K": 256}, REF, {"trainium": REF.copy(), "trainium-fp32": REF.copy()})
    tail = REF.copy()
    tail[:, 60:] = np.nan
    rag = size_result("ragged", {"M": 128, "K": 200}, REF, {"trainium": tail, "trainium-fp32": tail})
    res = result(ok, rag)
    assert ragged_sizes(res) == {"ragged"}
    fs = attribute(res, [static("NKI205", "missing-boundary-mask", 12)], nki_path=NKI, kernel_line=5)
    rules = [f.rule for f in fs]
    assert "NUM103" in rules and "NUM102" not in rules
    f = next(f for f in fs if f.rule == "NUM103")
    assert f.line == 12 and f.evidence["ragged_bindings"] == {"K": 200}


def test_ragged_crash_counts_as_failure():
    ok = size_result("aligned", {"N": 512}, REF, {"trainium": REF.copy(), "trainium-fp32": REF.copy()})
    rag = size_result("ragged", {"N": 500}, REF, {"trainium": "kernel-error", "trainium-fp32": "kernel-error"})
    (f,) = [f for f in attribute(result(ok, rag), [], nki_path=NKI, kernel_line=3) if f.rule == "NUM103"]
    assert "kernel-error" in f.message


def test_nan_output_with_uninitialized_read_finding():
    out = REF.copy()
    out[0, 0] = np.nan
    res = result(size_result("aligned", {"M": 128}, REF, {"trainium": out, "trainium-fp32": out}))
    prior = [Finding(rule="SIM109", name="y", category="uninitialized-read", severity="error", message="m",
                     file=NKI, line=22, source="simulation")]
    (f,) = [f for f in attribute(res, prior, nki_path=NKI, kernel_line=5) if f.rule == "NUM104"]
    assert f.category == "uninitialized-read" and f.line == 22 and f.evidence["nan"] == 1


def test_growth_slopes_separate_low_precision_from_fp32():
    ks = [512, 2048, 8192, 32768]
    lin = fit(ks, [1e-3 * k for k in ks])
    sq = fit(ks, [1e-3 * k**0.5 for k in ks])
    assert abs(lin.slope - 1.0) < 1e-9 and abs(sq.slope - 0.5) < 1e-9 and lin.r2 > 0.999
    assert fit([512, 1024], [1.0, 2.0]) is None  # two points is not a fit


def test_linear_growth_finding_with_numbers():
    sizes = []
    for k in (512, 2048, 8192):
        ref = np.full((128, 1), float(k))
        trn = ref + 1e-3 * k  # error ~ k
        f32 = ref + 1e-3 * k**0.5
        sizes.append(size_result(f"k{k}", {"K": k}, ref, {"trainium": trn, "trainium-fp32": f32}, red=k))
    fs = attribute(result(*sizes), [], nki_path=NKI, kernel_line=4)
    (f,) = [f for f in fs if f.rule == "NUM105"]
    assert abs(f.evidence["slope"] - 1.0) < 0.01 and abs(f.evidence["fp32_slope"] - 0.5) < 0.01
    assert f.evidence["lengths"] == [512, 2048, 8192]
    assert get("NUM105").category == f.category == "low-precision-accumulation"


def test_gap_to_gpu_model_is_info_with_needed_tolerance():
    gpu = REF * (1 + 3e-6)  # a few fp32 roundings of a K = 512 reduction
    res = result(size_result("aligned", {"M": 128}, REF, {"trainium": REF.copy(), "trainium-fp32": REF.copy()},
                             gpu=gpu, red=512))
    (f,) = [f for f in attribute(res, [], nki_path=NKI, kernel_line=4) if f.rule == "NUM106"]
    assert f.severity.value == "info" and f.evidence["verdict"] == "rounding"
    assert f.evidence["needed_rtol"] >= f.evidence["max_rel"] and f.evidence["needed_rtol"] == 5e-6
    assert "not a defect" in f.message and "modelled (reference at the CUDA kernel's accumulation" in f.message


def test_no_findings_for_a_faithful_port():
    res = result(size_result("aligned", {"M": 128}, REF, {"trainium": REF.copy(), "trainium-fp32": REF.copy()}))
    assert attribute(res, [], nki_path=NKI, kernel_line=4) == []


def test_reduction_symbol_and_gpu_model_cast():
    class Spec:
        class I:
            def __init__(self, s):
                self.symbols = s
        inputs = {"a": I(["K", "M"]), "b": I(["K", "N"])}

    class Size:
        bindings = {"K": 1024, "M": 128, "N": 512}

    assert reduction_symbol(Spec, [(128, 512)], Size) == "K"

    class Conv:  # a padded feature map: HP = H + 2 input rows give H output rows, nothing is reduced over HP
        inputs = {"x": Spec.I(["HP", "WP"]), "w": Spec.I([])}

    class ConvSize:
        bindings = {"HP": 172, "WP": 172}

    assert reduction_symbol(Conv, [(128, 170, 170)], ConvSize) is None
    ConvSize.bindings = {"HP": 172, "WP": 300}  # WP is 130 wider than any output dim: a reduced axis
    assert reduction_symbol(Conv, [(128, 170)], ConvSize) == "WP"
    x = np.array([1.0 + 2**-12], dtype=np.float64)
    assert gpu_model_args([x], "float32")[0].dtype == np.float32
    assert gpu_model_args([x], "tf32")[0][0] == np.float32(1.0)  # 10 mantissa bits drop 2^-12
    assert gpu_model_args([x], "float16")[0].dtype == np.float16


def test_small_constant_dimension_is_not_ragged():
    a = size_result("s1", {"S": 128, "D": 64}, REF, {"trainium": REF.copy(), "trainium-fp32": REF.copy()})
    b = size_result("s2", {"S": 200, "D": 64}, REF, {"trainium": REF.copy(), "trainium-fp32": REF.copy()})
    c = size_result("s3", {"S": 256, "K": 96}, REF, {"trainium": REF.copy(), "trainium-fp32": REF.copy()})
    d = size_result("s4", {"S": 256, "K": 128}, REF, {"trainium": REF.copy(), "trainium-fp32": REF.copy()})
    assert ragged_sizes(result(a, b)) == {"s2"}  # S=200 leaves a partial tile; D=64 fits one
    assert ragged_sizes(result(c, d)) == {"s3"}  # K=96 is ragged because another size aligns K


def test_failing_everywhere_is_algorithmic_even_with_a_ragged_size():
    wrong = REF * 2
    aligned = size_result("aligned", {"S": 128}, REF, {"trainium": wrong, "trainium-fp32": wrong})
    rag = size_result("ragged", {"S": 200}, REF, {"trainium": wrong, "trainium-fp32": wrong})
    fs = attribute(result(aligned, rag), [], nki_path=NKI, kernel_line=5)
    (f,) = [f for f in fs if f.rule == "NUM102"]
    assert f.evidence["sizes"] == ["aligned", "ragged"]
    assert not [f for f in fs if f.rule == "NUM103"]


def test_fp32_failure_with_only_a_cancellation_finding_takes_its_line():
    wrong = REF + 1.0
    res = result(size_result("aligned", {"M": 128}, REF, {"trainium": wrong, "trainium-fp32": wrong}))
    (f,) = [f for f in attribute(res, [static("NKI403", "catastrophic-cancellation", 31)], nki_path=NKI,
                                 kernel_line=5) if f.rule == "NUM102"]
    assert f.category == "catastrophic-cancellation" and f.line == 31
