"""Claims against evidence (issue 39 item 4) on ports written for it: a claim the run's own numbers refute is
demoted to info with the refuting number and never raises the verdict, and the item does not sit on a line
the run clears.

claims_store_offset_exp: the only defect is the store offset `t * 64` for 128-row tiles; the exp without max
subtraction (NKI402) stays ~75 below the fp32 overflow. claims_softmax_rmodp: the last tile's row count is
`R % P`, 0 at the aligned size, so its store moves 0 bytes; the output allocation is not the cause."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nki_assist.findings import Severity
from nki_assist.review import ReviewOptions, review_port

PORTS = Path(__file__).resolve().parents[1] / "fixtures" / "ports"


@pytest.fixture(scope="module")
def offset():
    return review_port(str(PORTS / "claims_store_offset_exp" / "port.toml"), ReviewOptions(plots=False, repair_budget_s=-1)).review  # the claims alone: no diagnosis stage (tests/diagnose)


@pytest.fixture(scope="module")
def rmodp():
    return review_port(str(PORTS / "claims_softmax_rmodp" / "port.toml"), ReviewOptions(plots=False, repair_budget_s=-1)).review  # the claims alone: no diagnosis stage (tests/diagnose)


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_exp_named_as_the_cause_is_demoted_with_its_margin(offset):
    (nki402,) = [f for f in offset.findings if f.rule == "NKI402"]
    assert nki402.severity is Severity.INFO
    rec = nki402.evidence["reconciled"]
    assert rec["status"] == "contradicted" and sorted(rec["sizes"]) == ["one_tile", "two_tiles"]
    assert "Confirmed by the run" not in nki402.message and "root_cause" not in nki402.evidence
    # the refuting numbers: each size's largest argument and its margin to the fp32 overflow (88.7)
    margins = [float(m) for m in re.findall(r"reached [\d.]+, ([\d.]+) below the 88\.7 overflow", nki402.message)]
    assert len(margins) == 2 and all(m > 70 for m in margins)
    for size, row in nki402.evidence["run_range"].items():
        assert row["margin_fp32"] > 70, size


def test_the_output_mismatch_points_at_the_store_offset_not_at_the_exp(offset):
    store = _line_of(PORTS / "claims_store_offset_exp" / "row_softmax_offset_nki.py", "nl.store(")
    numerics = [f for f in offset.findings if f.source == "numerics" and f.severity is Severity.ERROR]
    assert numerics and all(f.line == store for f in numerics)
    assert all(f.evidence.get("cause_rule") != "NKI402" and "NKI402" not in f.message for f in numerics)
    lead = offset.assessment.items[0]
    assert f":{store}" in lead.title and "NKI402" not in lead.what
    assert offset.assessment.verdict == "block"  # the store offset still blocks; the exp does not add to it
    blocking = [f for f in offset.findings if f.severity is Severity.ERROR]
    assert {f.rule for f in blocking} <= {"SIM109", "SIM112", "NUM102", "NUM104"}


def test_partly_written_output_moves_from_the_allocation_to_the_store_that_moved_nothing(rmodp):
    nki = PORTS / "claims_softmax_rmodp" / "softmax_rmodp_nki.py"
    alloc, store = _line_of(nki, "y = nl.ndarray("), _line_of(nki, "nisa.dma_copy(dst=y[")
    (sim,) = [f for f in rmodp.findings if f.rule == "SIM112"]
    assert sim.line == store and sim.evidence["allocation_line"] == alloc
    rec = sim.evidence["reconciled"]
    assert rec["status"] == "relocated" and rec["sizes"] == ["aligned"]
    assert "moved 0 bytes (into y[128:128, 0:256])" in rec["evidence"]
    assert "round the trip count up" not in (sim.fix or "")
    assert all(f.line == store for f in rmodp.findings if f.source == "numerics" and f.severity is Severity.ERROR)
    lead = rmodp.assessment.items[0]
    assert lead.title.endswith(f"(softmax_rmodp_nki.py:{store})")
    assert "does not initialize memory" not in lead.why and "moved 0 bytes" in lead.why
    assert "round the trip count up" not in lead.fix


def test_an_empty_store_outside_the_unwritten_region_does_not_move_the_finding():
    from types import SimpleNamespace as NS

    from nki_assist.contracts.runs import TraceEntry
    from nki_assist.review.claims.unwritten import check_unwritten, hole
    from nki_assist.rules.registry import get

    msg = "kernel output y[256, 64] is only partly written: 8192 of 16384 elements (50.0%) are never stored, " \
          "within [128:256, 0:64]."
    assert hole(msg) == [(128, 256), (0, 64)]
    sim = get("SIM112").finding(msg, file="k.py", line=7, source="simulation", evidence={"tensor": "y"})

    def ctx(start):
        store = TraceEntry(seq=1, engine="dma", op="dma_copy", line=20, file="k.py", dst=None, bytes=0,
                           hbm_tensor="y", hbm_box=((start, start), (0, 64)), direction="store")
        return NS(res=NS(sizes=[NS(size="aligned", runs={"trainium": NS(trace=[store])})]))

    moved = check_unwritten(ctx(128), sim)
    assert moved.line == 20 and moved.evidence["allocation_line"] == 7
    assert check_unwritten(ctx(0), sim) is sim  # an empty store at rows 0:0 explains nothing about rows 128:256
