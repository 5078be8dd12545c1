"""Fake NKI/CUDA front ends and rules so the check engine is tested independently of the real ones.

A fake rule fires on every line containing its trigger word: `BADPSUM` -> NKI990 (error),
`SLOWDMA` -> NKI991 (warning), `RACE` -> CUDA990 (warning). `CRASH` makes the fake parser raise.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass

import pytest

from nki_assist.findings import Severity
from nki_assist.rules import registry
from nki_assist.rules.registry import RuleSpec

FAKE_SPECS = [
    RuleSpec(id="NKI990", name="fake-psum-overflow", category="psum-bank-overflow", severity=Severity.ERROR,
             summary="fake", fix="split it"),
    RuleSpec(id="NKI991", name="fake-small-dma", category="small-dma", severity=Severity.WARNING,
             summary="fake"),
    RuleSpec(id="CUDA990", name="fake-shared-race", category="indexing-error", severity=Severity.WARNING,
             summary="fake", languages=("cuda",)),
]
TRIGGERS = {"BADPSUM": "NKI990", "SLOWDMA": "NKI991", "RACE": "CUDA990"}


@dataclass
class FakeFile:
    text: str
    path: str

    def to_json(self):
        return {"kernels": [{"name": "k", "lines": self.text.count("\n") + 1}]}


def _parse(text, path, cache=None, constants=None):  # the front ends' signature (NKI: a ParseCache, imported constants)
    if "CRASH" in text:
        raise RuntimeError("fake parser exploded")
    return FakeFile(text, path)


def _rules(parsed, target):
    out = []
    for n, line in enumerate(parsed.text.splitlines(), 1):
        for word, rule in TRIGGERS.items():
            col = line.find(word)
            if col >= 0:
                spec = registry.get(rule)
                out.append(spec.finding(f"{word} seen on target {target.name}", file=parsed.path, line=n,
                                        column=col + 1, evidence={"word": word}))
    return out


@pytest.fixture
def fake_front_ends(monkeypatch):
    # Only the tool's own rules plus the fakes: other families evolve independently of the engine.
    from nki_assist.rules.specs.general import RULES as GENERAL

    fake = dict(sorted({s.id: s for s in [*GENERAL, *FAKE_SPECS]}.items()))
    monkeypatch.setattr(registry, "_all", lambda: fake)
    monkeypatch.setattr(registry, "_family", lambda package: {})  # lookups go to the fake table only
    nki = types.ModuleType("nki_assist.parse.nki")
    nki.is_nki_source = lambda text: "import nki" in text or "neuronxcc" in text
    nki.parse_nki = _parse
    nki_rules = types.ModuleType("nki_assist.rules.nki.run")
    nki_rules.run_nki_rules = _rules
    cuda = types.ModuleType("nki_assist.parse.cuda")
    cuda.parse_cuda = _parse
    cuda_rules = types.ModuleType("nki_assist.rules.cuda.checks")
    cuda_rules.run_cuda_rules = _rules
    for name, mod in [("nki_assist.parse.nki", nki), ("nki_assist.rules.nki.run", nki_rules),
                      ("nki_assist.parse.cuda", cuda), ("nki_assist.rules.cuda.checks", cuda_rules)]:
        monkeypatch.setitem(sys.modules, name, mod)
    import nki_assist.parse
    import nki_assist.rules
    monkeypatch.setattr(nki_assist.parse, "nki", nki, raising=False)
    monkeypatch.setattr(nki_assist.parse, "cuda", cuda, raising=False)
    monkeypatch.setattr(nki_assist.rules, "nki_rules", nki_rules, raising=False)
    monkeypatch.setattr(nki_assist.rules, "cuda_rules", cuda_rules, raising=False)
    return fake
