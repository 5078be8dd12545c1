"""The reference runs in a child process; its failures are TC105 results, never exceptions."""

from __future__ import annotations

import numpy as np

from nki_assist.numerics.inputs import make_inputs
from nki_assist.numerics.reference import run_reference
from nki_assist.numerics.spec import load_spec


def _spec(axpy_port, tmp_path, fn):
    text = axpy_port.read_text().replace('reference = "reference.py:axpy_ref"',
                                         f'reference = "{axpy_port.parent / "reference.py"}:{fn}"')
    text = text.replace('nki = "kernel.py"', f'nki = "{axpy_port.parent / "kernel.py"}"')
    p = tmp_path / "port.toml"
    p.write_text(text)
    return load_spec(p)


def _line(spec, text):
    return next(i for i, l in enumerate(spec.reference_path.read_text().splitlines(), 1) if text in l)


def test_reference_in_float64_on_rounded_inputs(axpy_port):
    spec = load_spec(axpy_port)
    args = make_inputs(spec, "aligned")
    ref = run_reference(spec, args, size_name="aligned", timeout_s=30)
    assert ref.ok and ref.findings == [] and len(ref.outputs) == 1
    assert ref.outputs[0].dtype == np.float64
    want = 0.5 * args[0].astype(np.float64) + args[1].astype(np.float64)
    assert np.array_equal(ref.outputs[0], want)  # exact: same float64 arithmetic on the same values


def test_reference_that_raises(axpy_port, tmp_path):
    spec = _spec(axpy_port, tmp_path, "axpy_raises")
    ref = run_reference(spec, make_inputs(spec, "aligned"), size_name="aligned", timeout_s=30)
    assert ref.status == "error" and ref.line == _line(spec, "return x @ y")
    (f,) = ref.findings
    assert f.rule == "TC105" and f.line == ref.line and "ValueError" in f.message and "'aligned'" in f.message


def test_reference_nan_output_is_reported(axpy_port, tmp_path):
    spec = _spec(axpy_port, tmp_path, "axpy_nan")
    ref = run_reference(spec, make_inputs(spec, "aligned"), timeout_s=30)
    assert ref.ok and ref.findings[0].rule == "TC105"
    assert ref.findings[0].evidence["nan"] == 1 and ref.findings[0].evidence["inf"] == 0


def test_reference_bad_return_value(axpy_port, tmp_path):
    spec = _spec(axpy_port, tmp_path, "axpy_text")
    ref = run_reference(spec, make_inputs(spec, "aligned"), timeout_s=30)
    assert ref.status == "bad-output" and "not a numeric array" in ref.findings[0].message


def test_reference_timeout(axpy_port, tmp_path):
    spec = _spec(axpy_port, tmp_path, "axpy_slow")
    ref = run_reference(spec, make_inputs(spec, "aligned"), timeout_s=1.5)
    assert ref.status == "timeout" and ref.findings[0].rule == "TC105"
    assert ref.line == _line(spec, "time.sleep(30)")
