"""The builtin backend's child process: results, limits and lines, on plain-NumPy kernels."""

from __future__ import annotations

import time

import ml_dtypes
import numpy as np
import pytest
from toolchain_paths import PORTS

from nki_assist.toolchain.builtin import BuiltinBackend
from nki_assist.toolchain.registry import available_backends, get_backend
from nki_assist.toolchain.sandbox import run_in_child, timeout_line

pytestmark = pytest.mark.usefixtures("sandbox_start")  # fresh process and warm zygote alike

KERNEL = str(PORTS / "numpy_axpy" / "kernel.py")


def _line_of(path: str, text: str) -> int:
    return next(i for i, l in enumerate(open(path).read().splitlines(), 1) if text in l)


def _args(n=64):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, n)).astype(ml_dtypes.bfloat16)
    y = rng.standard_normal((4, n)).astype(ml_dtypes.bfloat16)
    return [x, y, 0.5]


def test_ok_run_passes_bf16_arrays_both_ways(fake_runner):
    args = _args()
    r = BuiltinBackend(fake_runner).run(KERNEL, "axpy", args, target="trn1", timeout_s=30)
    assert r.status == "ok" and r.backend == "builtin" and r.findings == []
    assert r.outputs[0].dtype == ml_dtypes.bfloat16
    want = (np.float32(0.5) * args[0].astype(np.float32) + args[1].astype(np.float32)).astype(ml_dtypes.bfloat16)
    assert np.array_equal(r.outputs[0].view(np.uint16), want.view(np.uint16))
    assert "target=trn1 precise=True" in r.notes[0]  # options reached the runner


def test_infinite_loop_becomes_timeout_with_line(fake_runner):
    t0 = time.perf_counter()
    r = BuiltinBackend(fake_runner).run(KERNEL, "axpy_spin", _args(), timeout_s=2)
    took = time.perf_counter() - t0
    assert took < 2 + 20, took  # limit + start-up margin on a loaded machine, never a hang
    assert r.status == "timeout"
    (f,) = r.findings
    assert f.rule == "TC101" and f.severity.value == "error"
    loop = _line_of(KERNEL, "def axpy_spin")
    assert f.line in (loop + 1, loop + 2) and f.file == KERNEL  # the `while` or its body
    assert f.evidence["timeout_s"] == 2


def test_100_gib_allocation_becomes_out_of_memory(fake_runner):
    r = BuiltinBackend(fake_runner).run(KERNEL, "axpy_huge", _args(), timeout_s=30, memory_mb=1024)
    assert r.status == "out-of-memory"
    (f,) = r.findings
    assert f.rule == "TC102" and f.line == _line_of(KERNEL, "scratch = np.empty")
    assert f.evidence["memory_limit_mb"] == 1024


def test_kernel_exception_reports_the_raising_line(fake_runner):
    r = BuiltinBackend(fake_runner).run(KERNEL, "axpy_asserts", _args(70), timeout_s=30)
    assert r.status == "kernel-error"
    assert r.error == "AssertionError: N must be a multiple of 8"
    (f,) = r.findings
    assert f.rule == "TC106" and f.line == _line_of(KERNEL, "assert x.shape[1] % 8 == 0")


def test_kernel_crash_is_an_error_finding_not_parent_crash(fake_runner):
    r = BuiltinBackend(fake_runner).run(KERNEL, "axpy_abort", _args(), timeout_s=30)
    assert r.status == "kernel-error"  # the kernel ran when the process died: never a pass
    (f,) = r.findings
    assert f.rule == "TC110" and f.severity.value == "error" and "SIGABRT" in r.error
    assert f.line == _line_of(KERNEL, "os.abort()")  # from the faulthandler dump on stderr


def test_runner_that_does_not_exist_is_backend_error():
    r = BuiltinBackend("no_such_module_xyz:run_kernel").run(KERNEL, "axpy", _args(), timeout_s=30)
    assert r.status == "backend-error" and r.findings[0].rule == "TC103"
    assert "no_such_module_xyz" in r.error


def test_runner_status_only_gets_a_finding(fake_runner, tmp_path, monkeypatch):
    """A simulator that reports kernel-error without a finding still yields TC106 on its line."""
    mod = tmp_path / "statusonly_runner.py"
    mod.write_text(
        "from nki_assist.contracts.runs import RunResult\n"
        "def run_kernel(path, kernel, args, kwargs=None, **kw):\n"
        "    return RunResult(backend='x', status='kernel-error', error='IndexError: tile out of range', error_line=7)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    r = BuiltinBackend("statusonly_runner:run_kernel").run(KERNEL, "axpy", _args(), timeout_s=30)
    assert r.status == "kernel-error" and [(f.rule, f.line) for f in r.findings] == [("TC106", 7)]


def test_timeout_line_parses_faulthandler_dump(tmp_path):
    k = tmp_path / "k.py"
    k.write_text("x = 1\n")
    dump = (f'Timeout (0:00:02)!\nThread 0x1 (most recent call first):\n'
            f'  File "/usr/lib/numpy/core.py", line 99 in dot\n  File "{k}", line 12 in inner\n'
            f'  File "{k}", line 3 in kernel\n')
    assert timeout_line(dump, str(k)) == 12
    assert timeout_line(dump, None) is None


def test_run_in_child_returns_values():
    out = run_in_child("json:loads", {"s": "[1, 2.5]"}, timeout_s=30)
    assert out.status == "ok" and out.value == [1, 2.5]
    out = run_in_child("json:loads", {"s": "{bad"}, timeout_s=30)
    assert out.status == "error" and out.error.startswith("JSONDecodeError: ") and out.line is None


def test_registry():
    assert available_backends()[0] == "builtin"
    assert isinstance(get_backend("builtin"), BuiltinBackend)
    with pytest.raises(ValueError, match="unknown backend"):
        get_backend("tpu")
