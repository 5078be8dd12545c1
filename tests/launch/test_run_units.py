"""The parts of `nki-assist run` that need no program: deduplication, the spec writer, call-site sources."""

from __future__ import annotations

from pathlib import Path

from run_helpers import FIXTURES

from nki_assist.launch.collect import dedupe
from nki_assist.launch.compare import launch_key
from nki_assist.launch.record import ArgInfo, Launch, read, write_launch
from nki_assist.launch.source import call_exprs
from nki_assist.launch.spec_writer import save_specs
from nki_assist.numerics.spec import load_spec
from nki_assist.rules.registry import get

KERNELS = str(FIXTURES / "planted_kernels.py")


def _launch(rows: int, cols: int, *, findings=(), call_file=None, call_line=None, exprs=("a", "b")) -> Launch:
    args = [ArgInfo("a_vec", "array", shape=[rows, cols], dtype="float32", expr=exprs[0]),
            ArgInfo("b_vec", "array", shape=[rows, cols], dtype="float32", expr=exprs[1])]
    return Launch(kernel="add_missing_tail", file=KERNELS, def_line=37, api="baremetal", call_file=call_file,
                  call_line=call_line, args=args, grid=None, status="ok",
                  findings=[f.model_dump(mode="json") for f in findings])


def _sim112(message: str):
    return get("SIM112").finding(message, file=KERNELS, line=39, source="simulation")


def test_one_finding_for_many_launches_with_the_first_arguments(tmp_path):
    launches = [_launch(256, 64, findings=[_sim112("first")], call_file=str(tmp_path / "t.py"), call_line=7),
                _launch(512, 64, findings=[_sim112("second")], call_file=str(tmp_path / "t.py"), call_line=9),
                _launch(128, 64)]
    (f,) = dedupe(launches, str(FIXTURES))
    assert (f.rule, f.file, f.line) == ("SIM112", "planted_kernels.py", 39)
    assert f.evidence["launches"] == 2
    assert f.evidence["first_arguments"] == "a_vec: float32[256, 64], b_vec: float32[256, 64]"
    assert f.message == "first (in 2 launches; first with a_vec: float32[256, 64], b_vec: float32[256, 64])"
    assert [(r.file, r.line) for r in f.related] == [(str(tmp_path / "t.py"), 7)]


def test_records_round_trip_and_torn_lines_are_counted(tmp_path, monkeypatch):
    path = tmp_path / "r.jsonl"
    monkeypatch.setenv("NKI_ASSIST_RUN_RECORD", str(path))
    write_launch(_launch(256, 64))
    with open(path, "a") as fh:
        fh.write('{"type": "launch", "kernel": "x"\n')  # a process killed mid-write
    launches, others, bad = read(str(path))
    assert [x.args[0].shape for x in launches] == [[256, 64]] and others == [] and bad == 1


def _harness(tmp_path: Path) -> Path:
    h = tmp_path / "harness.py"
    h.write_text("import numpy as np\n\n\ndef numpy_add(x, y):\n    return x + y\n\n\n"
                 "out = kernel(a, b)\nref = numpy_add(a, b)\nassert np.allclose(out, ref)\n"
                 "assert np.allclose(out, a + b * 1.0)\n")
    return h


def test_saved_spec_loads_binds_shared_dims_and_takes_the_programs_reference(tmp_path):
    h = _harness(tmp_path)
    launches = [_launch(256, 64), _launch(512, 64)]
    key = launch_key(launches[0])
    comparisons = [{"type": "comparison", "key": key, "file": str(h), "line": 10, "other": "ref", "mine": "out"}]
    out = tmp_path / "specs"
    (path,) = save_specs(launches, comparisons, str(out), "trn2")
    spec = load_spec(path)  # validates: kernel file, arity, symbols bound in every size
    assert spec.port.nki_kernel == "add_missing_tail"
    assert spec.inputs["a_vec"].shape == ["a_vec0", "a_vec1"] == spec.inputs["b_vec"].shape
    assert [(s.bindings["a_vec0"], s.bindings["a_vec1"]) for s in spec.sizes] == [(256, 64), (512, 64)]
    assert spec.port.reference == "add_missing_tail_reference.py:reference"
    ns: dict = {}
    exec((out / "add_missing_tail_reference.py").read_text(), ns)
    import numpy as np

    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(ns["reference"](x, 2 * x), 3 * x)  # numpy_add from the harness


def test_a_plain_numpy_expression_becomes_the_reference_and_no_comparison_leaves_a_comment(tmp_path):
    h = _harness(tmp_path)
    launch = _launch(256, 64)
    comparisons = [{"type": "comparison", "key": launch_key(launch), "file": str(h), "line": 11,
                    "other": "a + b * 1.0", "mine": "out"}]
    (path,) = save_specs([launch], comparisons, str(tmp_path / "s1"), "trn2")
    ref = (tmp_path / "s1" / "add_missing_tail_reference.py").read_text()
    assert "def reference(a_vec, b_vec):\n    return a_vec + b_vec * 1.0" in ref
    (path,) = save_specs([launch], [], str(tmp_path / "s2"), "trn2")
    text = Path(path).read_text()
    assert "# reference =" in text and load_spec(path).port.reference is None


def test_call_exprs_reads_the_arguments_of_the_call_on_a_line(tmp_path):
    src = tmp_path / "c.py"
    src.write_text("x = 1\nout = baremetal(k)(X[0], W,\n    bias)\ny = nki.simulate_kernel(k, a, b)\n")
    assert call_exprs(str(src), 2, 3) == ["X[0]", "W", "bias"]
    assert call_exprs(str(src), 4, 2, skip=1) == ["a", "b"]
    assert call_exprs(str(src), 1, 2) == [None, None]


def test_a_reference_function_that_needs_other_module_names_is_not_taken(tmp_path):
    h = tmp_path / "h2.py"
    h.write_text("import numpy as np\nSCALE = 2.0\n\n\ndef numpy_add(x, y):\n    return (x + y) * SCALE\n\n\n"
                 "out = kernel(a, b)\nref = numpy_add(a, b)\nassert np.allclose(out, ref)\n")
    launch = _launch(256, 64)
    comparisons = [{"type": "comparison", "key": launch_key(launch), "file": str(h), "line": 11, "other": "ref"}]
    (path,) = save_specs([launch], comparisons, str(tmp_path / "s"), "trn2")
    assert load_spec(path).port.reference is None  # SCALE would be undefined in the written reference
