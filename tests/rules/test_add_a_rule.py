"""Adding a rule touches one rule module and its fixtures, nothing else.

A toy rule module (its RuleSpec beside its check, as every rules/nki module has them) is dropped into the
rules/nki package's search path: the registry lists it, `explain` has its docs page, `check` runs it on
its positive fixture and not on its negative one. No list, table or import elsewhere names it.
"""

from __future__ import annotations

import textwrap

import pytest

import nki_assist.rules.nki as nki_package
from nki_assist.check import CheckOptions, check_text
from nki_assist.rules import registry
from nki_assist.rules.nki import common, run

TOY_MODULE = textwrap.dedent('''
    """Toy family: one rule, its metadata beside its check."""
    from nki_assist.findings import Severity
    from nki_assist.rules.nki.common import check, emit
    from nki_assist.rules.registry import RuleSpec

    RULES = [
        RuleSpec("NKI599", "toy-divide-by-tile", "unsupported-construct", Severity.WARNING,
                 "A toy rule: `nl.divide` is called.",
                 doc="## What it finds\\nEvery `nl.divide` call (a test of the rule registry).\\n"),
    ]


    @check("NKI599")
    def toy(nf, target):
        for k in nf.kernels:
            for c in k.calls:
                if c.api == "nl.divide":
                    yield emit("NKI599", nf, c.line, c.col, c.end_line, c.end_col, "toy: nl.divide is called")
''')

FIXTURE_HEAD = textwrap.dedent('''
    import neuronxcc.nki as nki
    import neuronxcc.nki.language as nl


    @nki.jit
    def kernel(a):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a[0:128, 0:512])
''').lstrip()
POSITIVE = FIXTURE_HEAD + "    u = nl.divide(t, 2.0)  # expect: NKI599\n    nl.store(out[0:128, 0:512], value=u)\n    return out\n"
NEGATIVE = FIXTURE_HEAD + "    u = nl.multiply(t, 0.5)\n    nl.store(out[0:128, 0:512], value=u)\n    return out\n"


def _forget() -> None:
    registry._family.cache_clear()
    registry._all.cache_clear()
    run.load_checks.cache_clear()


@pytest.fixture
def toy_rule(tmp_path, monkeypatch):
    (tmp_path / "toy_family.py").write_text(TOY_MODULE, encoding="utf-8")
    monkeypatch.setattr(nki_package, "__path__", [*nki_package.__path__, str(tmp_path)])
    before = list(common.CHECKS.checks)
    _forget()
    yield
    common.CHECKS.checks[:] = before
    monkeypatch.undo()
    _forget()
    assert "NKI599" not in {r.id for r in registry.all_rules()}


def test_a_new_rule_module_is_registered_documented_and_run(toy_rule):
    spec = registry.get("NKI599")
    assert (spec.name, spec.category, spec.severity.value) == ("toy-divide-by-tile", "unsupported-construct",
                                                               "warning")
    assert registry.get("toy-divide-by-tile") is spec and registry.registry_problems() == []
    assert registry.docs_text("NKI599").startswith("# toy-divide-by-tile (NKI599)")
    assert "NKI599" in run.rule_ids()

    options = CheckOptions(select=["NKI599"])
    pos = check_text("pos_toy.py", POSITIVE, options).findings
    expected = next(n for n, line in enumerate(POSITIVE.splitlines(), 1) if "expect: NKI599" in line)
    assert [(f.rule, f.line, f.severity.value) for f in pos] == [("NKI599", expected, "warning")]
    assert check_text("neg_toy.py", NEGATIVE, options).findings == []


def test_the_registry_is_back_to_the_real_rules_after_the_toy():
    assert "NKI599" not in {r.id for r in registry.all_rules()}
    assert all(not any(r == "NKI599" for r in c.rules) for c in common.CHECKS.checks)
