"""`nki-assist simulate` on the plain-NumPy fixture port, through the stand-in runner."""

from __future__ import annotations

import json
import shutil

import ml_dtypes
import numpy as np
import pytest

from nki_assist.cli import main
from nki_assist.api.hardware import TRN2
from nki_assist.numerics.inputs import make_inputs
from nki_assist.numerics.spec import load_spec
from nki_assist.toolchain.builtin import RUNNER_ENV


@pytest.fixture
def cli(fake_runner, monkeypatch):
    monkeypatch.setenv(RUNNER_ENV, fake_runner)
    return main


def _expected(spec, size):
    x, y, alpha = make_inputs(spec, size)
    kernel = (np.float32(alpha) * x.astype(np.float32) + y.astype(np.float32)).astype(ml_dtypes.bfloat16)
    ref = alpha * x.astype(np.float64) + y.astype(np.float64)
    return kernel.astype(np.float64), ref


def test_json_numbers_match_an_independent_computation(cli, axpy_port, capsys):
    code = cli(["simulate", str(axpy_port), "--format", "json", "--size", "aligned", "--timeout", "30"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["schema"] == "nki-assist/simulate@1" and doc["exit_code"] == 0
    assert doc["port"]["nki_kernel"] == "axpy" and doc["target"] == "trn2"
    (size,) = doc["sizes"]
    assert size["name"] == "aligned" and size["bindings"] == {"M": 4, "N": 64} and size["status"] == "ok"
    kern, ref = _expected(load_spec(axpy_port), "aligned")
    (agr,) = size["agreement"]
    assert agr["max_abs"] == pytest.approx(np.abs(kern - ref).max())
    assert agr["mismatches"] == 0 and agr["passed"] is True and agr["dtype"] == "bfloat16"
    assert size["within_tolerance"] is True and size["findings"] == [] and doc["findings"] == []
    assert size["engines"] == {"vector": {"count": 1, "share": 1.0}}
    assert size["peaks"]["sbuf_usable_bytes_per_partition"] == TRN2.sbuf_usable_bytes_per_partition


def test_ragged_tail_bug_fails_only_the_ragged_size(cli, axpy_port, tmp_path, capsys):
    for f in ("kernel.py", "reference.py"):
        shutil.copy(axpy_port.parent / f, tmp_path / f)
    (tmp_path / "port.toml").write_text(axpy_port.read_text().replace('nki_kernel = "axpy"',
                                                                      'nki_kernel = "axpy_tail_bug"'))
    code = cli(["simulate", str(tmp_path / "port.toml"), "--format", "json", "--timeout", "30"])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert code == 1 and doc["exit_code"] == 1
    assert "[1/2] size aligned" in captured.err and "[2/2] size ragged" in captured.err  # progress
    aligned, ragged = doc["sizes"]
    assert aligned["within_tolerance"] is True and ragged["within_tolerance"] is False
    spec = load_spec(tmp_path / "port.toml")
    _, ref = _expected(spec, "ragged")
    tail = np.abs(ref[:, 64:]) > 1e-2 + 1e-2 * np.abs(ref[:, 64:])  # zeros vs reference, 6 tail columns
    (agr,) = ragged["agreement"]
    assert agr["mismatches"] == int(tail.sum()) and agr["worst_index"][1] >= 64
    assert agr["mismatch_fraction"] == pytest.approx(tail.sum() / (4 * 70))
    (f,) = doc["findings"]
    assert f["rule"] == "TC107" and f["id"] == "F1" and f["severity"] == "error" and "'ragged'" in f["message"]


def test_text_output(cli, axpy_port, capsys):
    code = cli(["simulate", str(axpy_port), "--timeout", "30", "--size", "ragged", "--target", "trn1", "--fp32"])
    out = capsys.readouterr()
    assert code == 0
    text = out.out
    assert "port numpy_axpy  (trn1, builtin backend, fp32 storage)" in text
    assert "size ragged  M=4 N=70  status ok" in text and "size aligned" not in text
    assert "output 0 [4, 70] bfloat16:" in text and "mismatches 0/280 (0.00%)" in text and "PASS" in text
    assert "instructions 1: vector 1 (100%)" in text
    assert "summary: 1 of 1 sizes within tolerance" in text
    assert "simulating" not in out.err  # progress only for multi-size runs


def test_kernel_assert_on_ragged_size(cli, axpy_port, tmp_path, capsys):
    for f in ("kernel.py", "reference.py"):
        shutil.copy(axpy_port.parent / f, tmp_path / f)
    (tmp_path / "port.toml").write_text(axpy_port.read_text().replace('"axpy"', '"axpy_asserts"'))
    code = cli(["simulate", str(tmp_path / "port.toml"), "--format", "json", "--timeout", "30", "--size", "ragged"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    assert [s["status"] for s in doc["sizes"]] == ["kernel-error"] and doc["sizes"][0]["agreement"] == []
    (f,) = doc["findings"]
    line = next(i for i, l in enumerate((tmp_path / "kernel.py").read_text().splitlines(), 1) if "% 8 == 0" in l)
    assert f["rule"] == "TC106" and f["line"] == line and "multiple of 8" in f["message"]


def test_huge_size_is_skipped_not_run(cli, axpy_port, tmp_path, capsys):
    for f in ("kernel.py", "reference.py"):
        shutil.copy(axpy_port.parent / f, tmp_path / f)
    (tmp_path / "port.toml").write_text(axpy_port.read_text().replace("M = 4\nN = 70", "M = 65536\nN = 65536"))
    code = cli(["simulate", str(tmp_path / "port.toml"), "--format", "json", "--size", "ragged",
                "--memory-mb", "1024"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["sizes"][0]["status"] == "skipped" and doc["findings"][0]["rule"] == "TC109"
    assert code == 1 and doc["complete"] is False  # a skipped size is never a pass (issue 17)
    assert doc["incomplete"] == ["size 'ragged' not compared (skipped, too large for --memory-mb)"]


def test_usage_errors_exit_2(cli, axpy_port, tmp_path, capsys):
    assert cli(["simulate", str(axpy_port), "--size", "huge"]) == 2
    assert "no size 'huge'" in capsys.readouterr().err
    (tmp_path / "port.toml").write_text("[port]\nname = 'x'\nnki = 'missing.py'\n")
    assert cli(["simulate", str(tmp_path / "port.toml")]) == 2
    err = capsys.readouterr().err
    assert "port.nki: file not found" in err and "Traceback" not in err
    from nki_assist.toolchain.neuron import detect

    if detect()[0] is None:
        assert cli(["simulate", str(axpy_port), "--backend", "neuron"]) == 2
        assert "backend 'neuron' is not available here" in capsys.readouterr().err
