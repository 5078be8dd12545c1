"""The NKI API catalogue (nki_assist/api/catalogue.py) is the one list of APIs: the simulator's dialect adapters,
the parser's role table, the simulator's tool-limit list and the cost model's op table agree with it."""

from __future__ import annotations

import inspect

import pytest

from nki_assist.api import catalogue as nki_api
from nki_assist.api.hardware import get_target
from nki_assist.parse.nki_extract import ROLES
from nki_assist.perf import cost
from nki_assist.sim import isa, language, runner

LANG = language.namespace(get_target("trn2"))
LEGACY_ISA = isa.legacy_namespace()
NEW_ISA = isa.new_namespace()


def _callables(ns: dict) -> set[str]:
    return {k for k, v in ns.items() if callable(v) and not isinstance(v, type) and not k.startswith("_")}


def _adapters() -> dict[str, dict[str, object]]:
    """API name -> {dialect: the simulator's function}."""
    out: dict[str, dict[str, object]] = {}
    for name in _callables(LANG):  # nl.* is one namespace for both dialects
        out[f"nl.{name}"] = {"legacy": LANG[name], "new": LANG[name]}
    for dialect, ns in (("legacy", LEGACY_ISA), ("new", NEW_ISA)):
        for name in _callables(ns) - {"nc_version"}:
            out.setdefault(f"nisa.{name}", {})[dialect] = ns[name]
    return out


ADAPTERS = _adapters()


def test_every_adapter_has_an_entry_with_its_dialects():
    missing = sorted(set(ADAPTERS) - set(nki_api.BY_NAME))
    assert missing == [], "add these to nki_assist/api/catalogue.py"
    for name, by_dialect in ADAPTERS.items():
        api = nki_api.BY_NAME[name]
        assert (api.legacy, api.new) == ("legacy" in by_dialect, "new" in by_dialect), name
        assert api.sim != "none", f"{name} is implemented: sim='full' or 'partial'"


def test_every_modelled_entry_has_an_adapter():
    modelled = {a.name for a in nki_api.CATALOGUE if a.sim != "none" and a.kind != "method"}  # methods: Tensor
    assert sorted(modelled - set(ADAPTERS)) == []
    unmodelled = {a.name for a in nki_api.CATALOGUE if a.sim == "none"}
    assert unmodelled and not unmodelled & set(ADAPTERS)


@pytest.mark.parametrize("api", [a for a in nki_api.CATALOGUE if a.params], ids=lambda a: a.name)
def test_recorded_parameters_match_the_adapters(api):
    """The parser's roles are the adapters' leading positional parameters (nisa.*, both dialects); nl.* takes the
    legacy form in both (new-dialect nl.* calls with `dst` are the parser's extension)."""
    legacy, new = api.params
    for dialect, roles in (("legacy", legacy), ("new", new)):
        fn = ADAPTERS[api.name].get(dialect)
        if fn is None or (api.module == "nl" and dialect == "new"):
            continue
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        assert names[: len(roles)] == list(roles), (api.name, dialect, names)


def test_derived_tables():
    assert ROLES == nki_api.roles() and "nisa.tensor_scalar" in ROLES
    assert runner.NOT_MODELLED == nki_api.simulator_limits() and "topk" in runner.NOT_MODELLED
    assert "tensor_copy" not in runner.NOT_MODELLED  # fully modelled
    assert cost._ONE_PASS_OPS == nki_api.one_pass_ops() and "tensor_tensor" not in cost._ONE_PASS_OPS
    assert runner.documented_api("nisa.topk(x)") and not runner.documented_api("nl.frobnicate")


def test_entries_are_well_formed():
    names = [a.name for a in nki_api.CATALOGUE]
    assert len(names) == len(set(names))
    for a in nki_api.CATALOGUE:
        assert a.engine in (None, "tensor", "vector", "scalar", "gpsimd", "dma"), a.name
        assert a.legacy or a.new, a.name
        assert a.doc_url.startswith(nki_api.DOCS) and a.doc_url.endswith(f".{a.short}.html")
    assert nki_api.BY_NAME["nisa.nc_matmul"].engine == "tensor"
    assert nki_api.BY_NAME["nl.load"].engine == "dma"
