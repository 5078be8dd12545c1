"""NKI520 (outputs taken as parameters), NKI521 (generation equality), NKI522 (transpose dtypes) and NKI110's
version-dependent severity: the line, severity and evidence each fixture gets (tests/fixtures/rules/NKI5xx)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki.run import run_nki_rules

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "rules"


def found(rule: str, rel: str, target: str = "trn2", nki_version: str | None = None):
    path = FIX / rel
    t = get_target(target)
    if nki_version:
        t = dataclasses.replace(t, nki_version=nki_version)
    fs = run_nki_rules(parse_nki(path.read_text(), str(path)), t)
    return sorted(((f.line, f.severity.value, f) for f in fs if f.rule == rule), key=lambda x: x[0])


# -- NKI520 --------------------------------------------------------------------------------------------
def test_legacy_nki_jit_output_parameters_are_errors_with_their_writes():
    got = found("NKI520", "NKI520/pos_legacy_jit.py")
    assert [(line, sev) for line, sev, _ in got] == [(10, "error"), (11, "error")]
    out, stats = got[0][2], got[1][2]
    assert out.evidence["parameter"] == "out" and out.evidence["write_lines"] == [17]  # through out.reshape(...)
    assert [r.line for r in out.related] == [17]
    assert "err_cannot_update_immutable_parameter" in out.message
    assert stats.evidence["mutable"] is True and "err_mutable_parameter_not_returned" in stats.message


def test_optional_output_parameter_is_a_warning_that_names_the_launcher_convention():
    # optimum-neuron's flash_fwd_large_d: `output=None`, launched by torch_neuronx.nki_jit()(kernel) in another module
    got = found("NKI520", "NKI520/pos_optional_output.py")
    assert [(line, sev) for line, sev, _ in got] == [(8, "warning")]
    f = got[0][2]
    assert f.evidence["parameter"] == "out" and f.evidence["write_lines"] == [12]
    assert "`out=None` default" in f.message and "torch_neuronx.nki_jit" in f.message


def test_wrapped_baremetal_kernel_is_a_warning():
    got = found("NKI520", "NKI520/pos_wrapped_baremetal.py")
    assert [(line, sev) for line, sev, _ in got] == [(8, "warning")]
    assert got[0][2].evidence["launcher"] == "nki.baremetal"
    assert got[0][2].evidence["write_lines"] == [10]


def test_new_dialect_output_parameter_is_a_warning():
    got = found("NKI520", "NKI520/pos_new.py")
    assert [(line, sev) for line, sev, _ in got] == [(8, "warning")]
    assert got[0][2].evidence["write_lines"] == [13]  # dma_copy's positional dst


def test_returned_sub_kernel_workspace_and_pass_by_reference_launchers_are_silent():
    for rel in ("neg_returns.py", "neg_sub_kernel.py", "neg_workspace.py", "neg_torch_nki_jit.py"):
        assert found("NKI520", f"NKI520/{rel}") == [], rel


# -- NKI521 --------------------------------------------------------------------------------------------
def test_generation_equality_names_the_later_cores():
    got = found("NKI521", "NKI521/pos_equality.py")
    assert [(line, sev) for line, sev, _ in got] == [(11, "warning"), (17, "warning")]
    eq, ne = got[0][2], got[1][2]
    assert eq.evidence["generation"] == 3 and eq.evidence["later"] == [4] and eq.evidence["operator"] == "=="
    assert "NeuronCore-v4" in eq.message and ">=" in eq.fix
    assert ne.evidence["operator"] == "!=" and "<" in ne.fix  # through `version = nisa.get_nc_version()`


def test_oldest_newest_and_ordered_comparisons_are_silent():
    assert found("NKI521", "NKI521/neg_ordered.py") == []


# -- NKI522 --------------------------------------------------------------------------------------------
def test_transpose_dtypes_literal_is_error_input_dtype_is_warning():
    got = found("NKI522", "NKI522/pos_new.py")
    assert [(line, sev) for line, sev, _ in got] == [(13, "warning"), (17, "error")]
    warn, err = got[0][2], got[1][2]
    assert warn.evidence["data_kind"] == "input" and warn.evidence["data_dtype"] == "q"
    assert err.evidence["data_dtype"] == "bfloat16" and err.evidence["dst_dtype"] == "float32"
    assert sorted(r.line for r in err.related) == [14, 16]  # both allocations


def test_transpose_dtype_on_trn1_is_a_warning():
    got = found("NKI522", "NKI522/pos_new.py", target="trn1")
    assert [sev for _, sev, _ in got] == ["warning", "warning"]


def test_matching_upcast_vector_engine_and_legacy_transposes_are_silent():
    assert found("NKI522", "NKI522/neg_new.py") == []
    assert found("NKI522", "NKI522/neg_legacy.py") == []


# -- NKI110 by version ------------------------------------------------------------------------------------
def test_hbm_output_severity_follows_the_version_and_the_mode_keyword():
    assert [sev for _, sev, _ in found("NKI110", "NKI110/pos_new.py")] == ["error"]  # default 0.6
    assert [sev for _, sev, _ in found("NKI110", "NKI110/pos_new.py", nki_version="0.3")] == ["error"]
    assert [sev for _, sev, _ in found("NKI110", "NKI110/pos_new.py", nki_version="0.2")] == ["info"]
    mode = found("NKI110", "NKI110/pos_new_mode.py")
    assert [(line, sev) for line, sev, _ in mode] == [(13, "warning")]
    assert "mode=" in mode[0][2].message and mode[0][2].evidence["nki_version"] == "0.6"
