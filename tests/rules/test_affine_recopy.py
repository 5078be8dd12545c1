"""NKI201 on `x = nl.copy(x, ...)` under affine_range: the same values every iteration, so an info that says
to hoist the copy, not the loop-carried-dependency error a real accumulation gets."""

from __future__ import annotations

from pathlib import Path

from nki_assist.findings import Severity
from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki.run import run_nki_rules

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "rules" / "NKI201" / "pos_recopy.py"


def _by_tensor(text: str) -> dict:
    return {f.evidence["tensor"]: f for f in run_nki_rules(parse_nki(text, "k.py"), get_target("trn2"))
            if f.rule == "NKI201"}


def test_a_copy_into_itself_is_an_info_and_an_accumulation_an_error():
    found = _by_tensor(FIXTURE.read_text())
    assert found["base"].severity is Severity.INFO and found["base"].evidence["idempotent"] is True
    assert "before the loop" in found["base"].fix
    assert found["acc"].severity is Severity.ERROR


def test_a_copy_that_also_reads_another_tile_is_still_an_error():
    text = FIXTURE.read_text().replace("base = nl.copy(base, dtype=np.float32)",
                                       "base = nl.copy(nl.add(base, acc), dtype=np.float32)")
    assert _by_tensor(text)["base"].severity is Severity.ERROR
