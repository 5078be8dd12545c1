"""Run-time value ranges (sim/value_ranges.py) backing NKI402 and NKI404 in review (review/ranges.py).

Fixture ports written for these tests (tests/fixtures/ports/range_*): a cumulative exp that stays finite at
the spec's 64 steps and overflows at 128, a max-subtracted softmax, a ScalarE sin of angles outside [-pi, pi].
"""

from __future__ import annotations

import numpy as np
import pytest
from review_helpers import PORTS, line_of
from run_evidence import numerics, size_result

from nki_assist.contracts.runs import RunResult, ValueRange
from nki_assist.findings import Severity
from nki_assist.api.hardware import get_target
from nki_assist.numerics.spec import load_spec
from nki_assist.review.reconcile import reconcile
from nki_assist.review.ranges import EXP_OVERFLOW_FP32, eval_trip, exp_limit
from nki_assist.review import ReviewOptions, review_port
from nki_assist.rules.registry import get
from nki_assist.sim import run_kernel
from nki_assist.toolchain import wire

TRN2 = get_target("trn2")
CUM, SOFTMAX, SIN = PORTS / "range_cum_decay", PORTS / "range_softmax_max", PORTS / "range_sin_wide"


def _sim(port, kernel: str, x: np.ndarray) -> RunResult:
    spec = load_spec(port / "port.toml")
    return run_kernel(str(spec.nki_path), kernel, [x], target=TRN2, lenient=True)


def _uniform(shape, lo, hi, seed=3):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape).astype(np.float32)


def _findings(port, rule):
    res = review_port(str(port / "port.toml"), ReviewOptions(plots=False))
    return [f for f in res.review.findings if f.rule == rule], res


# ---- the simulator records -----------------------------------------------------------------------

def test_the_simulator_records_the_exp_argument_range_and_the_loop_trip_count():
    x = _uniform((128, 64), 0.9, 1.1)
    run = _sim(CUM, "cum_decay", x)
    line = line_of("range_cum_decay", "cum_decay_nki.py", "op=nl.exp")
    (r,) = [v for v in run.value_ranges if v.func == "exp"]
    cs = np.cumsum(x.astype(np.float64), axis=1)
    assert r.line == line and r.calls == 64 and r.elements == 128 * 64 and r.nonfinite == 0
    assert r.max == pytest.approx(cs.max(), rel=1e-5) and r.min == pytest.approx(cs.min(), rel=1e-5)
    assert run.loop_trips == {line_of("range_cum_decay", "cum_decay_nki.py", "sequential_range"): 64}
    run2 = _sim(CUM, "cum_decay", _uniform((128, 128), 0.9, 1.1))
    (r2,) = run2.value_ranges
    assert r2.max > EXP_OVERFLOW_FP32 and r2.calls == 128  # twice the steps pass the fp32 limit


def test_the_softmax_exp_argument_never_exceeds_zero():
    x = np.random.default_rng(7).normal(0, 30, size=(256, 512)).astype(np.float32)
    run = _sim(SOFTMAX, "softmax_max", x)
    (r,) = [v for v in run.value_ranges if v.func == "exp"]
    assert r.max == 0.0 and r.elements == 256 * 512 and r.calls == 2
    assert r.min == pytest.approx(float((x - x.max(axis=1, keepdims=True)).min()), rel=1e-5)


def test_activation_arguments_outside_the_valid_range_are_counted():
    x = _uniform((128, 256), -6.0, 6.0, seed=11)
    (r,) = _sim(SIN, "sin_wide", x).value_ranges
    assert (r.func, r.below, r.above) == ("sin", int((x < -np.pi).sum()), int((x > np.pi).sum()))
    (r,) = _sim(SIN, "sin_wide", _uniform((128, 256), -3.0, 3.0)).value_ranges
    assert (r.below, r.above, r.elements) == (0, 0, 128 * 256)


@pytest.mark.filterwarnings("ignore:invalid value encountered in sin")
def test_nonfinite_arguments_are_counted_apart_from_the_finite_range():
    x = _uniform((128, 256), -1.0, 1.0)
    x[0, :3] = [np.nan, np.inf, 5.0]
    (r,) = _sim(SIN, "sin_wide", x).value_ranges
    assert r.nonfinite == 2 and r.max == 5.0 and r.above == 1


