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


def test_fail_on_never_still_fails_a_failing_program_and_sarif_renders():
    code, out, _ = run_cli("--format", "sarif", "--fail-on", "never", "--", "python", "planted_harness.py")
    assert code == 1  # the harness itself exited 1
    assert '"ruleId": "SIM101"' in out and '"startLine": 17' in out
