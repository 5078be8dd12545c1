"""Hostile kernels (issue 17, case 2 and 4): the run is contained and never passes what it did not check.

Every kernel here is the honest row-sum fixture with a few hostile lines injected; the real
simulator runs it. Where the kernel could kill its parent, nki-assist runs as a separate process.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time

import ml_dtypes
import numpy as np
import pytest
from reliability_helpers import FAKE_KEY, FAKE_TOKEN, alive, make_port, rules, run_cli, run_json

from nki_assist.toolchain.builtin import BuiltinBackend
from nki_assist.toolchain.isolation import strong_tool

pytestmark = pytest.mark.usefixtures("sandbox_start")  # fresh process and warm zygote alike


def _x() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((128, 512)).astype(ml_dtypes.bfloat16)


def _run(port, timeout_s: float = 20, memory_mb: int = 2048):
    kernel = str(port.parent / "row_sum_nki.py")
    return BuiltinBackend().run(kernel, "row_sum", [_x()], timeout_s=timeout_s, memory_mb=memory_mb)


def _raised(result) -> dict:
    """The JSON a probing kernel put into its RuntimeError."""
    assert result.status == "kernel-error", (result.status, result.error)
    return json.loads(result.error.split("RuntimeError: ", 1)[1])


def test_kernel_that_sigkills_its_parent_does_not_kill_nki_assist(tmp_path):
    port = make_port(tmp_path, "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)")
    code, doc, err = run_json(["simulate", str(port), "--timeout", "20"])
    assert code == 1, (code, err[-500:])  # before: -9, nki-assist itself was killed and printed nothing
    assert doc["sizes"][0]["status"] == "kernel-error"
    assert rules(doc) == [("TC110", "error")]
    assert doc["complete"] is False


@pytest.mark.parametrize("inject, signal_text", [
    ("import os\nos._exit(0)", "exited with code 0 without a result"),
    ("import ctypes\nctypes.string_at(0)", "SIGSEGV"),
])
def test_os_exit_and_segfault_are_error_findings(tmp_path, inject, signal_text):
    result = _run(make_port(tmp_path, inject))
    assert result.status == "kernel-error" and signal_text in result.error
    (f,) = result.findings
    assert (f.rule, f.severity.value) == ("TC110", "error")  # before: TC103 warning, exit 0


def test_review_of_a_crashing_kernel_blocks(tmp_path):
    port = make_port(tmp_path, "import os\nos._exit(0)")
    code, doc, err = run_json(["review", str(port), "--timeout", "20", "-q"])
    assert doc is not None, err[-500:]
    assert doc["assessment"]["verdict"] == "block"
    assert ("TC110", "error") in rules(doc)


def test_forked_and_setsid_descendants_die_with_the_run(tmp_path):
    pidfile, beat = tmp_path / "grandchild.pid", tmp_path / "heartbeat"
    inject = f"""import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open({str(pidfile)!r}, "w").write(str(os.getpid()))
        for _ in range(600):
            open({str(beat)!r}, "a").write("x")
            time.sleep(0.05)
    os._exit(0)
time.sleep(0.5)"""
    result = _run(make_port(tmp_path / "port", inject))
    assert result.status == "ok", result.error  # the kernel itself returns normally
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 2
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)  # before: still writing 20 s later
    size = beat.stat().st_size
    time.sleep(0.3)
    assert beat.stat().st_size == size


def test_child_environment_has_no_secrets_and_runs_in_a_temporary_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("MY_SERVICE_TOKEN", FAKE_TOKEN)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", FAKE_TOKEN + "aws")
    monkeypatch.chdir(tmp_path)
    inject = ("import json, os\n"
              "raise RuntimeError(json.dumps({'env': sorted(os.environ), 'cwd': os.getcwd(), "
              "'home': os.environ.get('HOME'), 'values': [v for v in os.environ.values() if 'reliability-' in v]}))")
    probe = _raised(_run(make_port(tmp_path / "port", inject)))
    assert not {"OPENAI_API_KEY", "MY_SERVICE_TOKEN", "AWS_SECRET_ACCESS_KEY"} & set(probe["env"])
    assert probe["values"] == []
    assert probe["cwd"].startswith(tempfile.gettempdir()) and "nki-assist-" in probe["cwd"]
    assert probe["cwd"] != str(tmp_path) and probe["home"] == probe["cwd"]
    assert "NKI_ASSIST_SANDBOX_ID" in probe["env"]


def test_a_key_the_kernel_digs_out_of_the_parent_is_redacted_in_every_output(tmp_path):
    """The file system is not protected: a kernel can read nki-assist's /proc/PID/environ. What it
    raises with the key in it must still never be printed."""
    inject = """pid, found = os.getppid(), ""
