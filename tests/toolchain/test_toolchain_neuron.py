"""`neuron` backend against a stand-in `nki` package that mimics nki.simulate (tests/toolchain/fake_nki).

The stand-in is put on sys.path only inside these tests. With the real toolchain absent the backend
must report itself unavailable; with it present, a real-toolchain smoke test runs instead.
"""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

from nki_assist.toolchain import neuron
from nki_assist.toolchain.neuron import NeuronBackend, detect, error_category
from nki_assist.toolchain.registry import available_backends, get_backend

from toolchain_paths import HERE, PORTS

KERNEL = str(PORTS / "stand_in" / "double_nki.py")


def _drop_nki_modules():
    for name in [m for m in sys.modules if m == "nki" or m.startswith("nki.")]:
        del sys.modules[name]
    importlib.invalidate_caches()


@pytest.fixture
def stand_in(monkeypatch, fake_runner):
    _drop_nki_modules()
    monkeypatch.syspath_prepend(str(HERE / "fake_nki"))
    yield NeuronBackend(runner=fake_runner)
    _drop_nki_modules()


def _real_toolchain() -> bool:
    _drop_nki_modules()
    return detect()[0] is not None


def test_unavailable_without_toolchain():
    if _real_toolchain():
        pytest.skip("a real Neuron toolchain is installed")
    assert "neuron" not in available_backends()
    with pytest.raises(ValueError, match="not available here"):
        get_backend("neuron")


def test_detects_the_stand_in(stand_in):
    api, why = detect()
    assert api == "new" and "fake_nki" in why
    assert "neuron" in available_backends()


def test_outputs_match_and_cross_check_is_clean(stand_in):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    r = stand_in.run(KERNEL, "double", [x], target="trn1", precise=False, timeout_s=30)
    assert r.backend == "neuron" and r.status == "ok"
    assert np.array_equal(r.outputs[0], 2 * x)
    assert [f for f in r.findings if f.rule == "TC104"] == []
    assert any("nki.simulate" in n for n in r.notes)
    assert r.trace and r.trace[0].op == "fake"  # the trace comes from the builtin run


def test_mismatch_between_backends_is_tc104(stand_in, monkeypatch):
    monkeypatch.setenv("FAKE_NKI_PERTURB", "0.5")
    monkeypatch.setenv("NKI_ASSIST_CHILD_ENV", "FAKE_NKI_PERTURB")  # the sandbox passes only listed names
    x = np.ones((2, 4), dtype=np.float32)
    r = stand_in.run(KERNEL, "double", [x], timeout_s=30)
    (f,) = [f for f in r.findings if f.rule == "TC104"]
    assert f.evidence["mismatches"] == 1 and f.evidence["worst_index"] == [0, 0]
    assert f.evidence["worst_actual"] == 2.5 and f.evidence["worst_expected"] == 2.0
    assert f.severity.value == "warning"


def test_toolchain_error_maps_to_category_and_line(stand_in):
    x = np.ones((2, 4), dtype=np.float32)
    r = stand_in.run(KERNEL, "double_tall", [x], timeout_s=30)
    assert r.status == "kernel-error"
    (f,) = [f for f in r.findings if f.rule == "TC108"]
    line = next(i for i, l in enumerate(open(KERNEL).read().splitlines(), 1) if "(256, x.shape[1])" in l)
    assert f.line == line and f.category == "partition-limit" and f.criterion == "memory-hierarchy"
    assert "exceeds architecture limitation of 128" in f.message


def test_target_and_precision_reach_the_toolchain(stand_in, tmp_path):
    probe = tmp_path / "probe_nki.py"
    probe.write_text("import nki\n\n@nki.jit\ndef probe(x):\n"
                     "    import os\n    return (os.environ['NEURON_PLATFORM_TARGET_OVERRIDE'] == 'trn3',"
                     " os.environ['NKI_PRECISE_FP'] == '0')\n")
    r = NeuronBackend(cross_check=False).run(str(probe), "probe", [np.zeros(1)], target="trn3", precise=False,
                                             timeout_s=30)
    assert r.status == "ok" and [bool(o) for o in r.outputs] == [True, True]


def test_error_category_table():
    assert error_category("ERROR: err_unexpected_output_dependencies in loop") == "loop-carried-dependency"
    assert error_category("nc_matmul dst dtype must be float32 on gen2") == "dtype-mismatch"
    assert error_category("something else") is None
    assert neuron.ERROR_CATEGORIES  # the table is data, extended as new messages are seen
