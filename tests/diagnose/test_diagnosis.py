"""Issue 39: a failing size diagnosed to its root-cause line (anatomy, backward slice, repairs proven by re-runs).

The unit tests pin the anatomy's numbers and the candidate edits on small inputs; the corpus test reviews a
representative subset of evals/diagnosis (both dialects, six defect families) and checks the acceptance
floors there: root-cause line first (+-2) >= 80 %, proven fix >= 60 %, no confidently wrong cause; a faithful
port keeps 0 warnings. The whole corpus is `python -m benchmarks.diagnosis_eval`.
"""

from __future__ import annotations

import numpy as np
import pytest

from nki_assist.diagnose.anatomy import anatomy, contrast
from nki_assist.diagnose.mutate import Vocabulary, edits_for_line
from nki_assist.diagnose.repair import apply, unified_diff
from nki_assist.diagnose.slice import backward, parse_kernel

KERNEL = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def k(x):
    R, C = x.shape
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(C)[None, :]
    for t in nl.affine_range(R // 128):
        xt = nl.load(x[t * 128 + i_p, i_f])
        nl.store(y[t * 64 + i_p, i_f], value=xt)
    return y
'''


def test_anatomy_tiles_and_mapping_of_a_half_stride_store():
    e = np.arange(512 * 4, dtype=np.float64).reshape(512, 4)
    a = np.zeros_like(e)
    for t in range(4):  # tile t lands at rows t*64 .. t*64+127: later tiles overwrite the earlier ones' tails
        a[t * 64:t * 64 + 128] = e[t * 128:t * 128 + 128]
    an = anatomy(a, e, rtol=1e-6, atol=1e-6, size="big", output=0)
    assert an.wrong == (512 - 64) * 4
    rows = an.axes[0]
    assert rows.wrong == [(64, 512)] and rows.tiles_wrong == [0, 1, 2, 3]
    assert an.first_wrong == (64, 0) and an.first_right == (0, 0)
    assert an.unwritten == (512 - 320) * 4  # the last tile ends at row 319: rows 320..511 stay zero


def test_anatomy_ratio_permutation_and_last_tile():
    e = np.random.default_rng(0).normal(size=(384, 8)) + 3.0
    a = e.copy()
    a[256:] *= 0.125
    an = anatomy(a, e, rtol=1e-5, atol=1e-6, size="s", output=0)
    assert an.relation == "ratio" and an.ratio == pytest.approx(0.125)
    assert an.axes[0].tiles_wrong == [2] and "only the last tile (2) wrong" in an.summary
    p = e.copy()
    p[128:256] = e[0:128]  # rows of tile 1 hold tile 0's values
    an = anatomy(p, e, rtol=1e-5, atol=1e-6, size="s", output=0)
    assert an.relation == "permutation"
    assert an.mapping["axis"] == 0 and an.mapping["formula"] == "i - 128" and an.mapping["pairs"][0] == (128, 0)
    h = np.random.default_rng(1).normal(size=(8, 16))
    g = h.copy()
    g[[1, 2, 3, 5, 6, 7]] = h[[0, 0, 0, 4, 4, 4]]  # every 4th head right, the others copy it: i // 4 * 4
    an = anatomy(g, h, rtol=1e-5, atol=1e-6, size="s", output=0)
    assert an.axes[0].wrong == [(1, 4), (5, 8)] and an.axes[0].period == 4 and an.axes[0].phase == 0


def test_contrast_names_what_the_passing_sizes_share():
    c = contrast({"R": 512, "C": 64}, [{"R": 128, "C": 64}])
    text = c.text()
    assert "R = 512 spans 4 tiles of 128 (one tile in the passing sizes)" in text
    assert c.names == {"R"}
    c = contrast({"H": 8, "KV": 2}, [{"H": 2, "KV": 2}])
    assert "H = 8 and KV = 2 differ (equal in the passing sizes)" in c.text()


def test_slice_follows_def_use_and_loop_headers():
    k = parse_kernel(KERNEL, "k")
    depth = backward(k, [13])
    assert depth[13] == 0 and depth[11] == 1  # the store, its loop
    assert {7, 9, 10, 12} <= set(depth)  # R/C, i_p, i_f, the load that fed the stored value


def test_edits_of_the_store_line_include_the_fix_and_stay_one_line():
    k = parse_kernel(KERNEL, "k")
    edits = edits_for_line(k, 13, Vocabulary(k))
    fixed = [e for e in edits if e.new == "        nl.store(y[t * 128 + i_p, i_f], value=xt)"]
    assert fixed and fixed[0].kind == "constant" and "`64` -> `128`" in fixed[0].what
    assert all(e.line == 13 and "\n" not in e.new for e in edits)
    new = apply(KERNEL, fixed[0])
    assert new.count("\n") == KERNEL.count("\n") and "y[t * 128 + i_p, i_f]" in new
    diff = unified_diff(KERNEL, fixed[0], "k.py")
    assert "-        nl.store(y[t * 64 + i_p, i_f], value=xt)" in diff
    assert "+        nl.store(y[t * 128 + i_p, i_f], value=xt)" in diff


SUBSET = ["softmax_store_offset_legacy", "softmax_last_tile_rmod_new", "gqa_head_mod_legacy",
          "rowsum_bf16_accumulator_legacy", "tile_copy_wrong_loop_var_new", "scale_tail_branch_missing_legacy"]


@pytest.fixture(scope="module")
def corpus_rows():
    from benchmarks.diagnosis_eval import CORPUS, score

    return [score(CORPUS / name, 4.0) for name in SUBSET]


def test_corpus_subset_meets_the_floors(corpus_rows):
    n = len(corpus_rows)
    hit = sum(r["hit"] for r in corpus_rows) / n
    proven = sum(r["proven"] for r in corpus_rows) / n
    assert hit >= 0.8, corpus_rows
    assert proven >= 0.6, corpus_rows
    assert not [r for r in corpus_rows if r["wrong"]]


def test_issue_case_store_offset_is_proven_on_its_line(corpus_rows):
    r = corpus_rows[0]
    assert r["rule"] == "DIAG101" and r["line"] == r["gold_line"]
    assert "`64` -> `128`" in r["edit"]
    assert r["fix"].startswith("proven by re-running all sizes:\n--- a/kernel.py\n+++ b/kernel.py")
    assert "+        nl.store(y[t * 128 + i_p, i_f], value=yt)" in r["fix"]
    assert "rows 64" in r["message"] or "axis 0 (size 512): wrong 64..511" in r["message"]
    assert "repair budget 4 s per failing size" in r["budget_note"] and "proven fix at line 18" in r["budget_note"]
    # the written assessment opens with it: the edit, then the error's shape (feedback/lead.py)
    assert r["summary"].startswith("Diagnosis: kernel.py:18, `64` -> `128`") and "makes every size pass" in r["summary"]
    assert "(shown by: output 0 at size" in r["summary"] and "a fix is proven by re-running every size" in r["summary"]


def test_issue_case_last_tile_count_is_named_not_the_allocation(corpus_rows):
    r = corpus_rows[1]
    assert r["rule"] == "DIAG101" and r["line"] == r["gold_line"] == 17
    assert "R % P" in r["fix"] and "+        rows = P if t < nt - 1 else " in r["fix"]


def test_a_proven_dtype_repair_is_named_by_the_shape_of_the_error(corpus_rows):
    from benchmarks.diagnosis_eval import CORPUS, score

    acc = corpus_rows[3]  # a bf16 running sum: finite values, rounded
    assert acc["rule"] == "DIAG101" and acc["category"] == "low-precision-accumulation"
    over = score(CORPUS / "sumsq_fp16_overflow_new", 4.0)  # an fp16 sum of squares: Inf where the reference is finite
    assert over["rule"] == "DIAG101" and over["line"] == over["gold_line"] and over["category"] == "overflow-risk"
    assert "NaN/Inf" in over["message"]


def test_zero_budget_gives_the_anatomy_and_ranked_lines_without_accusing():
    from benchmarks.diagnosis_eval import CORPUS, _review

    review = _review(CORPUS / "relu_floor_trips_legacy" / "port.toml", 0.0)
    diag = [f for f in review.findings if f.rule.startswith("DIAG")]
    assert [f.rule for f in diag] == ["DIAG102"]
    f = diag[0]
    assert f.severity.value == "info" and f.confidence == "low"
    assert "candidate edits were not tried (repair budget 0)" in f.message
    assert "wrong 256..299" in f.message and "R % 128 = 44 (0 in the passing sizes)" in f.message
    assert f.evidence["suspects"] and f.evidence["repair"] is None


def test_faithful_port_keeps_zero_warnings():
    from benchmarks.diagnosis_eval import CORPUS, faithful

    assert faithful(CORPUS / "bias_add_rmod_count_legacy", 4.0)["warnings"] == []


def test_negative_repair_budget_is_a_usage_error(capsys):
    from pathlib import Path

    from nki_assist.cli import main

    spec = Path(__file__).resolve().parents[2] / "examples" / "gemm_bias_relu" / "port.toml"
    assert main(["review", str(spec), "--repair-budget", "-1"]) == 2
    assert "--repair-budget -1: give seconds >= 0" in capsys.readouterr().err


def _slow_child(passing: int, seconds_per_call: float):
    """A stand-in for the sandboxed child on a slow machine: each call takes `seconds_per_call`, and the
    candidate whose source holds `# cand {passing}` is the one that passes."""
    import time

    from nki_assist.toolchain.sandbox import ChildOutcome

    def run_in_child(call, kwargs, **_):
        time.sleep(seconds_per_call)
        return ChildOutcome(status="ok", value=[{"passed": f"# cand {passing}\n" in src, "sizes": ["s"]}
                                                for src in kwargs["sources"]])
    return run_in_child


@pytest.mark.parametrize("passing, proven", [(40, True), (60, False)])
def test_the_first_candidates_run_whatever_the_clock_says(monkeypatch, passing, proven):
    """A machine too slow for the budget still tries the first MIN_CANDIDATES edits (the same diagnosis as on
    an idle machine); beyond them the budget decides."""
    from nki_assist.diagnose import repair
    from nki_assist.diagnose.mutate import Edit
    from nki_assist.toolchain import sandbox

    monkeypatch.setattr(sandbox, "run_in_child", _slow_child(passing, 0.06))
    monkeypatch.setattr(repair, "_CACHE", {})
    edits = [Edit(line=1, old="x = 1", new=f"x = 1  # cand {i}", what=f"cand {i}", kind="constant")
             for i in range(80)]
    proof = repair.prove("x = 1\n", "/tmp/k.py", None, edits, [{"size": "s", "args": [], "ref": []}],
                         runner="m:f", options={}, rtol=0, atol=0, budget_s=0.05, memory_mb=64)
    assert [t.edit.what for t in proof.proven] == ([f"cand {passing}"] if proven else [])
    assert len(proof.trials) == (passing + 1 if proven else repair.MIN_CANDIDATES) and proof.exhausted != proven
    none = repair.prove("x = 1\n", "/tmp/k.py", None, edits, [{"size": "s", "args": [], "ref": []}],
                        runner="m:f", options={}, rtol=0, atol=0, budget_s=0, memory_mb=64)
    assert none.trials == []  # a zero budget tries nothing
