"""Conformance on production kernels (AWS's nki-library, NKIBench), read in place from the frozen snapshots in
<repo>/../shared/corpora; skipped when they are absent. `python tests/conformance/production_corpus.py --summary`
prints the table recorded in docs/simulator.md (NKIBench at benchmark size takes minutes per kernel: the
tests run two of them, the rest with NKI_ASSIST_NKIBENCH=1)."""

from __future__ import annotations

import os

import pytest
from production_corpus import Outcome, cases, corpora_root, kernel_verdict, run_case

# kernels whose documentation admits ragged sizes: each must match at a ragged size
RAGGED = {"rmsnorm_tkg", "layernorm_tkg", "cumsum", "rope", "cross_entropy_forward", "cross_entropy_backward",
          "depthwise_conv1d"}
# NKIBench kernels run by default (the false SIM104 errors and the loop_reduce NaN they used to show)
NKIBENCH_DEFAULT = {"nkibench_silu", "nkibench_rmsnorm_matmul"}


def test_the_corpus_is_well_formed():
    names = [c.name for c in cases()]
    assert len(names) == len(set(names))
    assert sum(c.corpus == "nki-library" for c in cases()) >= 20
    for c in cases():
        assert c.sizes and all((s.make is None) == bool(s.not_applicable) for s in c.sizes), c.name


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    root = corpora_root()
    if root is None:
        pytest.skip("no corpora snapshot at <repo>/../shared/corpora (NKI_CORPORA)")
    every = os.environ.get("NKI_ASSIST_NKIBENCH") == "1"
    return [run_case(root, c, s) for c in cases()
            if c.corpus == "nki-library" or every or c.name in NKIBENCH_DEFAULT for s in c.sizes]


def test_no_error_finding_and_no_wrong_output_on_correct_public_kernels(outcomes):
    bad = [(o.case, o.size, o.verdict, o.detail) for o in outcomes if o.verdict in ("false finding", "wrong")]
    assert bad == []


def test_tool_limits_are_infos_that_name_the_construct(outcomes):
    for o in outcomes:
        if o.verdict == "tool-limit":
            assert o.detail and all(":error:" not in f for f in o.findings), (o.case, o.findings)


def test_match_rate_and_ragged_sizes(outcomes):
    by_case: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_case.setdefault(o.case, []).append(o)
    lib = {c.name for c in cases() if c.corpus == "nki-library"}
    verdicts = {n: kernel_verdict([o for o in runs if o.verdict != "not applicable"]) for n, runs in by_case.items()}
    modelled = [n for n in lib if verdicts[n] != "tool-limit"]
    assert len([n for n in modelled if verdicts[n] == "match"]) >= 0.8 * len(modelled) and len(modelled) >= 12
    ragged = {o.case for o in outcomes if o.size == "ragged" and o.verdict == "match"}
    assert RAGGED <= ragged
    assert all(verdicts[n] == "match" for n in NKIBENCH_DEFAULT)
    if os.environ.get("NKI_ASSIST_NKIBENCH") == "1":  # every NKIBench kernel, at benchmark size, in 4 GiB
        assert {n: v for n, v in verdicts.items() if n.startswith("nkibench_") and v != "match"} == {}