for _ in range(3):
    try:
        env = open(f"/proc/{pid}/environ", "rb").read().split(b"\\0")
        found = found or next((e.split(b"=", 1)[1].decode() for e in env if e.startswith(b"OPENAI_API_KEY=")), "")
        pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except OSError:
        break
raise RuntimeError("leaked " + found)"""
    port = make_port(tmp_path, "import os\n" + inject)
    for fmt in ("text", "json"):
        done = run_cli(["simulate", str(port), "--timeout", "20", "--format", fmt], OPENAI_API_KEY=FAKE_KEY)
        assert done.returncode == 1, done.stderr[-500:]
        out = done.stdout + done.stderr
        assert "leaked ***" in out and FAKE_KEY not in out  # before: the key was printed


def test_resource_limits_are_armed_in_the_kernel_process(tmp_path):
    inject = ("import json, resource\n"
              "raise RuntimeError(json.dumps({n: resource.getrlimit(getattr(resource, n))[0] for n in "
              "('RLIMIT_AS', 'RLIMIT_CPU', 'RLIMIT_FSIZE', 'RLIMIT_CORE')}))")
    probe = _raised(_run(make_port(tmp_path, inject), timeout_s=7, memory_mb=1536))
    assert probe == {"RLIMIT_AS": 1536 * 2**20, "RLIMIT_CPU": 9, "RLIMIT_FSIZE": 1536 * 2**20, "RLIMIT_CORE": 0}


def test_a_spinning_kernel_is_stopped_at_its_limit_with_nothing_left_running(tmp_path):
    pidfile = tmp_path / "spinner.pid"
    inject = f"import os\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\nwhile True:\n    pass"
    t0 = time.perf_counter()
    result = _run(make_port(tmp_path / "port", inject), timeout_s=2)
    assert time.perf_counter() - t0 < 30
    assert result.status == "timeout" and result.findings[0].rule == "TC101"
    assert not alive(int(pidfile.read_text()))


@pytest.mark.skipif(strong_tool()[0] is None, reason=f"strong sandbox unavailable: {strong_tool()[1]}")
def test_strong_mode_hides_the_parent_and_the_network(tmp_path):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port_no = server.getsockname()[1]
        inject = ("import json, os, socket\nok = True\n"
                  f"try:\n    socket.create_connection(('127.0.0.1', {port_no}), timeout=2).close()\n"
                  "except OSError:\n    ok = False\n"
                  "raise RuntimeError(json.dumps({'pid': os.getpid(), 'ppid': os.getppid(), 'net': ok}))")
        port = make_port(tmp_path, inject)
        code, doc, err = run_json(["simulate", str(port), "--timeout", "20", "--sandbox", "strong"])
    assert doc is not None, err[-500:]
    probe = json.loads(doc["sizes"][0]["error"].split("RuntimeError: ", 1)[1])
    assert probe["net"] is False  # the host's loopback listener is unreachable
    assert probe["pid"] < 10 and probe["ppid"] < 10  # a new PID namespace: nki-assist is not visible
    assert os.getpid() != probe["ppid"]


def test_killing_nki_assist_mid_run_takes_the_kernel_with_it(tmp_path):
    import signal
    import subprocess
    import sys

    from reliability_helpers import child_env

    pidfile = tmp_path / "spinner.pid"
    inject = f"import os\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\nwhile True:\n    pass"
    port = make_port(tmp_path / "port", inject)
    cli = subprocess.Popen([sys.executable, "-m", "nki_assist", "simulate", str(port), "--timeout", "120"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=child_env())
    try:
        deadline = time.monotonic() + 60
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        kernel = int(pidfile.read_text())
        cli.send_signal(signal.SIGKILL)
        cli.wait()
        deadline = time.monotonic() + 3
        while alive(kernel) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(kernel)  # before: spun on until its own 120 s watchdog
    finally:
        cli.kill()
