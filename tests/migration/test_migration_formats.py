"""MIG112 format-range-differs: a scale/clamp constant for another format's range (both maxima stated, at
the constant's line), float16 where the CUDA kernel rounds to bfloat16, and the CUDA format facts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nki_assist.api.hardware import get_target
from nki_assist.parse.cuda import parse_cuda
from nki_assist.parse.cuda_formats import format_facts, saturates
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.migration.checks import run_migration_rules

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "migration_formats"
# the simulator's fp8 fixture is also the NKI side of quant_ocp.cu (one kernel, two tests)
FP8_NKI = (Path(__file__).resolve().parents[1] / "fixtures" / "sim" / "legacy_fp8_scale.py").read_text()


def mig112(cuda: str, nki: str, target: str = "trn2", nki_text: str | None = None):
    cf = parse_cuda((FIX / cuda).read_text(), cuda)
    nf = parse_nki(nki_text if nki_text is not None else (FIX / nki).read_text(), nki)
    return [f for f in run_migration_rules(cf, nf, get_target(target)) if f.rule == "MIG112"]


def marked(nki: str) -> list[int]:
    return [i for i, t in enumerate((FIX / nki).read_text().splitlines(), 1) if re.search(r"# expect: MIG112", t)]


def line(text: str, needle: str) -> int:
    return next(i for i, t in enumerate(text.splitlines(), 1) if needle in t)


def test_cuda_format_facts():
    cf = parse_cuda((FIX / "quant_ocp.cu").read_text(), "quant_ocp.cu")
    uses = format_facts(cf, cf.kernels[0])
    assert ("constant", "fp8_e4m3", 3, 448.0) in [(u.kind, u.format, u.line, u.value) for u in uses]
    assert ("type", "fp8_e4m3", 11) in [(u.kind, u.format, u.line) for u in uses]
    assert saturates(uses)  # __nv_fp8_e4m3 constructors convert with __NV_SATFINITE
    cf2 = parse_cuda((FIX / "scores_bf16.cu").read_text(), "scores_bf16.cu")
    uses2 = format_facts(cf2, cf2.kernels[0])
    assert {(u.kind, u.format, u.text) for u in uses2 if u.line == 8} == {
        ("type", "bfloat16", "__nv_bfloat16"), ("convert", "bfloat16", "__float2bfloat16_rn")}
    assert not saturates(uses2)


def test_ocp_scale_kept_for_neuron_e4m3_legacy():
    (f,) = mig112("quant_ocp.cu", "quant_nki.py", nki_text=FP8_NKI)
    assert f.line == line(FP8_NKI, "FP8_MAX = 448.0") == 7
    assert (f.category, f.severity.value, f.source) == ("fp8-range", "error", "migration")
    ev = f.evidence
    assert (ev["constant"], ev["nki_format"], ev["nki_max"], ev["cuda_format"], ev["cuda_max"]) == (
        448.0, "float8_e4m3", 240.0, "fp8_e4m3", 448.0)
    cast = line(FP8_NKI, "dtype=nl.float8_e4m3)")
    assert (ev["cast_line"], ev["cuda_line"], ev["cuda_conversion_line"], ev["cuda_saturates"]) == (cast, 3, 11, True)
    assert "448" in f.message and "240" in f.message and "__NV_SATFINITE" in f.message
    assert f.related[0].file == "quant_ocp.cu" and f.related[0].line == 3
    right = FP8_NKI.replace("FP8_MAX = 448.0", "FP8_MAX = 240.0")  # scaled to float8_e4m3's maximum
    assert mig112("quant_ocp.cu", "quant_nki.py", nki_text=right) == []


def test_ocp_clamp_written_into_an_e4m3_tile_new():
    (f,) = mig112("clamp_ocp.cu", "clamp_ocp_new_nki.py")
    assert f.line == marked("clamp_ocp_new_nki.py")[0] == 13
    ev = f.evidence
    assert (ev["role"], ev["also_lines"], ev["cast_line"]) == ("clamp", [14], 16)  # the tensor_copy into f8
    assert (ev["nki_max"], ev["cuda_max"]) == (240.0, 448.0)


def test_trn3_e4m3fn_keeps_448_and_240_only_wastes_range():
    src = (FIX / "clamp_ocp_new_nki.py").read_text().replace("nl.float8_e4m3,", "nl.float8_e4m3fn,")
    assert mig112("clamp_ocp.cu", "k_nki.py", "trn3", src) == []
    low = src.replace("-448.0", "-240.0").replace("operand0=448.0", "operand0=240.0")
    (f,) = mig112("clamp_ocp.cu", "k_nki.py", "trn3", low)
    assert (f.severity.value, f.evidence["constant"], f.evidence["nki_max"]) == ("info", 240.0, 448.0)


def test_float16_intermediate_where_cuda_rounds_to_bfloat16():
    (f,) = mig112("scores_bf16.cu", "scores_fp16_new_nki.py")
    assert f.line == marked("scores_fp16_new_nki.py")[0]
    assert (f.category, f.severity.value) == ("overflow-risk", "warning")
    assert (f.evidence["nki_max"], f.evidence["cuda_max"]) == (65504.0, pytest.approx(3.3895e38, rel=1e-4))
    assert f.related[0].line == 8
    same = (FIX / "scores_fp16_new_nki.py").read_text().replace("dtype=nl.float16", "dtype=nl.bfloat16")
    assert mig112("scores_bf16.cu", "k_nki.py", nki_text=same) == []


def test_a_448_shape_is_not_a_format_constant():
    src = FP8_NKI.replace("FP8_MAX = 448.0", "FP8_MAX = 240.0").replace(
        "    P, N = x.shape\n", "    P, N = x.shape\n    assert N == 448\n")
    assert mig112("quant_ocp.cu", "k_nki.py", "trn2", src) == []
