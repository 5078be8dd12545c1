"""A short K tile is the cause of the small operand DMAs it forces (issue 29): PERF104 from the trace, ranked
before the DMA symptom, however the tile constants are written."""

from __future__ import annotations

from pathlib import Path

import pytest

from nki_assist.review import ReviewOptions, review_port

PORT = Path(__file__).resolve().parent.parent / "fixtures" / "ports" / "k32_tuple_gemm"


def _review(tmp_path: Path, bk: int):
    d = tmp_path / f"bk{bk}"
    d.mkdir()
    for p in PORT.iterdir():
        text = p.read_text()
        if p.name == "gemm_nki.py":
            text = text.replace("BM, BN, BK = 128, 64, 32", f"BM, BN, BK = 128, 64, {bk}")
        (d / p.name).write_text(text)
    return review_port(str(d / "port.toml"), ReviewOptions(plots=False)).review


@pytest.fixture(scope="module")
def k32(tmp_path_factory):
    return _review(tmp_path_factory.mktemp("k32"), 32)


def test_trace_names_the_k_tile_as_the_cause(k32):
    (p,) = [f for f in k32.findings if f.rule == "PERF104"]
    ev = p.evidence
    assert (ev["cause"], ev["median_k"], ev["median_n"]) == ("contraction", 32, 64)
    # M = N = K = 512: (512/128) * (512/64) * (512/32) = 512 matmuls, each fed by one lhsT and one rhs load
    assert ev["matmuls"] == 512 and ev["operand_loads"] == 1024
    assert ev["operand_load_lines"] == [17, 18] and p.line == 19
    assert ev["operand_load_share_percent"] > 50 and p.est_speedup > 1.25
    assert "The small DMAs are a symptom of the K tile." in p.message


def test_symptom_loads_point_at_the_cause_and_the_cause_item_comes_first(k32):
    loads = {f.line: f for f in k32.findings if f.rule == "NKI108"}
    assert loads[17].evidence["symptom_of"] == {"rule": "PERF104", "line": 19}
    assert loads[18].evidence["symptom_of"] == {"rule": "PERF104", "line": 19}
    assert "symptom_of" not in loads[20].evidence  # the store's width is the N tile, not the contraction
    ids = {f.id: f for f in k32.findings}
    items = k32.assessment.items
    cause = next(i for i, it in enumerate(items) if any(ids[x].rule == "PERF104" for x in it.finding_ids))
    symptom = next(i for i, it in enumerate(items) if any(ids[x].rule == "NKI108" for x in it.finding_ids))
    assert cause < symptom


def test_full_k_tile_has_no_contraction_cause(tmp_path):
    r = _review(tmp_path, 128)
    assert not [f for f in r.findings if f.rule == "PERF104" and f.evidence.get("cause") == "contraction"]
    assert not [f for f in r.findings if "symptom_of" in f.evidence]


def test_dma_advice_on_a_line_agrees_with_the_run(k32):
    """PERF102 is contradicted by the HBM row length (512 bf16 = 1,024 B rows); NKI108 on the same lines must not
    keep asking for 2 KiB per partition: whole rows at most, the partition count still the kernel's."""
    (p102,) = [f for f in k32.findings if f.rule == "PERF102"]
    assert p102.evidence["reconciled"]["status"] == "contradicted"
    loads = {f.line: f for f in k32.findings if f.rule == "NKI108"}
    lhs, store = loads[17], loads[20]
    assert lhs.evidence["reconciled"]["row_bytes"] == 1024 and "2048" not in lhs.message
    assert "moves 32 of 128 partitions and 256 B per partition" in lhs.message  # bf16 [32, 128]: the run's bytes
    assert "can grow to whole rows (1,024 B per partition, 4x what it moves) but no further" in lhs.message
    assert lhs.fix == "Load all 128 partitions per DMA. Load whole `lhsT` rows (1,024 B) per partition."
    # info: the cost model does not call this store the bound (severity policy, issue 41)
    assert store.fix == "Store whole `out` rows (1,024 B) per partition." and store.severity.value == "info"
    assert "wider strip" not in " ".join(f.message for f in loads.values())


def test_cause_fix_is_the_k_tile_and_covers_the_static_findings_of_its_item(k32):
    (p,) = [f for f in k32.findings if f.rule == "PERF104"]
    assert p.fix.startswith("Make the K tile 128 rows: the operand loads become 4x fewer and 4x larger")
    assert "a moving tile of up to 512 columns" in p.fix  # the N tile is 64
    item = next(it for it in k32.assessment.items if p.id in it.finding_ids)
    same = [f for f in k32.findings if f.id in item.finding_ids and f.category == p.category and f is not p]
    assert same and item.fix == p.fix  # NKI301's and MIG108's rewordings of the same advice are not repeated


def test_only_the_narrow_matmuls_are_counted():
    """The legacy linear eval case broadcasts its bias row with one more matmul: 128 contract 32 rows, not 129."""
    spec = PORT.parents[3] / "evals" / "cases" / "linear_tuple_tiles_k32_legacy" / "port.toml"
    r = review_port(str(spec), ReviewOptions(plots=False)).review
    (p,) = [f for f in r.findings if f.rule == "PERF104"]
    # (256/128) * (512/128) * (512/32) = 128 matmuls, each fed by one lhsT and one w load
    assert p.evidence["matmuls"] == 128 and p.evidence["operand_loads"] == 256
    assert p.message.startswith("128 matmuls contract 32 of 128 rows (moving free 128)") and not p.related
