"""Port spec loading: the happy path and every named problem (file, key, problem in the message)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nki_assist.numerics.spec import SpecError, load_spec

from toolchain_paths import PORTS


def test_loads_fixture_port(axpy_port):
    spec = load_spec(axpy_port)
    assert spec.name == "numpy_axpy" and spec.kernel_name == "axpy" and spec.target == "trn2"
    assert list(spec.inputs) == ["x", "y", "alpha"]
    assert [s.name for s in spec.sizes] == ["aligned", "ragged"]
    assert spec.shape_of("x", spec.size("ragged")) == (4, 70)
    assert spec.inputs["alpha"].is_value and spec.inputs["alpha"].value == 0.5
    assert spec.reference_function == "axpy_ref"
    assert spec.nki_path == axpy_port.parent / "kernel.py"
    assert (spec.tolerance.rtol, spec.tolerance.atol) == (1e-2, 1e-2)
    assert spec.input_bytes(spec.size("aligned")) == 2 * 4 * 64 * 2


@pytest.fixture
def port(tmp_path):
    """A writable copy of the fixture port; returns a function writing port.toml from a replacement."""
    src = PORTS / "numpy_axpy"
    for f in ("kernel.py", "reference.py"):
        shutil.copy(src / f, tmp_path / f)
    base = (src / "port.toml").read_text()

    def write(old: str = "", new: str = "", text: str | None = None) -> Path:
        body = text if text is not None else base.replace(old, new)
        assert text is not None or old in base
        p = tmp_path / "port.toml"
        p.write_text(body)
        return p

    return write


def _err(path) -> str:
    with pytest.raises(SpecError) as exc:
        load_spec(path)
    msg = str(exc.value)
    assert msg.startswith(str(path)), msg  # always names the file
    return msg


def test_bad_toml(port):
    assert "invalid TOML" in _err(port(text="[port\nname = 1"))


def test_missing_spec_file(tmp_path):
    assert "spec file not found" in _err(tmp_path / "nope.toml")


def test_missing_nki_file(port):
    msg = _err(port('nki = "kernel.py"', 'nki = "kernel_missing.py"'))
    assert "port.nki: file not found" in msg and "kernel_missing.py" in msg


def test_missing_reference_file(port):
    msg = _err(port('reference = "reference.py:axpy_ref"', 'reference = "ref2.py:axpy_ref"'))
    assert "port.reference: file not found" in msg


def test_reference_not_file_colon_function(port):
    assert "port.reference: 'reference.py' is not of the form" in _err(
        port('reference = "reference.py:axpy_ref"', 'reference = "reference.py"'))


def test_unknown_dtype(port):
    msg = _err(port('y = { shape = ["M", "N"], dtype = "bfloat16"', 'y = { shape = ["M", "N"], dtype = "bfloat17"'))
    assert "inputs.y: unknown dtype 'bfloat17'" in msg


def test_unbound_size_symbol(port):
    msg = _err(port('x = { shape = ["M", "N"]', 'x = { shape = ["M", "Q"]'))
    assert "inputs.x.shape: symbol 'Q' is not bound by size 'aligned' (sizes[0])" in msg


def test_reference_wrong_arity(port, tmp_path):
    (tmp_path / "reference.py").write_text("def axpy_ref(x, y):\n    return x + y\n")
    msg = _err(port())
    assert "port.reference: reference 'axpy_ref' (line 1) takes 2 positional arguments" in msg
    assert "declares 3 (x, y, alpha)" in msg


def test_reference_function_missing(port):
    msg = _err(port("reference.py:axpy_ref", "reference.py:nope"))
    assert "port.reference: no top-level function 'nope'" in msg and "axpy_ref" in msg


def test_kernel_missing_and_kernel_arity(port, tmp_path):
    assert "port.nki_kernel: no top-level function 'axpy9'" in _err(port('nki_kernel = "axpy"', 'nki_kernel = "axpy9"'))
    (tmp_path / "k1.py").write_text("def k(x, y, alpha, beta):\n    pass\n")
    msg = _err(port('nki = "kernel.py"\nnki_kernel = "axpy"', 'nki = "k1.py"'))
    assert "port.nki_kernel: kernel 'k' (line 1) takes 4 positional arguments" in msg


def test_kernel_inferred_from_single_jit(port, tmp_path):
    (tmp_path / "k2.py").write_text("import nki\n\ndef helper(a):\n    return a\n\n@nki.jit\ndef kern(x, y, alpha=1.0):\n    pass\n")
    spec = load_spec(port('nki = "kernel.py"\nnki_kernel = "axpy"', 'nki = "k2.py"'))
    assert spec.kernel_name == "kern"
    (tmp_path / "k2.py").write_text("def a(x, y, z):\n    pass\n\ndef b(x, y, z):\n    pass\n")
    assert "cannot tell which kernel" in _err(port('nki = "kernel.py"\nnki_kernel = "axpy"', 'nki = "k2.py"'))


def test_missing_required_key_and_unknown_key(port):
    assert "port.name: required key is missing" in _err(port('name = "numpy_axpy"\n', ""))
    assert "port.colour: unknown key" in _err(port('target = "trn2"', 'target = "trn2"\ncolour = "red"'))


def test_unknown_target_and_bad_values(port):
    assert "port.target: unknown target 'trn9'" in _err(port('target = "trn2"', 'target = "trn9"'))
    assert "inputs.x.dist" in _err(port('x = { shape = ["M", "N"], dtype = "bfloat16" }',
                                        'x = { shape = ["M", "N"], dtype = "bfloat16", dist = "gamma" }'))
    assert "give either `value`" in _err(port("alpha = { value = 0.5 }", 'alpha = { value = 0.5, shape = [1] }'))
    assert "sizes[0]: size symbol M must be a positive int" in _err(port("M = 4\nN = 64", 'M = "four"\nN = 64'))
    assert "duplicate size name 'aligned'" in _err(port('name = "ragged"', 'name = "aligned"'))


def test_golden_missing_file(port):
    assert "golden.inputs: file not found" in _err(port("[tolerance]", '[golden]\ninputs = "gold.npz"\n\n[tolerance]'))
