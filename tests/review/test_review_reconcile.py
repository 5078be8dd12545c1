"""Evidence reconciliation (nki_assist.review.reconcile): static claims checked against hand-built run evidence.

The port spec and kernel source are real (an eval case's); the numerics results are built here so each
test states exactly what the run showed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from run_evidence import numerics as result
from run_evidence import size_result

from nki_assist.feedback.drafter import group_findings, item_for
from nki_assist.findings import Finding, Severity, prioritize
from nki_assist.api.hardware import get_target
from nki_assist.numerics.spec import load_spec
from nki_assist.review.reconcile import kernel_params, reconcile, shape_symbols
from nki_assist.rules.registry import get

CASES = Path(__file__).resolve().parents[2] / "evals" / "cases"
RMS = CASES / "clean_residual_rmsnorm_tail_legacy"  # x, res, gamma: [R, D]; sizes aligned R=256, ragged R=300
SCORES = CASES / "clean_batched_scores_new"  # qT, kT bf16 [B, D, S]
CONV = CASES / "clean_conv1d_stream_new"  # L = LX - 128 output columns, tiles of 512
NKI = "residual_rmsnorm_nki.py"
REF = np.random.default_rng(0).normal(size=(4, 8))


def size(name, bindings, *, out=None, unwritten=0, fp32=None):
    return size_result(name, bindings, REF, REF.copy() if out is None else out, fp32=fp32, unwritten=unwritten,
                       file=NKI)


def tail_finding(rule="NKI203", terms=None, const=0, tile=128, sev="warning"):
    claim = {"kind": "tail-dropped", "loop_var": "t", "loop_line": 25, "tile": tile, "numerator": "R",
             "trip_expr": "R // P", "terms": {"R": 1} if terms is None else terms, "const": const}
    return get(rule).finding("loop `t` drops the tail", file=NKI, line=25, severity=Severity(sev),
                             evidence={"claim": claim})


def run(findings, res, case=RMS, perf_size=None, notes=None):
    spec = load_spec(case / "port.toml")
    return reconcile(findings, spec=spec, res=res, source=spec.nki_path.read_text(), perf_size=perf_size,
                     notes=notes if notes is not None else [])


BAD = REF + 1.0


def test_tail_claim_contradicted_when_the_ragged_size_passes_and_is_fully_written():
    res = result(size("aligned", {"R": 256, "D": 512}), size("ragged", {"R": 300, "D": 512}))
    (f,) = run([tail_finding()], res)
    assert f.severity is Severity.INFO
    rec = f.evidence["reconciled"]
    assert rec["status"] == "contradicted" and rec["sizes"] == ["ragged"]
    assert "size `ragged`" in rec["evidence"] and "300 % 128 = 44" in rec["evidence"]
    assert "passes with 0 mismatches" in rec["evidence"]
    assert f.message.startswith("NKI203 predicted") and "contradicts" in f.message
    assert f.evidence["static_message"] == "loop `t` drops the tail" and "root_cause" not in f.evidence
    assert "No change needed" in f.fix


def test_tail_claim_confirmed_and_promoted_when_the_ragged_size_leaves_output_unwritten():
    res = result(size("aligned", {"R": 256, "D": 512}),
                 size("ragged", {"R": 300, "D": 512}, out=np.where(np.arange(8) < 6, REF, np.nan), unwritten=8))
    (f,) = run([tail_finding("MIG101")], res)
    assert f.severity is Severity.ERROR
    assert f.evidence["reconciled"]["status"] == "confirmed"
    assert f.evidence["root_cause"] == "unhandled-ragged-tail" and f.evidence["root_cause_lead"] is True
    assert "leaves 8 output elements unwritten" in f.message


def test_tail_claim_contradicted_when_an_aligned_size_fails_the_same_way():
    res = result(size("aligned", {"R": 256, "D": 512}, out=BAD, fp32=BAD),
                 size("ragged", {"R": 300, "D": 512}, out=BAD, fp32=BAD))
    (f,) = run([tail_finding()], res)
    assert f.severity is Severity.INFO
    assert "writes every output element" in f.evidence["reconciled"]["evidence"]
    assert "`aligned`, which has no partial tile" in f.evidence["reconciled"]["evidence"]


def test_tail_claim_untested_when_no_size_leaves_a_partial_tile():
    res = result(size("aligned", {"R": 256, "D": 512}))
    (f,) = run([tail_finding()], res)
    assert f.severity is Severity.WARNING
    assert f.evidence["reconciled"]["status"] == "untested"
    assert "no size of the spec leaves a partial tile" in f.evidence["reconciled"]["evidence"]


def test_the_numerator_is_evaluated_on_the_specs_shape_symbols():
    """Conv: L = LX - 128 columns in tiles of 512. LX=1152 (L=1024) has no tail; LX=1128 (L=1000) has one."""
    spec = load_spec(CONV / "port.toml")
    fn, params = kernel_params(spec.nki_path.read_text(), spec.kernel_name, list(spec.inputs))
    assert params == {"x": "x", "w": "w"}
    assert shape_symbols(fn, params) == {"C": ("x", 0), "LX": ("x", 1), "WC": ("w", 1)}
    res = result(size("aligned", {"C": 128, "LX": 1152, "WC": 384}), size("long", {"C": 128, "LX": 2176, "WC": 384}))
    (f,) = run([tail_finding(terms={"LX": 1}, const=-128, tile=512)], res, case=CONV)
    assert f.evidence["reconciled"]["status"] == "untested"  # 1024 and 2048 are multiples of 512
    res = result(size("aligned", {"C": 128, "LX": 1152, "WC": 384}), size("long", {"C": 128, "LX": 1128, "WC": 384}))
    (f,) = run([tail_finding(terms={"LX": 1}, const=-128, tile=512)], res, case=CONV)
    assert f.evidence["reconciled"]["status"] == "contradicted"
    assert "1000 % 512 = 488" in f.evidence["reconciled"]["evidence"]


def test_operand_dtype_claim_dropped_when_the_spec_declares_bf16_inputs():
    f = get("MIG111").finding("fp32 operands", file="batched_scores_nki.py", line=29,
                              evidence={"claim": {"kind": "operand-dtype", "nki_params": ["qT", "kT"],
                                                  "dtype": "float32"}})
    notes: list[str] = []
    res = result(size("b2_s256", {"B": 2, "D": 128, "S": 256}))
    assert run([f], res, case=SCORES, notes=notes) == []
    assert notes and "`qT` bfloat16, `kT` bfloat16" in notes[0]
    kept = f.model_copy(update={"evidence": {"claim": {**f.evidence["claim"], "nki_params": ["qT", "nope"]}}})
    assert run([kept], res, case=SCORES) == [kept]  # a param the spec does not declare: keep the claim


def test_output_wrong_claim_demoted_only_when_every_size_passes():
    f = get("MIG110").finding("every row tile receives the same product", file=NKI, line=27,
                              evidence={"claim": {"kind": "output-wrong", "what": "output-tile-not-selected"}})
    passing = result(size("aligned", {"R": 256, "D": 512}), size("ragged", {"R": 300, "D": 512}))
    (g,) = run([f], passing)
    assert g.severity is Severity.INFO and "the port computes what the reference computes" in g.message
    failing = result(size("aligned", {"R": 256, "D": 512}, out=BAD, fp32=BAD), size("ragged", {"R": 300, "D": 512}))
    (g,) = run([f], failing)
    assert g.severity is Severity.ERROR and "reconciled" not in g.evidence


def test_unpaired_cuda_scalar_cleared_by_passing_numerics_but_an_unread_tensor_is_not():
    scalar = get("MIG103").finding("eps has no counterpart", file=NKI, line=16, severity=Severity.WARNING,
                                   evidence={"claim": {"kind": "input-unused", "cuda_param": "eps", "pointer": False}})
    tensor = get("MIG103").finding("bias never read", file=NKI, line=16, severity=Severity.WARNING,
                                   evidence={"claim": {"kind": "input-unused", "cuda_param": "bias",
                                                       "nki_param": "bias", "pointer": True}})
    res = result(size("aligned", {"R": 256, "D": 512}), size("ragged", {"R": 300, "D": 512}))
    s, t = run([scalar, tensor], res)
    assert s.severity is Severity.INFO and "`eps`" in s.message
    assert t.severity is Severity.WARNING and "reconciled" not in t.evidence


def test_partition_underuse_of_the_ragged_remainder_is_not_a_packing_opportunity():
    f = get("PERF103").finding("44 of 128 partitions", file=NKI, line=39, severity=Severity.WARNING,
                               evidence={"mean_partitions": 44.0})
    res = result(size("aligned", {"R": 256, "D": 512}), size("ragged", {"R": 300, "D": 512}))
    (g,) = run([f], res, perf_size="ragged")
    assert g.severity is Severity.INFO and "R % 128 = 44 tail tile" in g.evidence["reconciled"]["evidence"]
    (g,) = run([f.model_copy(update={"evidence": {"mean_partitions": 64.0}})], res, perf_size="ragged")
    assert g.severity is Severity.WARNING  # 64 partitions is not the 44-row remainder: a real finding


def test_a_numerics_finding_confirms_its_cause_and_the_same_mistake_elsewhere():
    exp1 = get("NKI402").finding("exp without max", file=NKI, line=24)
    exp2 = get("NKI402").finding("exp without max", file=NKI, line=32)
    num = get("NUM104").finding("256 Inf", file=NKI, line=24, category="overflow-risk",
                                evidence={"cause_rule": "NKI402"})
    res = result(size("aligned", {"R": 256, "D": 512}))
    a, b, n = run([exp1, exp2, num], res)
    assert a.severity is Severity.ERROR and a.evidence["root_cause_lead"] and "NUM104" in a.message
    assert b.severity is Severity.ERROR and "the same defect as line 24" in b.message
    assert a.evidence["root_cause"] == b.evidence["root_cause"] == n.evidence["root_cause"] == "cause:NKI402:24"


def test_no_run_no_change():
    f = tail_finding()
    assert reconcile([f], spec=None, res=None) == [f]


def test_the_confirmed_cause_leads_its_item_and_a_cleared_claim_says_so():
    sim = get("SIM112").finding("y partly written", file=NKI, line=18, evidence={"root_cause": "unhandled-ragged-tail"})
    num = get("NUM103").finding("ragged fails", file=NKI, line=25,
                                evidence={"root_cause": "unhandled-ragged-tail", "cause_rule": "NKI203"})
    cause = tail_finding().model_copy(update={"severity": Severity.ERROR, "fix": "Loop `t` over ceil(R / 128) tiles.",
                                              "evidence": {"root_cause": "unhandled-ragged-tail",
                                                           "root_cause_lead": True}})
    (group,) = group_findings(prioritize([sim, num, cause]))
    item = item_for(group, get_target("trn2"))
    assert item.finding_ids[0] == next(f.id for f in group if f.rule == "NKI203")
    assert item.fix == "Loop `t` over ceil(R / 128) tiles."  # the cause's fix, not the symptoms'
    res = result(size("aligned", {"R": 256, "D": 512}), size("ragged", {"R": 300, "D": 512}))
    (cleared,) = prioritize(run([tail_finding()], res))
    item = item_for([cleared], get_target("trn2"))
    assert item.title.startswith("NKI203 floor div trip count unguarded: not borne out by the run")
    assert "The run checked this claim" in item.why and "Ragged tails" not in item.title


def test_findings_keep_their_contract():
    res = result(size("aligned", {"R": 256, "D": 512}), size("ragged", {"R": 300, "D": 512}))
    for f in run([tail_finding()], res):
        Finding.model_validate(f.to_json())


def test_a_numerics_finding_anchored_on_an_untested_tail_claim_moves_to_the_confirmed_one():
    """Loops over M and N both floor; only N is ragged in the spec. NUM103 must name the N loop."""
    m_loop = tail_finding().model_copy(update={"line": 26, "fix": "Loop `m` over ceil(M / 128) tiles."})
    n_loop = tail_finding(tile=512).model_copy(update={"line": 27, "fix": "Loop `n` over ceil(N / 512) tiles."})
    n_loop.evidence["claim"].update(terms={"D": 1}, loop_var="n", numerator="N")
    num = get("NUM103").finding("ragged fails", file=NKI, line=26, fix=m_loop.fix, evidence={"cause_rule": "NKI203"})
    res = result(size("aligned", {"R": 256, "D": 512}),
                 size("ragged", {"R": 256, "D": 700}, out=np.where(np.arange(8) < 6, REF, np.nan), unwritten=8))
    m, n, u = run([m_loop, n_loop, num], res)
    assert m.evidence["reconciled"]["status"] == "untested" and m.severity is Severity.WARNING
    assert n.evidence["reconciled"]["status"] == "confirmed" and n.severity is Severity.ERROR
    assert u.line == 27 and u.fix == n_loop.fix and u.evidence["root_cause"] == n.evidence["root_cause"]


def test_missing_scale_claim_refuted_by_any_passing_size():
    f = get("MIG102").finding("the CUDA kernel scales by 0.125, the port does not", file=NKI, line=27,
                              evidence={"claim": {"kind": "output-wrong", "what": "scale 0.125 missing"}})
    mixed = result(size("aligned", {"R": 256, "D": 512}), size("ragged", {"R": 300, "D": 512}, out=BAD, fp32=BAD))
    (g,) = run([f], mixed)
    assert g.severity is Severity.INFO and g.evidence["reconciled"]["sizes"] == ["aligned"]
    assert "size `aligned` (R=256, D=512) passes with 0 of 32 elements out of tolerance" in g.message
    assert "a missing constant scale would fail every size" in g.message and "Do not add the scale" in g.fix
    every = result(size("aligned", {"R": 256, "D": 512}, out=BAD, fp32=BAD),
                   size("ragged", {"R": 300, "D": 512}, out=BAD, fp32=BAD))
    (g,) = run([f], every)  # every size fails: the claim stands
    assert g.severity is f.severity and "reconciled" not in g.evidence
    tile = get("MIG110").finding("tile", file=NKI, line=27,
                                 evidence={"claim": {"kind": "output-wrong", "what": "output-tile-not-selected"}})
    (g,) = run([tile], mixed)  # an indexing claim may fail only some sizes: one passing size does not refute it
    assert g.severity is tile.severity
