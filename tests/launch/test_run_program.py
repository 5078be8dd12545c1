"""`nki-assist run` across processes and limits: pytest-xdist workers, subprocesses, a tool limit as a skip,
deduplication across launches, a kernel that never ends or exhausts memory, usage errors."""

from __future__ import annotations

import sys

import pytest
from run_helpers import FIXTURES, run_cli

pytest.importorskip("xdist", reason="pytest-xdist (dev dependency) runs the workers")


def test_pytest_xdist_workers_launch_on_the_simulator():
    code, report, err = run_cli("--format", "json", "--", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider",
                                "--confcutdir=.", "pytest_cases.py")
    launches = report["run"]["launches"]
    assert len(launches) == 7
    assert len({x["pid"] for x in launches}) == 2  # both workers launched kernels
    assert "6 passed, 1 skipped" in err  # the program's output (on stderr with --format json)
    by_rule = {f["rule"]: f for f in report["findings"]}
    tail = by_rule["SIM112"]  # two launches, one finding, the first failing arguments named
    assert tail["file"] == "planted_kernels.py" and tail["line"] == 39
    assert tail["evidence"]["launches"] == 2 and "in 2 launches; first with a_vec: float32[" in tail["message"]
    assert {r["file"] for r in tail["related"]} == {"planted_kernels.py", "pytest_cases.py"}  # the call site
    limit = by_rule["SIM117"]  # the simulator's limit: info, at the call, and the test was skipped
    assert limit["severity"] == "info" and limit["line"] == 18 and "local_gather" in limit["message"]
    assert [x["status"] for x in launches].count("tool-limit") == 1
    assert "exited with status 0" in report["run"]["program"]
    assert code == 1  # the SIM112 error reaches --fail-on error


def test_launches_in_a_subprocess_are_recorded():
    code, report, err = run_cli("--format", "json", "--", "python", "spawn_harness.py")
    (launch,) = report["run"]["launches"]
    assert launch["kernel"] == "add_missing_tail" and launch["call_site"] == "<string>:1"
    assert [(f["rule"], f["line"]) for f in report["findings"]] == [("SIM112", 39)]
    assert "child exited with 0" in err and code == 1


def test_the_simulator_never_imports_torch(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\nimport numpy as np\nsys.path.insert(0, %r)\nimport planted_kernels as k\n"
        "from neuronxcc.nki import baremetal\nx = np.ones((256, 64), np.float32)\n"
        "out = baremetal(k.relu_clean)(x)\nprint('torch loaded:', 'torch' in sys.modules, float(out.sum()))\n"
        "import logging\nlogging.disable(logging.OFF)\nprint('logging.OFF above CRITICAL:', logging.OFF > 50)\n"
        % str(FIXTURES))
    code, out, _ = run_cli("--", "python", str(script), cwd=tmp_path)
    assert "torch loaded: False 16384.0" in out and code == 0
    assert "logging.OFF above CRITICAL: True" in out  # what the SDK's import leaves for course harnesses


def test_a_kernel_that_never_ends_is_stopped_at_the_wall_time_limit():
    code, report, _ = run_cli("--format", "json", "--timeout", "5", "--", "python", "runaway_kernels.py", "spin")
    assert code == 1
    assert "was stopped at the wall-time limit" in report["run"]["program"]
    assert [u["kernel"] for u in report["run"]["unfinished"]] == ["spins_forever"]
    assert any("spins_forever (runaway_kernels.py:11) was still running" in n for n in report["notes"])


def test_a_kernel_that_exhausts_memory_fails_at_its_line():
    code, report, _ = run_cli("--format", "json", "--memory-mb", "1500", "--", "python", "runaway_kernels.py",
                              "memory")
    assert code == 1
    (f,) = report["findings"]
    assert (f["rule"], f["line"]) == ("SIM114", 25) and "ran out of memory" in f["message"]
    assert "exited with status 1" in report["run"]["program"]


def test_usage_errors():
    code, _, err = run_cli("--")
    assert code == 2 and "give the program to run after `--`" in err
    code, _, err = run_cli("--backend", "neuron", "--", sys.executable, "-c", "pass")
    assert code == 2 and "Neuron SDK" in err


def test_new_dialect_simulate_and_a_grid_launch_writing_into_the_callers_array():
    code, report, err = run_cli("--format", "json", "--", "python", "new_dialect.py")
    assert "simulate ok: True" in err and "grid ok: True" in err and code == 0
    by = {x["kernel"]: x for x in report["run"]["launches"]}
    assert by["double_rows"]["api"] == "simulate" and by["double_tiles"]["grid"] == [3]
    assert by["double_tiles"]["outputs"] == [{"shape": [384, 64], "dtype": "float32", "nonfinite": 0,
                                              "min": 2.0, "max": 2.0}]
    assert report["findings"] == []


def test_backend_neuron_keeps_the_importable_sdk_and_records_nothing(tmp_path):
    # a stand-in SDK package (ours): its baremetal returns a marker the simulator's never would
    sdk = tmp_path / "sdk" / "neuronxcc" / "nki"
    sdk.mkdir(parents=True)
    (sdk.parent / "__init__.py").write_text("")
    (sdk / "__init__.py").write_text("def baremetal(f):\n    return lambda *a, **k: 'ran on the stand-in SDK'\n")
    prog = tmp_path / "prog.py"
    prog.write_text("import numpy as np\nfrom neuronxcc.nki import baremetal\n"
                    "print(baremetal(lambda x: x)(np.ones((4, 4), np.float32)))\n")
    env = {"PYTHONPATH": str(tmp_path / "sdk")}
    code, report, err = run_cli("--format", "json", "--backend", "neuron", "--", sys.executable, str(prog),
                                cwd=tmp_path, env=env)
    assert code == 0 and "ran on the stand-in SDK" in err  # the program's output (stderr under --format json)
    assert report["run"]["launches"] == [] and report["findings"] == []
    assert any("does not instrument" in n for n in report["notes"])
    # the same program on the default backend runs on the simulator, which replaces the SDK's module
    code, report, err = run_cli("--format", "json", "--", sys.executable, str(prog), cwd=tmp_path, env=env)
    assert "ran on the stand-in SDK" not in err
