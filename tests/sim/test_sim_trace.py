"""Trace entries, resource peaks, module isolation and bad-input handling."""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np
from sim_helpers import fixture

from nki_assist.api.hardware import get_target
from nki_assist.sim import run_kernel

BF16 = ml_dtypes.bfloat16


def _matmul_run(**kw):
    a = np.ones((256, 128), BF16)
    b = np.ones((256, 512), BF16)
    return run_kernel(fixture("legacy_matmul.py"), None, [a, b], target=get_target("trn2"), **kw)


def test_dma_entries_carry_bytes_transfers_and_hbm_region():
    res = _matmul_run()
    loads = [t for t in res.trace if t.direction == "load"]
    rhs = [t for t in loads if t.hbm_tensor == "rhs"]
    assert len(loads) == 4 and len(rhs) == 2
    assert rhs[1].hbm_box == ((128, 256), (0, 512))
    assert rhs[1].bytes == 128 * 512 * 2 and rhs[1].partitions == 128 and rhs[1].free_elems == 512
    # rows of 512 contiguous bf16 out of a 512-wide tensor: one row is one contiguous run per partition
    assert rhs[1].transfers == 128
    lhs = [t for t in loads if t.hbm_tensor == "lhsT"]
    assert lhs[0].hbm_box == ((0, 128), (0, 128)) and lhs[0].transfers == 128
    (store,) = [t for t in res.trace if t.direction == "store"]
    assert store.engine == "dma" and store.bytes == 128 * 512 * 2 and store.hbm_box == ((0, 128), (0, 512))
    assert store.srcs[0].buffer == "sbuf" and store.dst.buffer == "shared_hbm"


def test_engines_lines_and_loop_depth():
    res = _matmul_run()
    ops = {(t.op, t.engine, t.line, t.loop_depth) for t in res.trace}
    assert ("nc_matmul", "tensor", 20, 3) in ops
    assert ("dma_load", "dma", 19, 3) in ops
    assert ("memset", "vector", 16, 2) in ops
    assert ("tensor_copy", "vector", 21, 2) in ops
    assert ("dma_store", "dma", 22, 2) in ops
    assert [t.seq for t in res.trace] == sorted(t.seq for t in res.trace)


def test_peaks_count_live_tiles_per_partition():
    res = _matmul_run()
    # a [128,128] + b [128,512] bf16 tiles live together; one [128,512] fp32 PSUM accumulator
    assert res.peaks.sbuf_bytes_per_partition == 128 * 2 + 512 * 2
    assert res.peaks.psum_bytes_per_partition == 2048 and res.peaks.psum_banks == 1
    assert res.peaks.psum_line == 16 and res.peaks.sbuf_line == 19


def test_new_dialect_loop_tiles_do_not_accumulate_in_the_ledger():
    a = np.ones((512, 256), BF16)
    b = np.ones((512, 1024), BF16)
    res = run_kernel(fixture("new_matmul.py"), None, [a, b], target=get_target("trn2"))
    assert res.status == "ok"
    assert res.peaks.psum_banks == 1  # one accumulator per (m, n) block, reallocated each iteration
    # by last use: a and b (128*2 + 512*2 B) die at the last matmul, before `out` (512*4 B) is allocated
    assert res.peaks.sbuf_bytes_per_partition == 512 * 4 and res.peaks.sbuf_line == 21


def test_max_trace_truncates_with_a_note_and_trace_off_records_nothing():
    res = _matmul_run(max_trace=3)
    assert len(res.trace) == 3 and any("truncated" in n for n in res.notes)
    off = _matmul_run(trace=False)
    assert off.trace == [] and off.status == "ok"
    np.testing.assert_array_equal(off.outputs[0], res.outputs[0])


def test_modules_are_restored_after_a_run():
    before = {k: v for k, v in sys.modules.items() if k.split(".")[0] in ("nki", "neuronxcc", "torch")}
    _matmul_run()
    run_kernel(fixture("torch_import.py"), "double", [np.ones((4, 4), np.float32)], target=get_target("trn2"))
    after = {k: v for k, v in sys.modules.items() if k.split(".")[0] in ("nki", "neuronxcc", "torch")}
    assert after == before
    assert not any(k.startswith("nki_assist_kernel_") for k in sys.modules)


def test_missing_file_and_ambiguous_kernel_are_clear_errors(tmp_path):
    res = run_kernel(str(tmp_path / "nope.py"), None, [], target=get_target("trn2"))
    assert res.status == "backend-error" and "nope.py" in res.error
    two = tmp_path / "two.py"
    two.write_text("import nki\n@nki.jit\ndef a(x):\n    return x\n@nki.jit\ndef b(x):\n    return x\n")
    res = run_kernel(str(two), None, [], target=get_target("trn2"))
    assert res.status == "backend-error" and "a, b" in res.error
    bad = tmp_path / "bad.py"
    bad.write_text("import nki\n@nki.jit\ndef k(x:\n    return x\n")
    res = run_kernel(str(bad), None, [], target=get_target("trn2"))
    assert res.status == "kernel-error" and [(f.rule, f.line) for f in res.findings] == [("SIM114", 3)]


def test_new_dialect_output_outside_shared_hbm_is_flagged(tmp_path):
    k = tmp_path / "k.py"
    k.write_text(
        "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n\n@nki.jit\ndef k(x):\n"
        "    out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.hbm)\n"
        "    t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)\n"
        "    nisa.dma_copy(dst=t, src=x)\n"
        "    nisa.dma_copy(dst=out, src=t)\n"
        "    return out\n")
    res = run_kernel(str(k), None, [np.ones((128, 4), np.float32)], target=get_target("trn2"))
    assert [(f.rule, f.line) for f in res.findings] == [("SIM106", 7)]
    np.testing.assert_array_equal(res.outputs[0], np.ones((128, 4), np.float32))


def test_helper_module_next_to_the_kernel_loads_with_stubs_and_is_unloaded():
    res = run_kernel(fixture("with_helper.py"), None, [np.ones((4, 4), np.float32)], target=get_target("trn2"))
    assert res.status == "ok", res.error
    np.testing.assert_array_equal(res.outputs[0], np.full((4, 4), 2.0, np.float32))
    # the helper's instruction is attributed to the kernel line that called the helper
    (mul,) = [t for t in res.trace if t.op == "tensor_scalar"]
    assert mul.line == 10
    assert "sim_fixture_helpers" not in sys.modules and "torch_xla" not in sys.modules
