"""Deterministic drafter: merging, ordering, verdict by rule, rubric scores, text for every category."""

import pytest
from feedback_builders import f, realistic_findings, review, sources

from nki_assist import taxonomy
from nki_assist.feedback import draft_assessment, load_rubric
from nki_assist.feedback.drafter import group_findings, verdict_for
from nki_assist.feedback.grounding import Context, validate
from nki_assist.feedback.prompts import explanations
from nki_assist.feedback.reply import from_assessment
from nki_assist.findings import prioritize
from nki_assist.api.hardware import TARGETS, get_target


def test_realistic_review_items_and_order():
    a = draft_assessment(review())
    assert a.drafter == "deterministic" and a.verdict == "block" and a.llm is None
    assert a.prompt_version == "nki-assist-prompts@1" and a.rubric_name == "nki-assist-default@1"
    # F1 psum overflow + F2 moving-size limit share the BN constant: one item, first
    assert [it.finding_ids for it in a.items] == [["F1", "F2"], ["F3"], ["F4"], ["F5"], ["F6"]]
    assert [it.priority for it in a.items] == [1, 2, 3, 4, 5]
    # warnings: correctness (F3) before memory (F4) before numerics (F5); info last
    assert [it.criterion for it in a.items] == ["memory-hierarchy", "migration-correctness", "memory-hierarchy",
                                                "numerical-accuracy", "numerical-accuracy"]
    first = a.items[0]
    assert "PSUM" in first.title and "gemm_bias_relu_nki.py:14" in first.title
    assert "2 KiB" in first.why and "8 banks" in first.why  # trn2 numbers from hardware.py
    assert first.fix.startswith("Split the N dimension into 512-wide blocks")  # the finding's own fix first
    assert "tensor_engine_active_time_percent" in first.profiling
    dma = a.items[2]
    assert "1.8x" in dma.profiling and "average_dma_size" in dma.profiling
    assert "sgemm_bias_relu.cu:8" in a.items[1].what  # the related CUDA line
    assert "F1, F2" in a.summary and "Block" in a.summary


def test_speedup_orders_within_severity_and_criterion():
    fs = [
        f(rule="P1", name="small-a", category="small-dma", severity="warning", line=5, message="a", est_speedup=1.2),
        f(rule="P2", name="redundant", category="redundant-dma", severity="warning", line=9, message="b", est_speedup=2.5),
        f(rule="P3", name="fp32", category="fp32-matmul", severity="warning", line=12, message="c", est_speedup=3.9),
    ]
    a = draft_assessment(review(fs))
    # memory-hierarchy (ordered by gain 2.5 > 1.2) before hardware-utilization despite its larger 3.9x
    rules = [a.items[i].what.split("[")[1].split()[1] for i in range(3)]
    assert rules == ["P2", "P1", "P3"]
    assert a.verdict == "revise"


def test_same_rule_repeated_is_one_item_and_different_criteria_on_a_line_are_not():
    fs = [
        f(rule="P1", name="small", category="small-dma", severity="warning", line=5, message="load A"),
        f(rule="P1", name="small", category="small-dma", severity="warning", line=9, message="load B"),
        f(rule="N1", name="order", category="accumulation-order", severity="info", line=9, message="order"),
    ]
    groups = group_findings(prioritize(fs))
    assert [[g.rule for g in grp] for grp in groups] == [["P1", "P1"], ["N1"]]
    a = draft_assessment(review(fs))
    assert "(gemm_bias_relu_nki.py:5, gemm_bias_relu_nki.py:9)" in a.items[0].title


@pytest.mark.parametrize("sevs,verdict", [
    (["error", "warning", "info"], "block"),
    (["warning", "info"], "revise"),
    (["info", "info"], "approve-with-nits"),
    ([], "approve"),
])
def test_verdict_by_rule(sevs, verdict):
    fs = [f(rule=f"R{i}", name=f"r{i}", category="small-dma", severity=s, line=i + 1, message="m")
          for i, s in enumerate(sevs)]
    assert verdict_for(fs) == verdict
    assert draft_assessment(review(fs)).verdict == verdict


