"""NKI402 accuses an unguarded exp only when the code shows the exponent; with a tensor `scale=` the sign of
the exponent is the data's (exp(delta * A) with A < 0 in state-space models), so it says what to check."""

from __future__ import annotations

from nki_assist.findings import Severity
from nki_assist.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki_rules import run_nki_rules

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
