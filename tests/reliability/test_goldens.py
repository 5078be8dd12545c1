"""Malformed and misleading goldens (issue 31, item 3): only the npz members the spec uses are read,
sizes are checked before decompression, odd members and deep TOML end in a spec error naming file and
key, a golden of the wrong shape or far off is never passed or called rounding, NaN goldens report."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest
from reliability_helpers import make_port, run_cli, run_json

from nki_assist.findings import Finding
from nki_assist.numerics.npz import load_npz, npz_headers
from nki_assist.numerics.spec import SpecError, load_spec


def _edit(port: Path, old: str, new: str) -> None:
    text = port.read_text()
    assert old in text
    port.write_text(text.replace(old, new, 1))


def _golden(port: Path, outputs: np.ndarray | None = None, inputs: dict | None = None) -> None:
    keys = []
    if outputs is not None:
        np.savez(port.parent / "out.npz", outputs)
        keys.append('outputs = "out.npz"')
    if inputs is not None:
        keys.append('inputs = "in.npz"')
    _edit(port, "[tolerance]", "[golden]\n" + "\n".join(keys) + "\n\n[tolerance]")


def _row_sums(port: Path) -> np.ndarray:
    from nki_assist.numerics.inputs import make_inputs

    spec = load_spec(port)
    (x,) = make_inputs(spec, spec.sizes[0])
    return x.astype(np.float64).sum(axis=1, keepdims=True)


def test_unused_members_are_never_decompressed(tmp_path):
    """A ~9 MB npz whose unused member expands to 1.9 GB: before, the parent decompressed every member
    (np.load) and a 3 GiB address-space cap ended in an internal error."""
    port = make_port(tmp_path)
    x = np.zeros((128, 512), np.float32)
    path = tmp_path / "in.npz"
    n = 1900 * 2**20
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        with zf.open("x.npy", "w") as fh:
            np.lib.format.write_array(fh, x)
        with zf.open("junk.npy", "w", force_zip64=True) as fh:
            header = np.lib.format.header_data_from_array_1_0(np.zeros(1, np.uint8))
            header["shape"] = (n,)
            np.lib.format.write_array_header_1_0(fh, header)
            chunk = bytes(64 * 2**20)
            for start in range(0, n, len(chunk)):
                fh.write(chunk[: min(len(chunk), n - start)])
    assert path.stat().st_size < 16 * 2**20
    _golden(port, inputs={})
    loaded = load_npz(path, "port.toml: golden.inputs", 2**30, members=["x", "arr_0"])
    assert list(loaded) == ["x"] and loaded["x"].shape == (128, 512)
    done = run_cli(["simulate", str(port), "--format", "json"], memory_gb=3)
    assert done.returncode in (0, 1) and "internal error" not in done.stderr, done.stderr[-600:]
    assert '"status": "ok"' in done.stdout


def test_a_member_larger_than_its_header_is_refused_before_decompression(tmp_path):
    path = tmp_path / "lie.npz"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf, zf.open("arr_0.npy", "w") as fh:
        np.lib.format.write_array(fh, np.zeros(4, np.float32))
        fh.write(bytes(8 * 2**20))  # 8 MiB after a header declaring 16 bytes
    with pytest.raises(SpecError, match=r"member 'arr_0' expands to 8.0 MiB but its header declares 16 B"):
        load_npz(path, "port.toml: golden.outputs", 2**30)


@pytest.mark.parametrize("array,problem", [
    (np.zeros(4, dtype=[("a", np.float32), ("b", np.int32)]), "has a structured dtype"),
    (np.array(["a", "bc"]), "(text); only numeric arrays are accepted"),
    (np.array([b"xy"]), "(text); only numeric arrays are accepted"),
])
def test_structured_and_string_goldens_are_spec_errors(tmp_path, array, problem):
    port = make_port(tmp_path)
    _golden(port, outputs=array)
    with pytest.raises(SpecError) as exc:
        load_spec(port)
    assert f"{port}: golden.outputs: " in str(exc.value) and problem in str(exc.value)
    done = run_cli(["review", str(port), "-q"])
    assert done.returncode == 2 and "golden.outputs" in done.stderr and "internal error" not in done.stderr


def _patch_member(path: Path, *, method: int | None = None, flags: int | None = None) -> None:
    """Rewrite the compression method / flag bits of the first member in both zip headers."""
    data = bytearray(path.read_bytes())
    for sig, flag_off, method_off in ((b"PK\x03\x04", 6, 8), (b"PK\x01\x02", 8, 10)):
        i = data.index(sig)
        if flags is not None:
            data[i + flag_off:i + flag_off + 2] = flags.to_bytes(2, "little")
        if method is not None:
            data[i + method_off:i + method_off + 2] = method.to_bytes(2, "little")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("patch,problem", [
    ({"method": 9}, "uses zip compression method 9"),  # deflate64
    ({"flags": 1}, "is encrypted"),
])
def test_deflate64_and_encrypted_members_are_spec_errors(tmp_path, patch, problem):
    port = make_port(tmp_path)
    _golden(port, outputs=np.zeros((128, 1), np.float32))
    _patch_member(tmp_path / "out.npz", **patch)
    with pytest.raises(SpecError) as exc:
        npz_headers(tmp_path / "out.npz", f"{port}: golden.outputs")
    assert problem in str(exc.value)
    done = run_cli(["simulate", str(port)])
    assert done.returncode == 2 and "golden.outputs" in done.stderr and problem in done.stderr
    assert "internal error" not in done.stderr


def test_a_1000_deep_toml_array_is_a_spec_error(tmp_path):
    port = make_port(tmp_path)
    port.write_text(port.read_text() + "\n[extra]\nx = " + "[" * 1000 + "]" * 1000 + "\n")
    with pytest.raises(SpecError, match=r"port\.toml: invalid TOML: arrays or tables nested too deeply"):
        load_spec(port)
    done = run_cli(["simulate", str(port)])
    assert done.returncode == 2 and "nested too deeply" in done.stderr and "internal error" not in done.stderr


def test_a_golden_of_the_wrong_shape_is_stated_and_fails_simulate(tmp_path):
    port = make_port(tmp_path)
    _golden(port, outputs=np.zeros((64, 2), np.float32))
    code, doc, err = run_json(["simulate", str(port)])
    assert code == 1, err[-400:]  # before: exit 0, the golden silently dropped
    (size,) = doc["sizes"]
    assert size["golden"] == [] and size["golden_not_compared"] == [
        "golden output 0 has shape [64, 2], the kernel's [128, 1]"]
    assert doc["incomplete"] == ["size 'L512': golden output 0 has shape [64, 2], the kernel's [128, 1]"]


def test_a_completely_mismatching_golden_fails_simulate(tmp_path):
    port = make_port(tmp_path)
    _golden(port, outputs=(_row_sums(port) + 1000.0).astype(np.float32))
    code, doc, err = run_json(["simulate", str(port)])
    (g,) = doc["sizes"][0]["golden"]
    assert g["mismatch_fraction"] == 1.0 and not g["passed"]
    assert code == 1  # before: exit 0


def test_a_golden_1000_off_is_not_called_rounding(tmp_path):
    port = make_port(tmp_path)
    _golden(port, outputs=(_row_sums(port) + 1000.0).astype(np.float32))
    code, doc, err = run_json(["review", str(port), "-q"])
    assert doc is not None, err[-600:]
    (f,) = [f for f in doc["findings"] if f["rule"] == "NUM106"]
    assert f["evidence"]["verdict"] == "beyond-rounding" and f["severity"] == "warning"
    assert "not a defect" not in f["message"] and "rtol >=" not in f["message"]
    assert f["evidence"]["needed_rtol"] is None
    assert "The GPU output itself is 1e+03 from the reference" in f["message"]
    assert "captured ([golden] npz files, no capture record)" in f["message"]


def test_an_all_nan_golden_reports_instead_of_crashing(tmp_path):
    port = make_port(tmp_path)
    _golden(port, outputs=np.full((128, 1), np.nan, np.float32))
    code, doc, err = run_json(["review", str(port), "-q"])
    assert doc is not None and "internal error" not in err, err[-600:]  # before: OverflowError, no report
    (f,) = [f for f in doc["findings"] if f["rule"] == "NUM106"]
    assert f["evidence"]["verdict"] == "non-finite" and "128 NaN" in f["message"]
    assert "not a defect" not in f["message"]
    done = run_cli(["simulate", str(port)])
    assert done.returncode == 1 and "NaN in golden 128" in done.stdout


def test_a_bf16_accumulator_gap_is_precision_loss_not_rounding():
    """A bf16 K-tile accumulator: the port is 0.36 relative from the GPU where the fp32-storage run
    agrees with it. Before: "rounding and reduction order, not a defect ... compare with rtol >= 1"."""
    from nki_assist.contracts.runs import RunResult
    from nki_assist.numerics.attribution import attribute
    from nki_assist.numerics.reference import ReferenceResult
    from nki_assist.numerics.scenarios import NumericsResult, SizeResult
    from nki_assist.contracts.tolerance import compare

    rng = np.random.default_rng(3)
    ref = rng.uniform(50, 100, size=(128, 64))
    trn = (ref * (1 - 0.36 * rng.uniform(0, 1, ref.shape))).astype(np.float32)  # lost low-order partial sums
    fp32 = (ref * (1 + 1e-7)).astype(np.float32)
    sr = SizeResult("K4096", {"K": 4096}, 4096, ReferenceResult("ok", outputs=[ref]))
    sr.runs = {"trainium": RunResult("builtin", "ok", outputs=[trn]), "trainium-fp32": RunResult("builtin", "ok", outputs=[fp32])}
    tol = dict(rtol=1.0, atol=1e-3)  # a tolerance loose enough that the port "passes"
    sr.agreements[("trainium", "reference")] = [compare(trn, ref, **tol)]
    sr.agreements[("trainium-fp32", "reference")] = [compare(fp32, ref, **tol)]
    sr.gpu_model, sr.gpu_model_source = [ref.astype(np.float32).astype(np.float64)], "reference@float32"
    sr.agreements[("trainium", "gpu-model")] = [compare(trn, sr.gpu_model[0], **tol)]
    res = NumericsResult([sr], ["reference", "trainium", "trainium-fp32", "gpu-model"], "float32", "K")
    # the defect the same review blocks on: the static rule on the bf16 accumulator
    acc = Finding(rule="NKI301", name="acc", category="low-precision-accumulation", severity="error", message="m",
                  file="k_nki.py", line=9)
    (f,) = [f for f in attribute(res, [acc], nki_path="k_nki.py", kernel_line=3) if f.rule == "NUM106"]
    assert f.evidence["verdict"] == "precision-loss" and f.severity.value == "warning"
    assert f.evidence["max_rel"] > 0.3 and f.evidence["needed_rtol"] is None
    assert "not a defect" not in f.message and "rtol >=" not in f.message
    assert "with fp32 storage the gap shrinks" in f.message and "a looser one would hide this loss" in f.message
    assert "modelled (reference at the CUDA kernel's accumulation precision, float32)" in f.message
    # Without a defect finding the same gap is still more than bf16 storage rounding explains at K = 64
    sr.reduction_length = 64
    (g,) = [g for g in attribute(res, [], nki_path="k_nki.py", kernel_line=3) if g.rule == "NUM106"]
    assert g.evidence["verdict"] == "precision-loss" and "more than the" in g.message


def test_bf16_operand_rounding_of_a_faithful_port_is_storage_rounding_not_a_warning():
    """bf16 matmul operands (a faithful attention port): the fp32-storage run is closer, the gap is
    within bf16 rounding and no precision defect was found: info with a tolerance, never "reduction order"."""
    from nki_assist.contracts.runs import RunResult
    from nki_assist.numerics.attribution import attribute
    from nki_assist.numerics.reference import ReferenceResult
    from nki_assist.numerics.scenarios import NumericsResult, SizeResult
    from nki_assist.contracts.tolerance import compare

    rng = np.random.default_rng(4)
    ref = rng.normal(size=(128, 128)) * 0.3
    trn = (ref + rng.normal(size=ref.shape) * 2e-4).astype(np.float32)  # bf16-rounded probabilities
    fp32 = ref.astype(np.float32)
    sr = SizeResult("aligned", {"S": 512}, 512, ReferenceResult("ok", outputs=[ref]))
    sr.runs = {"trainium": RunResult("builtin", "ok", outputs=[trn]), "trainium-fp32": RunResult("builtin", "ok", outputs=[fp32])}
    tol = dict(rtol=2e-2, atol=2e-2)
    sr.agreements[("trainium", "reference")] = [compare(trn, ref, **tol)]
    sr.gpu_model, sr.gpu_model_source = [fp32.astype(np.float64)], "reference@float32"
    sr.agreements[("trainium", "gpu-model")] = [compare(trn, sr.gpu_model[0], **tol)]
    res = NumericsResult([sr], ["reference", "trainium", "trainium-fp32", "gpu-model"], "float32", "S")
    (f,) = [f for f in attribute(res, [], nki_path="k_nki.py", kernel_line=3) if f.rule == "NUM106"]
    assert f.evidence["verdict"] == "storage-rounding" and f.severity.value == "info"
    assert "reduction order" not in f.message and "rounding of the port's low-precision storage" in f.message
    assert f.evidence["needed_rtol"] is not None and f.evidence["needed_atol"] >= f.evidence["max_abs"]