def test_rubric_scores_follow_findings():
    a = draft_assessment(review())
    scores = {s.criterion: s.score for s in a.rubric}
    assert scores == {"migration-correctness": 2, "memory-hierarchy": 0, "numerical-accuracy": 2,
                      "hardware-utilization": 4}
    mem = next(s for s in a.rubric if s.criterion == "memory-hierarchy")
    assert "2 errors, 1 warning" in mem.rationale and "F1 psum-tile-exceeds-bank" in mem.rationale
    assert [s.criterion for s in a.rubric] == list(taxonomy.rubric_criteria())


def test_unverified_criteria_are_capped():
    a = draft_assessment(review([], numerics=False, perf=False))
    scores = {s.criterion: s for s in a.rubric}
    assert scores["memory-hierarchy"].score == 4
    for crit in ("migration-correctness", "numerical-accuracy", "hardware-utilization"):
        assert scores[crit].score == 3 and "not verified by execution" in scores[crit].rationale
    assert a.verdict == "approve" and a.items == []
    assert "numerics were not run" in a.summary


def test_single_small_warning_scores_three():
    fs = [f(rule="P1", name="small", category="small-dma", severity="warning", line=5, message="m", est_speedup=1.05)]
    scores = {s.criterion: s.score for s in draft_assessment(review(fs)).rubric}
    assert scores["memory-hierarchy"] == 3


def test_deterministic_and_reproducible():
    assert draft_assessment(review()).model_dump() == draft_assessment(review()).model_dump()


def test_unnumbered_findings_are_prioritized():
    r = review()
    r.findings = [x.model_copy(update={"id": ""}) for x in realistic_findings()]
    a = draft_assessment(r)
    assert a.items[0].finding_ids == ["F1", "F2"]


def test_explanations_cover_every_category():
    cats = explanations()["categories"]
    for slug in taxonomy.categories():
        assert slug in cats, slug
        for field in ("title", "why", "fix", "profiling"):
            assert cats[slug].get(field, "").strip(), (slug, field)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_category_text_renders_and_is_grounded(target):
    """Drafter text for every category passes the same grounding check the LLM must pass."""
    fs = [f(rule=f"T{i:03d}", name=f"rule-{i}", category=slug, severity="warning", line=i + 1,
            message=f"finding of {slug}") for i, slug in enumerate(taxonomy.categories())]
    r = review(fs, target=target)
    a = draft_assessment(r)
    assert len(a.items) == len(fs)
    t = get_target(target)
    if target == "trn2":
        psum = next(it for it in a.items if it.title.startswith("PSUM tile"))
        assert f"{t.psum_banks} banks" in psum.why
    reply = from_assessment(a, {x.id: x.severity.value for x in r.findings})
    assert validate(reply, Context(r, t, sources(), load_rubric())) == []


def test_realistic_deterministic_draft_passes_grounding():
    r = review()
    a = draft_assessment(r)
    reply = from_assessment(a, {x.id: x.severity.value for x in r.findings})
    assert validate(reply, Context(r, get_target("trn2"), sources(), load_rubric())) == []


def test_info_on_a_warning_line_stays_a_separate_nit():
    fs = [
        f(rule="NKI203", name="floor-div", category="missing-boundary-mask", severity="warning", line=26, message="tail"),
        f(rule="NKI502", name="deprecated-loop", category="deprecated-api", severity="info", line=26, message="alias"),
        f(rule="NKI502", name="deprecated-loop", category="deprecated-api", severity="info", line=30, message="alias"),
    ]
    a = draft_assessment(review(fs))
    assert [it.finding_ids for it in a.items] == [["F1"], ["F2", "F3"]]
    assert "dialects" not in a.items[0].why


def test_findings_without_location_and_unknown_target():
    fs = [f(rule="TC100", name="reference-crashed", category="toolchain-failure", severity="warning",
            source="toolchain", file=None, message="reference.py raised ZeroDivisionError")]
    r = review(fs, target="trn9")
    a = draft_assessment(r)
    assert a.verdict == "revise" and a.items[0].title == "A check could not run"
    assert "reference.py raised ZeroDivisionError" in a.items[0].what
    reply = from_assessment(a, {"F1": "warning"})
    assert validate(reply, Context(r, get_target("trn2"), None, load_rubric())) == []


