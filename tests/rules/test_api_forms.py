"""NKI510/NKI516 on legacy-dialect kernels and NKI517-NKI519: line, severity and evidence of each finding on
kernels written here (the fixtures under tests/fixtures/rules cover where each fires and where not)."""

from __future__ import annotations

import textwrap

import numpy

from nki_assist.check import apply_fixes
from nki_assist.check import CheckOptions, check_source
from nki_assist.findings import Severity
from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.rules.nki.run import run_nki_rules

LEGACY = "import neuronxcc.nki as nki\nimport neuronxcc.nki.isa as nisa\nimport neuronxcc.nki.language as nl\n"
NEW = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n"


def findings(src: str, rule: str, head: str = LEGACY):
    text = head + textwrap.dedent(src)
    return [f for f in run_nki_rules(parse_nki(text, "k.py"), get_target("trn2")) if f.rule == rule], text


def test_nki510_legacy_unknown_name_under_import_guard_suggests_and_renames():
    fs, text = findings("""
        if True:
            @nki.jit
            def k(a):
                out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
                nl.store(out[0:128, 0:64], value=nl.negate(nl.load(a[0:128, 0:64])))
                return out
        """, "NKI510")
    assert [(f.line, f.severity) for f in fs] == [(9, Severity.WARNING)]
    f = fs[0]
    assert f.evidence["dialect"] == "legacy" and f.evidence["suggestion"] == "negative"
    checked = [f for f in check_source("k.py", text, CheckOptions()) if f.rule == "NKI510"]
    out, applied = apply_fixes(text, [f.autofix for f in checked if f.autofix is not None])
    assert len(applied) == 1 and "nl.negative(nl.load(" in out and "negate" not in out
    assert not [f for f in check_source("k.py", out, CheckOptions()) if f.rule == "NKI510"]


def test_nki510_legacy_names_of_any_release_are_not_reported():
    fs, _ = findings("""
        @nki.jit
        def k(a):
            out = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
            t = nl.load_transpose2d(a[0:128, 0:128])
            u = nisa.nc_transpose(nl.gelu_apprx_tanh(t))
            nl.store(out[0:128, 0:128], value=nl.rms_norm(u, nl.ones((128, 1), dtype=nl.float32), axis=1))
            return out
        """, "NKI510")
    assert fs == []


def test_nki516_legacy_named_clamp_reported_once_at_the_clamp_with_its_slice():
    fs, _ = findings("""
        @nki.jit
        def k(x):
            n = x.shape[0]
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            for p in nl.affine_range((n + 127) // 128):
                off = p * 128
                end = min(off + 128, n)
                for j in nl.affine_range(4):
                    t = nl.load(x[off:end, j:j + 1])
                    nl.store(out[off:end, j:j + 1], value=t)
            return out
        """, "NKI516")
    assert [(f.line, f.severity) for f in fs] == [(11, Severity.WARNING)]
    assert fs[0].evidence["slice_line"] == 13 and fs[0].evidence["nki_version"] == "legacy"
    assert fs[0].evidence["bound"] == "min(off + 128, n)"


def test_nki516_new_dialect_named_clamp_is_not_reported_but_inline_one_is():
    src = """
        @nki.jit
        def k(x):
            n = x.shape[1]
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            for i in nl.affine_range((n + 511) // 512):
                lo = i * 512
                size = min(512, n - lo)
                t = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=t[0:128, 0:size], src=x[0:128, lo:lo + size])
                nisa.dma_copy(dst=out[0:128, lo:min(lo + 512, n)], src=t[0:128, 0:size])
            return out
        """
    fs, _ = findings(src, "NKI516", head=NEW)
    assert [f.line for f in fs] == [14]


def test_nki517_minus_equals_on_matmul_only():
    fs, _ = findings("""
        @nki.jit
        def k(a, b):
            out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
            acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            for i in nl.affine_range(4):
                at = nl.load(a[i * 128:(i + 1) * 128, 0:128])
                bt = nl.load(b[i * 128:(i + 1) * 128, 0:512])
                acc += nisa.nc_matmul(at, bt)
                acc[...] -= nisa.nc_matmul(at, bt)
                acc -= -nl.matmul(at, bt, transpose_x=True)
            res = nl.copy(acc)
            res -= 1.0
            nl.store(out, value=res)
            return out
        """, "NKI517")
    assert [(f.line, f.severity, f.evidence["operator"], f.evidence["api"]) for f in fs] == [
        (13, Severity.WARNING, "-=", "nisa.nc_matmul"), (14, Severity.WARNING, "-=", "nl.matmul")]
    assert fs[0].evidence["target"] == "acc[...]" and "nl.negative" in fs[0].fix


def test_nki518_missing_numpy_attribute_in_kernel_only():
    fs, _ = findings("""
        import numpy as np
        import numpy.random as npr

        @nki.jit
        def k(a):
            out = nl.ndarray(a.shape, dtype=np.float32, buffer=nl.shared_hbm)
            t = nisa.tensor_scalar(data=nl.load(a[0:128, 0:64]), op0=np.mul, operand0=2.0)
            seed = npr.defualt_rng
            old = np.float_
            nl.store(out[0:128, 0:64], value=t)
            return out

        def host(x):
            return np.mul(x, 2)
        """, "NKI518")
    assert [(f.line, f.severity, f.evidence["name"]) for f in fs] == [
        (11, Severity.WARNING, "numpy.mul"), (12, Severity.WARNING, "numpy.random.defualt_rng")]
    assert fs[0].evidence["suggestion"] == "multiply" and fs[0].evidence["numpy_version"] == numpy.__version__
    assert "`np.multiply`" in fs[0].message


def test_nki519_local_hbm_source_not_argument_or_sbuf():
    fs, _ = findings("""
        @nki.jit
        def k(x):
            out = nl.ndarray((8, 128), dtype=x.dtype, buffer=nl.shared_hbm)
            scratch = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.hbm)
            nl.store(scratch, value=nl.load(x[0:128, 0:8]))
            a = nl.load_transpose2d(x[0:128, 0:8])
            b = nl.load_transpose2d(scratch.reshape((128, 8))[0:128, 0:8])
            nl.store(out, value=a)
            return out
        """, "NKI519", head=NEW)
    assert [(f.line, f.severity, f.confidence) for f in fs] == [(11, Severity.WARNING, "low")]
    assert fs[0].evidence["allocation_line"] == 8 and fs[0].evidence["buffer"] == "hbm"


def test_nki513_legacy_discarded_result_notes_the_dst_first_form():
    fs, _ = findings("""
        @nki.jit
        def k(a_t, b):
            acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            at = nl.load(a_t[0:128, 0:128])
            bt = nl.load(b[0:128, 0:512])
            nisa.nc_matmul(acc, at, bt)
            nisa.nc_transpose(at)
            acc += nisa.nc_matmul(at, bt)
            return acc
        """, "NKI513")
    assert [(f.line, f.severity, f.evidence["dst_first"]) for f in fs] == [
        (10, Severity.WARNING, True), (11, Severity.WARNING, False)]
    assert "dst-first" in fs[0].message and "dst-first" not in fs[1].message
