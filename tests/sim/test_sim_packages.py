"""Kernels in packages (relative imports, sibling flags, enums, configs), kernels named by path or factory,
caller-provided outputs, and `.ap()` access patterns: fixture package tests/fixtures/sim/pkg/scalepkg."""

from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest
from sim_helpers import FIXTURES

from nki_assist.contracts.callargs import Keyword, Named, Output, PackageRoot, for_reference, split
from nki_assist.api.hardware import get_target
from nki_assist.sim import packages, run_kernel

PKG = FIXTURES / "pkg"
KFILE = str(PKG / "scalepkg" / "kernels" / "scale.py")
TRN2 = get_target("trn2")


def _x(shape=(128, 64)):
    return np.random.default_rng(1).standard_normal(shape).astype(np.float32)


def test_the_package_is_found_from_init_files_and_from_an_explicit_root():
    p = packages.find_package(KFILE)
    assert p == packages.Package(str(PKG), "scalepkg.kernels.scale")
    assert packages.find_package(KFILE, str(PKG)) == p
    assert packages.find_package(str(FIXTURES / "defect_misc.py")) is None
    with pytest.raises(LookupError, match="does not contain"):
        packages.find_package(KFILE, str(FIXTURES / "cuda"))


def test_a_kernel_under_if_has_nki_with_relative_imports_and_an_enum_keyword():
    x = _x()
    res = run_kernel(KFILE, "scale_kernel", [x, Keyword("act", Named("enum", "Act.RELU")), Keyword("factor", 2.0)],
                     target=TRN2)
    assert res.status == "ok", (res.error, [f.message for f in res.findings])
    np.testing.assert_allclose(res.outputs[0], np.maximum(x * 6.0, 0), rtol=1e-6)
    assert "scalepkg" not in sys.modules and "scalepkg.flags" not in sys.modules  # cleaned up after the run


def test_an_unknown_enum_member_is_a_backend_error_naming_it():
    res = run_kernel(KFILE, "scale_kernel", [_x(), Keyword("act", Named("enum", "Act.GELU"))], target=TRN2)
    assert res.status == "backend-error" and "Act.GELU" in res.error
    assert not [f for f in res.findings if f.severity.value == "error"]


def test_a_sub_kernel_writing_a_caller_output_with_a_config_object_and_a_dtype():
    x = _x()
    cfg = Named("call", "scalepkg.types.ScaleConfig", {"factor": 0.5, "act": Named("enum", "Act.IDENTITY")})
    out = np.zeros_like(x)
    res = run_kernel(KFILE, "scale_into", [x, Output(out), cfg, Keyword("dtype", Named("dtype", "float32"))],
                     target=TRN2)
    assert res.status == "ok", res.error
    assert len(res.outputs) == 1
    np.testing.assert_allclose(res.outputs[0], x * 1.5, rtol=1e-6)
    bad = Named("call", "ScaleConfig", {"factor": 0})
    res = run_kernel(KFILE, "scale_into", [x, Output(out), bad], target=TRN2)
    assert res.status == "backend-error" and "factor must be non-zero" in res.error


def test_a_factory_kernel_with_literal_arguments():
    x = _x()
    res = run_kernel(KFILE, "make_kernel(4.0)", [x], target=TRN2)
    assert res.status == "ok", res.error
    np.testing.assert_allclose(res.outputs[0], x * 12.0, rtol=1e-6)
    res = run_kernel(KFILE, "make_kernel(nope)", [x], target=TRN2)
    assert res.status == "backend-error" and "literal" in res.error


def test_an_explicit_package_root_without_init_files(tmp_path):
    ns = tmp_path / "nspkg" / "sub"
    ns.mkdir(parents=True)
    (tmp_path / "nspkg" / "consts.py").write_text("F = 5.0\n")
    (ns / "k.py").write_text(textwrap.dedent("""
        import nki
        import nki.isa as nisa
        import nki.language as nl
        from nspkg.consts import F

        @nki.jit
        def k(x):
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x)
            nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=F)
            nisa.dma_copy(dst=out, src=t)
            return out
    """))
    x = _x()
    res = run_kernel(str(ns / "k.py"), "k", [x, PackageRoot(str(tmp_path))], target=TRN2)
    assert res.status == "ok", res.error
    np.testing.assert_allclose(res.outputs[0], x * 5.0)


def test_the_reference_sees_plain_values():
    cfg = Named("call", "ScaleConfig", {"factor": 0.5, "act": Named("enum", "Act.RELU")})
    pos, kw = for_reference([1, Output(np.zeros(2)), cfg, Keyword("dtype", Named("dtype", "bfloat16")),
                             PackageRoot("/x")])
    assert pos[0] == 1 and pos[1].shape == (2,) and pos[2] == {"factor": 0.5, "act": "Act.RELU"}
    assert kw == {"dtype": "bfloat16"}
    assert split([1, Keyword("a", 2), PackageRoot("/x")]) == ([1], {"a": 2})


AP = """
import nki
import nki.isa as nisa
import nki.language as nl

@nki.jit
def k(x, idx):
    M, K = x.shape
    out = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.sbuf)
    # rows 2, 4, 6, ... columns 8..39 of x
    nisa.dma_copy(dst=t, src=x.ap(pattern=[[2 * K, 64], [1, 32]], offset=2 * K + 8))
    nisa.dma_copy(dst=out, src=t)
    return out

@nki.jit
def gather(x, idx):
    M, K = x.shape
    out = nl.ndarray((16, K), dtype=x.dtype, buffer=nl.shared_hbm)
    i = nl.ndarray((16, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=i, src=idx)
    t = nl.ndarray((16, K), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.ap(pattern=[[K, 16], [1, K]], vector_offset=i, indirect_dim=0))
    nisa.dma_copy(dst=out, src=t)
    return out

@nki.jit
def past_end(x, idx):
    M, K = x.shape
    out = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.ap(pattern=[[2 * K, 64], [1, 32]], offset=4 * K))
    nisa.dma_copy(dst=out, src=t)
    return out
"""


@pytest.mark.parametrize("kernel", ["k", "gather", "past_end"])
def test_access_patterns_strided_and_indirect(tmp_path, kernel):
    (tmp_path / "ap.py").write_text(AP)
    x = np.arange(130 * 48, dtype=np.float32).reshape(130, 48)
    idx = np.array([[5], [0], [129], [7]] * 4, dtype=np.int32)
    res = run_kernel(str(tmp_path / "ap.py"), kernel, [x, idx], target=TRN2)
    if kernel == "k":
        assert res.status == "ok", res.error
        np.testing.assert_array_equal(res.outputs[0], x[2:130:2, 8:40])
    elif kernel == "gather":
        assert res.status == "ok", res.error
        np.testing.assert_array_equal(res.outputs[0], x[idx[:, 0]])
    else:  # row 4 + 2*63 = 130 is past the last row (129): an index error at the .ap() line
        assert res.status == "kernel-error"
        err = [f for f in res.findings if f.severity.value == "error"]
        assert err and err[0].rule == "SIM113"
        assert err[0].line == AP.splitlines().index(
            "    nisa.dma_copy(dst=t, src=x.ap(pattern=[[2 * K, 64], [1, 32]], offset=4 * K))") + 1