def test_value_ranges_and_loop_trips_cross_the_result_wire(tmp_path):
    run = RunResult("builtin", "ok", value_ranges=[ValueRange(line=19, func="exp", calls=64, elements=8192,
                                                              min=0.7, max=66.5, out_dtype="bfloat16")],
                    loop_trips={16: 64})
    wire.write(tmp_path, {"status": "ok", "value": run})
    back = wire.read(tmp_path, 2**26)["value"]
    assert back.value_ranges == run.value_ranges and back.loop_trips == {16: 64}


# ---- review: NKI402 / NKI404 against the ranges ---------------------------------------------------------

def test_cumulative_exp_finite_at_the_spec_size_is_shown_to_overflow_at_twice_it():
    (f,), res = _findings(CUM, "NKI402")
    assert f.evidence["cumulative"] is True and f.severity is Severity.WARNING  # not escalated: finite here
    rr = f.evidence["run_range"]
    row, proj = rr["steps64"], rr["2x:steps64"]
    assert 60 < row["max_arg"] < 70 and row["margin_fp32"] == pytest.approx(EXP_OVERFLOW_FP32 - row["max_arg"], abs=1e-3)
    assert (proj["trip_count"], proj["trip_count_2x"]) == (64, 128) and proj["overflows_2x"] is True
    assert proj["max_arg_2x"] == pytest.approx(2 * row["max_arg"], rel=1e-3)
    assert f.evidence["reconciled"]["status"] == "overflows-at-2x"
    assert f"on size `steps64` the argument reached {row['max_arg']:.1f} (margin {row['margin_fp32']:.1f} to fp32 " \
           "overflow)" in f.message
    assert "at 2x size `steps64` (C=128)" in f.message and "128 steps instead of 64" in f.message
    assert "past the 88.7 fp32 overflow" in f.message
    assert not [g for g in res.review.findings if g.rule == "NUM104"]  # the spec's size itself stays finite


def test_max_subtracted_softmax_has_no_exp_claim_and_a_hand_made_one_is_not_escalated():
    fs, _ = _findings(SOFTMAX, "NKI402")
    assert fs == []  # the bias is the negated max: the static rule stays quiet
    spec = load_spec(SOFTMAX / "port.toml")
    x = np.random.default_rng(7).normal(0, 30, size=(256, 512)).astype(np.float32)
    sr = size_result("rows256", {"R": 256}, np.zeros(4), np.zeros(4), file="softmax_max_nki.py")
    sr.runs["trainium"] = _sim(SOFTMAX, "softmax_max", x)
    line = line_of("range_softmax_max", "softmax_max_nki.py", "op=nl.exp")
    f = get("NKI402").finding("exp without max", file="softmax_max_nki.py", line=line)
    (g,) = reconcile([f], spec=spec, res=numerics(sr), source=spec.nki_path.read_text(), notes=[])
    assert g.severity is f.severity and "reconciled" not in g.evidence  # measured only: nothing to confirm
    assert g.evidence["run_range"]["rows256"]["max_arg"] == 0.0
    assert "the argument reached 0.0 (margin 88.7 to fp32 overflow)" in g.message


def test_cumulative_exp_far_below_overflow_at_twice_the_size_is_not_escalated():
    spec = load_spec(CUM / "port.toml")
    sr = size_result("steps64", {"C": 64}, np.zeros(4), np.zeros(4), file="cum_decay_nki.py")
    sr.runs["trainium"] = _sim(CUM, "cum_decay", _uniform((128, 64), 0.0, 0.2))  # sum ~6.4
    line = line_of("range_cum_decay", "cum_decay_nki.py", "op=nl.exp")
    f = get("NKI402").finding("running sum", file="cum_decay_nki.py", line=line, evidence={
        "cumulative": True, "loop_line": line - 3, "trip_count": None, "trip_expr": "C"})
    (g,) = reconcile([f], spec=spec, res=numerics(sr), source=spec.nki_path.read_text(), notes=[])
    proj = g.evidence["run_range"]["2x:steps64"]
    assert g.severity is Severity.WARNING and g.evidence["reconciled"]["status"] == "bounded"
    hi = g.evidence["run_range"]["steps64"]["max_arg"]
    assert proj["overflows_2x"] is False and proj["max_arg_2x"] == pytest.approx(2 * hi, rel=1e-3) and proj["max_arg_2x"] < 20
    assert "margin" in g.message and "overflow: exp gives inf" not in g.message


