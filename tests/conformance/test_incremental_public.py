"""Incremental checking on AWS's public NKI samples: after random edits, the language server's
incremental check (parse.reuse.ParseCache) equals a cold check. The kernels are read from the local
snapshots at `../shared/corpora` at run time (never copied here); skipped when they are absent."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest
from corpora import SAMPLES_HEAD, SAMPLES_LEGACY, nki_sources

from nki_assist.check import CheckOptions, check_text
from nki_assist.parse.reuse import ParseCache

_spec = importlib.util.spec_from_file_location(
    "incremental_edits", Path(__file__).resolve().parents[1] / "nki" / "test_incremental.py")
edits = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(edits)  # the edit kinds and palette of the property test


def _sources() -> list[tuple[str, str]]:
    return [(f"{snap}:{name}", text) for snap, name, text in nki_sources(SAMPLES_LEGACY, SAMPLES_HEAD)]


def test_incremental_check_equals_cold_check_on_public_kernels():
    sources = _sources()
    if not sources:
        pytest.skip("no nki-samples snapshots under ../shared/corpora")
    rng = random.Random(14)
    options = CheckOptions()
    assert len(sources) >= 40
    mismatches, reused = [], 0
    for name, text in sources:
        cache = ParseCache()
        check_text("k.py", text, options, cache=cache)
        for _ in range(3):
            kind = rng.choice(["insert", "delete", "copy-line", "number", "constant", "import"])
            arg = {"insert": rng.choice(edits.PALETTE), "delete": rng.randrange(1, 40), "copy-line": rng.random(),
                   "number": rng.choice([0, 1, 2, 64, 128, 512]), "constant": rng.choice([1, 64, 128, "None"]),
                   "import": rng.choice(["", "import numpy as nl", "import neuronxcc.nki.language as nl"])}[kind]
            step = (kind, rng.random() * 0.999, arg)
            text = edits._apply(text, step)
            warm, cold = check_text("k.py", text, options, cache=cache), check_text("k.py", text, options)
            if edits._result(warm) != edits._result(cold) or warm.parsed != cold.parsed:
                mismatches.append((name, step))
        reused += cache.hits
    assert mismatches == []
    assert reused > len(sources)  # most edits leave most functions reusable
