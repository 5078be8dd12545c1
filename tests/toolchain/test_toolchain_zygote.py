"""The warm sandbox (issue 30 item 4): runs fork from one pre-imported zygote, with per-run isolation
and the same limits; the zygote never outlives nki-assist. The containment suites run through it too
(tests/reliability/test_containment.py, test_toolchain_sandbox.py: `start` parameter)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from nki_assist.toolchain import zygote
from nki_assist.toolchain.sandbox import run_in_child, warm_sandbox

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server needs Linux /proc")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _gone_within(pid: int, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_kernel_mutating_module_state_in_run_1_is_not_seen_by_run_2():
    with warm_sandbox():
        first = run_in_child("zygote_tasks:mutate", {}, timeout_s=30)
        second = run_in_child("zygote_tasks:observe", {}, timeout_s=30)
        third = run_in_child("zygote_tasks:observe", {}, timeout_s=30)
    assert first.status == "ok" and first.value["counter"] == 1, (first.error, first.stderr)
    assert second.status == "ok", (second.error, second.stderr)
    v = second.value
    assert v["numpy_add_ok"] is True and v["sim_ok"] is True and v["counter"] == 0 and v["leaked_env"] is False
    # the same warm zygote served every run (not nki-assist itself: no fresh process per run)
    assert first.value["zygote"] == v["zygote"] == third.value["zygote"] != os.getpid()
    # a fresh working directory, HOME and run token per run
    assert v["cwd"] != third.value["cwd"] and v["home"] == v["cwd"]
    assert v["token"] != third.value["token"]


def test_without_a_warm_block_each_run_is_a_fresh_process():
    a = run_in_child("zygote_tasks:observe", {}, timeout_s=30)
    assert a.status == "ok" and a.value["zygote"] == os.getpid()


def test_timeout_and_memory_limit_still_apply_per_run_and_the_zygote_serves_on():
    with warm_sandbox():
        t0 = time.perf_counter()
        spun = run_in_child("zygote_tasks:spin", {}, timeout_s=1.5)
        took = time.perf_counter() - t0
        big = run_in_child("zygote_tasks:allocate", {"mib": 2048}, timeout_s=30, memory_mb=512)
        small = run_in_child("zygote_tasks:allocate", {"mib": 64}, timeout_s=30, memory_mb=512)
        after = run_in_child("zygote_tasks:observe", {}, timeout_s=30)
    assert spun.status == "timeout" and took < 1.5 + 20, (spun.status, spun.error, took)
    assert big.status == "out-of-memory", (big.status, big.error)
    assert small.status == "ok" and small.value == 64 * 2**20
    assert after.status == "ok" and after.value["numpy_add_ok"] is True


def test_the_zygote_ends_with_the_block_and_leaves_nothing():
    with warm_sandbox():
        z = run_in_child("zygote_tasks:observe", {}, timeout_s=30).value["zygote"]
        assert _alive(z)
    assert _gone_within(z, 5)


def test_the_zygote_and_its_run_die_with_a_killed_parent(tmp_path):
    report = tmp_path / "pids.txt"
    here = Path(__file__).parent
    script = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(here)!r}]
        from nki_assist.toolchain.sandbox import run_in_child, warm_sandbox
        with warm_sandbox():
            run_in_child("zygote_tasks:sleep_and_report", {{"path": {str(report)!r}}}, timeout_s=60)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=str(here.parents[1]))
    try:
        end = time.monotonic() + 60
        while time.monotonic() < end and not (report.exists() and report.read_text().endswith("\n")):
            time.sleep(0.05)
        worker, zy = map(int, report.read_text().split())
        assert _alive(worker) and _alive(zy) and zy != parent.pid
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    assert _gone_within(zy, 10), "the zygote outlived nki-assist"
    assert _gone_within(worker, 10), "a run outlived nki-assist"


def test_disabled_by_environment(monkeypatch):
    monkeypatch.setenv(zygote.DISABLE_ENV, "1")
    with warm_sandbox():
        a = run_in_child("zygote_tasks:observe", {}, timeout_s=30)
    assert a.status == "ok" and a.value["zygote"] == os.getpid()


def test_a_run_that_kills_the_zygote_ends_crashed_and_the_next_run_gets_a_new_one():
    with warm_sandbox():
        before = run_in_child("zygote_tasks:observe", {}, timeout_s=30).value["zygote"]
        t0 = time.perf_counter()
        hit = run_in_child("zygote_tasks:kill_the_zygote", {}, timeout_s=20)
        took = time.perf_counter() - t0
        after = run_in_child("zygote_tasks:observe", {}, timeout_s=30)
    assert hit.status == "crashed" and hit.in_user_code, (hit.status, hit.error)
    assert took < 15, took  # the run died with its zygote, it did not sleep out its 30 s
    assert _gone_within(before, 5)
    assert after.status == "ok" and after.value["zygote"] not in (before, os.getpid())


def test_a_run_with_pinned_blas_gets_a_zygote_that_loaded_numpy_pinned(monkeypatch):
    """NumPy reads OPENBLAS_CORETYPE when it loads: a reference run (env=blas_env()) must fork from a zygote
    started with it, not from one that loaded NumPy with the host's kernel (issue 24 under issue 30's zygote)."""
    from nki_assist.toolchain.sandbox import blas_env

    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    with warm_sandbox():
        pinned = run_in_child("zygote_tasks:blas_core", {}, timeout_s=60, env=blas_env())
        host = run_in_child("zygote_tasks:blas_core", {}, timeout_s=60)
    fresh = run_in_child("zygote_tasks:blas_core", {}, timeout_s=60, env=blas_env())  # a fresh process, no zygote
    if pinned.status != "ok" or pinned.value["core"] is None:
        pytest.skip("NumPy's bundled OpenBLAS does not report its kernel here")
    assert pinned.value["core"] == fresh.value["core"] != "Haswell"  # OpenBLAS names Prescott's kernels "Katmai"
    assert host.status == "ok" and host.value["core"] == "Haswell"


@pytest.mark.parametrize("warm", [True, False], ids=["zygote", "fresh"])
def test_a_run_stopped_from_another_thread_ends_at_once_and_leaves_nothing(tmp_path, warm):
    # review.py starts its batch in a thread and stops it (run_in_child's `stop`) when the review is interrupted
    import contextlib
    import threading

    report, stop, box = tmp_path / "run.txt", threading.Event(), {}

    def run():
        box["out"] = run_in_child("zygote_tasks:sleep_and_report", {"path": str(report)}, timeout_s=60, stop=stop)

    with warm_sandbox() if warm else contextlib.nullcontext():
        worker = threading.Thread(target=run)
        t0 = time.monotonic()
        worker.start()
        while not (report.exists() and report.read_text().strip()) and time.monotonic() - t0 < 120:
            time.sleep(0.02)
        pid = int(report.read_text().split()[0])
        stop.set()
        worker.join(30)
        assert not worker.is_alive()
    out = box["out"]
    assert out.status == "timeout" and out.elapsed_s < 60  # ended by the stop, not by the 60 s sleep or limit
    assert _gone_within(pid, 5)
