"""Never pass what was not checked (issue 17, cases 1 and 4): sizes too large for memory, output-count
mismatches and files the static checks skipped end as an error or `incomplete`, with exit 1."""

from __future__ import annotations

from reliability_helpers import make_port, rules, run_cli, run_json

from nki_assist.numerics.guard import size_guard, size_need_bytes
from nki_assist.numerics.spec import load_spec

TWO_OUTPUTS = '''

def row_sum_two(x):
    s = np.sum(x, axis=1, keepdims=True)
    return s, s
'''


def test_a_huge_size_is_refused_before_the_parent_allocates_it(tmp_path):
    port = make_port(tmp_path, L=15_625_000)  # 128 x L = 2e9 bf16 elements: 16 GB as float64
    # Under a 3 GiB address-space cap: before the guard, review generated the inputs first and died
    # with "internal error: MemoryError" (exit 2).
    code, doc, err = run_json(["review", str(port), "-q"], memory_gb=3)
    assert doc is not None, err[-800:]
    assert code == 1 and doc["assessment"]["verdict"] == "incomplete"
    (f,) = [f for f in doc["findings"] if f["rule"] == "TC109"]
    assert f["evidence"]["size"] == "L512" and f["evidence"]["bytes"] == 16 * 10**9
    assert f["evidence"]["memory_limit_mb"] == 4096 and "'L512'" in f["message"] and "--memory-mb 4096" in f["message"]
    assert doc["unchecked"] == ["size 'L512' skipped (too large for the memory limit)"]
    assert doc["assessment"]["summary"].startswith("Incomplete: not everything was checked")

    done = run_cli(["simulate", str(port)], memory_gb=3)
    assert done.returncode == 1  # before: exit 0 with "1 not compared"
    assert "INCOMPLETE: size 'L512' not compared (skipped, too large for --memory-mb)" in done.stdout


def test_the_size_guard_uses_exact_integers(tmp_path):
    spec = load_spec(make_port(tmp_path, L=2**63 - 1))
    size = spec.sizes[0]
    assert size_need_bytes(spec, size) == 8 * 128 * (2**63 - 1)  # no OverflowError, no wrap-around
    f = size_guard(spec, size, 4096)
    assert f is not None and f.rule == "TC109" and f.evidence["budget_bytes"] == 2048 * 2**20


def test_a_reference_with_more_outputs_than_the_kernel_is_an_error(tmp_path):
    port = make_port(tmp_path, ref="row_sum_two", ref_extra=TWO_OUTPUTS)
    code, doc, err = run_json(["simulate", str(port), "--timeout", "20"])
    assert code == 1 and ("TC107", "error") in rules(doc), err[-500:]
    f = next(f for f in doc["findings"] if f["rule"] == "TC107")
    assert f["evidence"] == {"size": "L512", "kernel_outputs": 1, "reference_outputs": 2}
    code, doc, err = run_json(["review", str(port), "--timeout", "20", "-q"])
    assert doc["assessment"]["verdict"] == "block"  # before: no finding about it at all
    assert ("TC107", "error") in rules(doc)


def test_review_of_a_file_the_static_checks_skipped_is_incomplete(tmp_path):
    kernel = make_port(tmp_path).parent / "row_sum_nki.py"
    renamed = tmp_path / "row_sum_nki.txt"
    renamed.write_text(kernel.read_text())
    big = tmp_path / "big_nki.py"
    big.write_text("import nki\nX = '" + "a" * 5_100_000 + "'\n")  # over the 5 MB max-file-bytes
    for path, why in ((renamed, "not an NKI (.py) or CUDA"), (big, "larger than max-file-bytes")):
        code, doc, err = run_json(["review", "--nki", str(path), "-q"])
        assert code == 1, err[-300:]  # before: APPROVE, exit 0
        assert doc["assessment"]["verdict"] == "incomplete"
        (reason,) = doc["unchecked"]
        assert str(path) in reason and why in reason


def test_a_review_that_checked_everything_is_not_incomplete(tmp_path):
    port = make_port(tmp_path)
    code, doc, err = run_json(["review", str(port), "--timeout", "20", "-q"])
    assert doc is not None, err[-500:]
    assert doc["unchecked"] == [] and doc["assessment"]["verdict"] in ("revise", "approve-with-nits", "approve")
    assert code == 0