def test_an_exp_that_overflows_in_the_run_is_confirmed_and_shares_num104s_root_cause():
    case = PORTS.parent.parent.parent / "evals" / "cases" / "softmax_overflow_legacy"
    res = review_port(str(case / "port.toml"), ReviewOptions(plots=False))
    (f,) = [g for g in res.review.findings if g.rule == "NKI402"]
    (n,) = [g for g in res.review.findings if g.rule == "NUM104"]
    assert f.severity is Severity.ERROR and f.evidence["reconciled"]["status"] == "confirmed"
    hi = f.evidence["run_range"]["aligned"]["max_arg"]
    assert hi > EXP_OVERFLOW_FP32 and f"past the 88.7 fp32 overflow; NUM104 at line {n.line} is its result" in f.message
    assert f.evidence["root_cause"] == n.evidence["root_cause"]


def test_sin_outside_its_valid_range_is_confirmed_with_the_count():
    (f,), _ = _findings(SIN, "NKI404")
    x = np.random.default_rng(11).uniform(-6.0, 6.0, size=(128, 256))
    rr = f.evidence["run_range"]["wide"]
    assert f.severity is Severity.ERROR and f.evidence["reconciled"]["status"] == "confirmed"
    assert rr["elements"] == 128 * 256 and rr["below"] + rr["above"] > 0.4 * 128 * 256
    assert f"{rr['below'] + rr['above']} of 32768 arguments fell outside [-3.142, 3.142]" in f.message


def test_sin_inside_its_valid_range_stays_a_static_claim():
    spec = load_spec(SIN / "port.toml")
    sr = size_result("wide", {"F": 256}, np.zeros(4), np.zeros(4), file="sin_wide_nki.py")
    sr.runs["trainium"] = _sim(SIN, "sin_wide", _uniform((128, 256), -3.0, 3.0))
    line = line_of("range_sin_wide", "sin_wide_nki.py", "op=nl.sin")
    f = get("NKI404").finding("sin range", file="sin_wide_nki.py", line=line, severity=Severity.WARNING,
                              evidence={"function": "sin", "valid_min": -np.pi, "valid_max": np.pi})
    (g,) = reconcile([f], spec=spec, res=numerics(sr), source=spec.nki_path.read_text(), notes=[])
    assert g.severity is Severity.WARNING and "reconciled" not in g.evidence and g.evidence["run_range"]["wide"]
    assert "every argument stayed within [-3.142, 3.142] (size `wide`: 32768, min -3.0, max 3.0)" in g.message


def test_the_trip_count_and_dtype_limits():
    assert eval_trip("N // 64", {"N": 4096}) == 64 and eval_trip("0, N, 64", {"N": 256}) == 4
    assert eval_trip("n_tiles", {}) is None and eval_trip("N // 0", {"N": 4}) is None
    assert exp_limit("float16") == pytest.approx(np.log(65504.0)) and exp_limit("float32") == EXP_OVERFLOW_FP32


def test_nan_arguments_carried_in_from_an_out_of_bounds_read_do_not_confirm_the_exp_claim():
    res = review_port(str(PORTS / "oob_nan_exp" / "port.toml"), ReviewOptions(plots=False))
    (f,) = [g for g in res.review.findings if g.rule == "NKI402"]
    row = f.evidence["run_range"]["a"]
    assert row["nonfinite_args"] > 0 and row["max_arg"] < EXP_OVERFLOW_FP32
    assert f.severity is Severity.WARNING and "reconciled" not in f.evidence
    assert f"{row['nonfinite_args']} NaN/Inf arguments came from earlier instructions" in f.message