def test_an_item_states_the_same_advice_once():
    from nki_assist.feedback.drafter import item_for

    a = f(rule="PERF102", name="dma-overhead-small-transfers", category="small-dma", severity="warning", line=35, message="m",
          fix="Load larger tiles: at least 2 KiB (ideally 4 KiB+) per partition per transfer, on all 128 partitions.")
    b = f(rule="NKI108", name="small-dma-in-loop", category="small-dma", severity="warning", line=36, message="m",
          fix="Move bigger tiles per transfer: 128 partitions and at least 2 KiB (ideally 4 KiB+) each.")
    c = f(rule="PERF101", name="estimated-redundant-dma", category="redundant-dma", severity="warning", line=35, message="m",
          fix="Hoist loads out of loops that do not index them.")
    item = item_for(prioritize([a, b, c]), get_target("trn2"))
    assert item.fix.count("2 KiB") == 1 and "Hoist loads" in item.fix


def test_deprecated_but_accepted_alias_is_not_called_rejected():
    """NKI502 (an alias the compiler still accepts) gets its own text, not the deprecated-api 'rejects' rationale;
    a removed API (NKI501) keeps it."""
    alias = f(rule="NKI502", name="deprecated-loop-iterator", category="deprecated-api", severity="info", line=12,
              message="`nl.affine_range` is a deprecated alias of `range` in new NKI.")
    removed = f(rule="NKI501", name="removed-api-in-new-nki", category="deprecated-api", severity="error", line=20,
                message="`nl.arange` was removed from new NKI.")
    items = {it.finding_ids[0]: it for it in draft_assessment(review([alias, removed])).items}
    by_rule = {fd.rule: fd.id for fd in prioritize([alias, removed])}
    a, r = items[by_rule["NKI502"]], items[by_rule["NKI501"]]
    assert "rejects" not in a.title and "compile error" not in a.why and "still accepts" in a.why
    assert r.title.startswith("API the target toolchain rejects") and "compile error" in r.why


def test_whole_rows_fact_does_not_contradict_the_items_change():
    """One transfer of an item already moves whole rows ('Nothing to change in the kernel'), another can grow:
    the item's fix is the change, not both sentences; alone, the whole-rows fix stays."""
    from nki_assist.feedback.drafter import item_for

    grow = f(rule="NKI108", name="small-dma-in-loop", category="small-dma", severity="info", line=26, message="m",
             fix="Load whole `lhsT` rows (512 B) per partition.")
    whole = f(rule="NKI108", name="small-dma-in-loop", category="small-dma", severity="info", line=30, message="m",
              fix="Nothing to change in the kernel: only an HBM layout with longer rows (a producer-side change) "
                  "makes these descriptors longer.")
    item = item_for(prioritize([grow, whole]), get_target("trn2"))
    assert item.fix == "Load whole `lhsT` rows (512 B) per partition."
    alone = item_for(prioritize([whole]), get_target("trn2"))
    assert alone.fix.startswith("Nothing to change in the kernel")


def test_a_measured_cause_fix_covers_its_category_and_keeps_other_categories():
    from nki_assist.feedback.drafter import item_for

    cause = f(rule="PERF104", name="estimated-tensor-engine-underutilization", category="tensor-engine-underutilized",
              severity="warning", line=27, message="m", evidence={"cause": "contraction"},
              fix="Make the K tile 128 rows.")
    static = f(rule="NKI301", name="small-matmul-tile", category="tensor-engine-underutilized", severity="warning",
               line=27, message="m", fix="Grow K and M tiles to 128 (pack several small problems).")
    other = f(rule="MIG999", name="other", category="fp32-matmul", severity="warning", line=27, message="m",
              fix="Cast the operands to bfloat16.")
    item = item_for(prioritize([cause, static, other]), get_target("trn2"))
    assert item.fix == "Make the K tile 128 rows. Also: Cast the operands to bfloat16."
