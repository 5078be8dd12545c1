"""`nki-assist run` on a course-style harness of our own kernels: every planted defect at its kernel line,
with no spec, and the clean kernel without findings."""

from __future__ import annotations

from run_helpers import planted, run_cli


def test_every_planted_defect_is_reported_at_its_line():
    code, report, _ = run_cli("--format", "json", "--", "python", "planted_harness.py")
    marks = planted()
    assert len(marks) >= 10 and len({rule for rule, _ in marks}) >= 8  # several classes
    found = {(f["rule"], f["line"]) for f in report["findings"] if f["file"] == "planted_kernels.py"}
    missing = {m: k for m, k in marks.items() if m not in found}
    assert not missing, f"planted defects not reported at their line: {missing}"
    launches = {x["kernel"]: x for x in report["run"]["launches"]}
    assert len(launches) == 12
    assert launches["relu_clean"]["findings"] == [] and launches["relu_clean"]["status"] == "ok"
    # a shape error is what the SDK would raise: the launch fails, the harness catches it and goes on
    assert launches["scale_shape_mismatch"]["status"] == "kernel-error"
    assert launches["relu_clean"]["cost"]["estimated_us"] > 0
    # the harness compared with NumPy and failed (the unwritten band, the uninitialized accumulator, ...)
    assert "exited with status 1" in report["run"]["program"]
    assert code == 1


def test_text_output_keeps_the_program_output_and_places_findings_like_check():
    code, out, err = run_cli("--", "python", "planted_harness.py")
    assert "relu_clean: PASS" in out and "missing_tail: FAIL" in out  # the program's own output
    assert "planted_kernels.py:17: SIM101 [error]" in out  # check's text format
    assert "12 launches of 12 kernels on the simulator: 11 ran, 1 failed, 0 stopped at a tool limit" in err
    assert code == 1
    assert "   |" in out  # the text format shows each finding's source line
    # concise, as in `check`: the same finding lines, no source snippets, the same notes
    code, concise, err = run_cli("--format", "concise", "--", "python", "planted_harness.py")
    assert "planted_kernels.py:17: SIM101 [error]" in concise and "relu_clean: PASS" in concise
    assert "   |" not in concise and "12 launches of 12 kernels" in err and code == 1
    found = [ln for ln in out.splitlines() if "planted_kernels.py:" in ln and " [" in ln]
    assert found and found == [ln for ln in concise.splitlines() if "planted_kernels.py:" in ln and " [" in ln]


def test_fail_on_never_still_fails_a_failing_program_and_sarif_renders():
    code, out, _ = run_cli("--format", "sarif", "--fail-on", "never", "--", "python", "planted_harness.py")
    assert code == 1  # the harness itself exited 1
    assert '"ruleId": "SIM101"' in out and '"startLine": 17' in out


def test_save_spec_writes_a_loadable_port_per_kernel_and_shape_family(tmp_path):
    from nki_assist.numerics.spec import load_spec

    code, _, err = run_cli("--fail-on", "never", "--save-spec", str(tmp_path), "--", "python", "planted_harness.py")
    written = sorted(p.name for p in tmp_path.glob("*.toml"))
    assert len(written) == 12 and "relu_clean.toml" in written
    for name in written:
        spec = load_spec(tmp_path / name)  # each validates: kernel found, arity, every symbol bound
        assert spec.port.nki_kernel == name[:-5] and spec.port.reference is None
    relu = load_spec(tmp_path / "relu_clean.toml")
    assert relu.inputs["x"].dtype == "float32" and [s.bindings for s in relu.sizes] == [{"x0": 256, "x1": 64}]
    assert f"wrote {tmp_path / 'relu_clean.toml'}" in err and code == 1


def test_the_programs_numpy_comparison_becomes_the_reference_and_the_spec_simulates(tmp_path):
    import subprocess
    import sys

    from run_helpers import FIXTURES

    harness = tmp_path / "h.py"
    harness.write_text(
        "import sys\nimport numpy as np\nsys.path.insert(0, %r)\nfrom neuronxcc.nki import baremetal\n"
        "import planted_kernels as k\nfor rows in (128, 384):\n"
        "    x = np.linspace(-1, 1, rows * 64, dtype=np.float32).reshape(rows, 64)\n"
        "    out = baremetal(k.relu_clean)(x)\n    expected = np.maximum(x, 0.0)\n"
        "    assert np.allclose(out, expected)\n" % str(FIXTURES))
    specs = tmp_path / "specs"
    code, _, _ = run_cli("--save-spec", str(specs), "--", "python", str(harness), cwd=tmp_path)
    assert code == 0
    ref = (specs / "relu_clean_reference.py").read_text()
    assert "def reference(x):\n    return np.maximum(x, 0.0)" in ref
    sim = subprocess.run([sys.executable, "-m", "nki_assist", "simulate", str(specs / "relu_clean.toml")],
                         capture_output=True, text=True, timeout=300, check=False)
    assert sim.returncode == 0, sim.stdout + sim.stderr
    assert "2 of 2 sizes within tolerance" in sim.stdout
