"""NKI402 accuses an unguarded exp only when the code shows the exponent; with a tensor `scale=` the sign of
the exponent is the data's (exp(delta * A) with A < 0 in state-space models), so it says what to check."""

from __future__ import annotations

from nki_assist.findings import Severity
from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki.run import run_nki_rules

KERNEL = '''import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def decay(delta, rate):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    d = nl.load(delta[0:128, 0:512])
    r = nl.load(rate[0:128, 0:1])
    e = nisa.activation(op=nl.exp, data=d, scale=SCALE)
    nl.store(out[0:128, 0:512], value=e)
    return out
'''


def _exp_finding(scale: str):
    found = [f for f in run_nki_rules(parse_nki(KERNEL.replace("SCALE", scale), "k.py"), get_target("trn2"))
             if f.rule == "NKI402"]
    assert len(found) == 1
    return found[0]


def test_a_tensor_scale_makes_it_a_low_confidence_info():
    f = _exp_finding("r")
    assert (f.severity, f.confidence) == (Severity.INFO, "low")
    assert "scaled by `r`" in f.message and f.evidence["scale"] == "r"


def test_a_constant_scale_is_still_a_warning():
    for scale in ("2.0", "0.125"):
        f = _exp_finding(scale)
        assert (f.severity, f.confidence) == (Severity.WARNING, "medium")
        assert "scale" not in f.evidence


CUMULATIVE = '''import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def decay(g_cumsum):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    gc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=gc, src=g_cumsum)
    neg = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=neg, data=gc, op0=nl.multiply, operand0=-1.0)
    e = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=e, op=nl.exp, data=DATA, bias=None, scale=1.0)
    nisa.dma_copy(dst=out, src=e)
    return out
'''


def _cumulative(data: str):
    src = CUMULATIVE.replace("DATA", data)
    return [f for f in run_nki_rules(parse_nki(src, "k.py"), get_target("trn2")) if f.rule == "NKI402"]


def test_exp_of_a_negated_cumulative_sum_through_copies_is_a_warning_at_the_exp():
    (f,) = _cumulative("neg")
    assert (f.line, f.severity, f.confidence) == (14, Severity.WARNING, "medium")
    assert f.evidence["cumulative_tensor"] == "g_cumsum" and f.evidence["negated"] is True
    assert f.evidence["chain_lines"] == [10, 12] and sorted(r.line for r in f.related) == [10, 12]
    assert "negated cumulative sum `g_cumsum`" in f.message


def test_exp_of_the_cumulative_sum_itself_is_an_info():
    # bounded by 1 for log-decay terms (<= 0): the sign is the data's, so nothing is accused
    (f,) = _cumulative("gc")
    assert (f.severity, f.confidence) == (Severity.INFO, "low") and f.evidence["negated"] is False


def test_bias_none_is_no_shift_but_a_tensor_bias_is():
    src = CUMULATIVE.replace("DATA", "neg").replace("bias=None", "bias=gc")
    assert [f for f in run_nki_rules(parse_nki(src, "k.py"), get_target("trn2")) if f.rule == "NKI402"] == []
