"""Conformance on AWS's public NKI samples (aws-neuron/nki-samples), read from a local snapshot at run time.

Skips when the snapshot is absent (CI has none); `python tests/conformance/nki_samples_corpus.py` prints the
table recorded in docs/simulator.md."""

from __future__ import annotations

import pytest
from nki_samples_corpus import Outcome, cases, repo_path, run_all

# kernels whose documented contract admits ragged shapes: each must match at a ragged size
RAGGED = {"transpose2d", "average_pool2d", "rmsnorm", "softmax", "layernorm_v1", "layernorm_v2", "rotary",
          "reference_add_nx8x128x512", "reference_allocated_rmsnorm_qkv", "reference_adaptive_avg_pool2d"}


def test_the_corpus_is_well_formed():
    names = [c.name for c in cases()]
    assert len(names) == len(set(names)) and len(names) >= 40
    for c in cases():
        assert c.sizes, c.name
        for s in c.sizes:
            assert (s.make is None) == bool(s.not_applicable), (c.name, s.name)
    assert RAGGED <= set(names)


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    repo = repo_path()
    if repo is None:
        pytest.skip("no nki-samples snapshot (NKI_SAMPLES_REPO)")
    return run_all(repo)


def test_no_false_finding_and_no_mismatch(outcomes):
    bad = [(o.case, o.size, o.verdict, o.detail) for o in outcomes if o.verdict in ("false finding", "mismatch")]
    assert bad == []


def test_unsupported_kernels_stop_with_an_info_finding_that_names_the_construct(outcomes):
    for o in outcomes:
        if o.verdict == "unsupported":
            assert o.detail and all(":info:" in f for f in o.findings), (o.case, o.findings)


def test_ragged_sizes_match(outcomes):
    ragged = {o.case for o in outcomes if o.size == "ragged" and o.verdict == "match"}
    assert RAGGED <= ragged
    assert sum(o.verdict == "match" for o in outcomes) >= 45
