"""`check` on every NKI file of AWS's public nki-samples (both snapshots): the error-severity findings are
exactly the reviewed ones below. A new error on this code is either a real defect (add it here with the
reason) or a false accusation (fix the rule). Kernels are read from the local snapshot at run time (never
copied here) at `../shared/corpora` (tests/conformance/corpora.py); skipped when it is absent."""

from __future__ import annotations

import pytest
from corpora import SAMPLES_HEAD, SAMPLES_LEGACY, nki_sources, snapshot

from nki_assist.check import CheckOptions, check_text

# (file, rule, line) -> why the error stands
REVIEWED = {
    ("contributed/neuron-team-kernels/transpose.py", "NKI504", 17):
        "imports legacy `neuronxcc.nki` and `nki.language.constants` in one file",
}


def _errors() -> dict[tuple[str, str, int], str]:
    found = {}
    for _, name, text in nki_sources(SAMPLES_LEGACY, SAMPLES_HEAD):
        for f in check_text(name, text, CheckOptions()).findings:
            if f.severity.value == "error":
                found[(name, f.rule, f.line)] = f.message
    return found


def test_errors_on_public_kernels_are_the_reviewed_ones():
    if snapshot(SAMPLES_LEGACY) is None or snapshot(SAMPLES_HEAD) is None:
        pytest.skip("no nki-samples snapshots under ../shared/corpora")
    found = _errors()
    present = {name for _, name, _ in nki_sources(SAMPLES_LEGACY, SAMPLES_HEAD)}
    reviewed = {k: v for k, v in REVIEWED.items() if k[0] in present}  # the snapshots hold part of contributed/
    assert set(found) == set(reviewed), {k: found.get(k, "missing") for k in set(found) ^ set(reviewed)}
