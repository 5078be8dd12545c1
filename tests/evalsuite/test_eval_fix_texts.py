"""Every fix string the reviews of the eval cases emit is checked against its finding's facts.

A fix may name only operations, tensors and loops the reviewed kernel has (no "subtract the running max
before exp" on a kernel without exp, no "lhsT vs lhs" where nothing is multiplied), and never advises
dropping an input or an operation the computation needs. Each case is reviewed once (two at a time).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from nki_assist.evalsuite.gold import load_gold
from nki_assist.numerics.spec import load_spec
from nki_assist.review import ReviewOptions, review_port

CASES = Path(__file__).resolve().parents[2] / "evals" / "cases"
CASE_DIRS = sorted(p for p in CASES.iterdir() if p.is_dir())

# Operation words a fix may only use when the kernel (NKI or CUDA side) performs that operation.
OPS = {"exp": r"exp", "log": r"\blog|log\(|logf|\.log\b", "matmul": r"matmul|mma|wmma", "transpose": r"transpose",
       "softmax": r"softmax|exp", "rsqrt": r"rsqrt", "sqrt": r"sqrt", "gelu": r"gelu", "relu": r"relu|fmaxf|maximum",
       "silu": r"silu|swish|sigmoid|exp", "sigmoid": r"sigmoid|exp", "tanh": r"tanh", "reciprocal": r"reciprocal|1\.0f? /",
       "lhst": r"lhsT|stationary|transpose_x|matmul", "fp8": r"fp8|float8|e4m3|e5m2", "bn_stats": r"bn_stats",
       "bn_aggr": r"bn_aggr", "erf": r"erf", "dropout": r"dropout", "psum": r"psum|matmul"}
# Words inside backticks that are language, not kernel names.
VOCAB = {"nl", "nisa", "nki", "np", "min", "max", "mask", "assert", "range", "for", "in", "if", "and", "or", "not",
         "dtype", "bias", "scale", "op", "data", "dst", "src", "float32", "bfloat16", "float16", "sequential_range",
         "affine_range", "tensor_copy", "copy", "zeros", "ndarray", "shared_hbm", "sbuf", "activation", "exp",
         "accumulate", "True", "False", "None", "tile", "e", "g", "x", "m", "ceil", "psum", "matmul", "nc_matmul",
         "tensor_scalar", "reduce_op", "add", "multiply", "subtract", "sum", "mean", "axis", "keepdims", "memset",
         "value", "negate", "load", "store", "dma_copy", "rsqrt", "sqrt", "log",
         "nc_transpose", "tensor_partition_reduce"}
# Trainium operations a finding may recommend although the kernel does not use them yet (the fix is to adopt
# them), keyed by rule id or category.
RECOMMENDS = {"catastrophic-cancellation": {"bn_stats", "bn_aggr"}, "MIG109": {"transpose"},
              # a partition-axis reduction is done on the Tensor Engine instead (issue 29)
              "SIM119": {"matmul", "transpose", "psum"}, "NKI210": {"matmul", "transpose", "psum"}}
REMOVES = re.compile(r"\bremove (?:it|the input|`\w+`)|\bdrop (?:it|`\w+`)(?! from the signature only if)", re.I)


def _review(case: Path):
    gold = load_gold(case / "gold.toml")
    spec = load_spec(case / gold.case.port)
    review = review_port(str(case / gold.case.port), ReviewOptions(plots=False)).review
    sources = spec.nki_path.read_text(encoding="utf-8") + "\n" + (
        spec.cuda_path.read_text(encoding="utf-8") if spec.cuda_path else "")
    return case.name, review, sources, spec.nki_path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def reviews():
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(_review, CASE_DIRS))


def allowed(findings) -> set[str]:
    return {w for f in findings for key in (f.rule, f.category) for w in RECOMMENDS.get(key, ())}


FENCED = re.compile(r"^```diff\n(.*?)^```$", re.M | re.S)


def problems_of(fix: str, sources: str, nki: str, recommends: set[str] = frozenset()) -> list[str]:
    out = []
    # a proven repair's diff (fenced): its changed lines are kernel code, so each name in them is the kernel's
    for diff in FENCED.findall(fix):
        for ln in diff.splitlines():
            if ln.startswith(("+", "-")) and not ln.startswith(("+++", "---")):
                for ident in re.findall(r"[A-Za-z_]\w*", ln[1:]):
                    if ident not in VOCAB and not re.search(rf"\b{re.escape(ident)}\b", sources):
                        out.append(f"its diff names `{ident}`, which is not in the kernel")
    fix = FENCED.sub("", fix)
    low = fix.lower()
    for word, present in OPS.items():
        if word in recommends:
            continue
        if re.search(rf"\b{word}\b", low) and not re.search(present, sources, re.I):
            out.append(f"names `{word}`, which the kernel does not compute")
    for loop in re.findall(r"loop `(\w+)`", fix):
        if not re.search(rf"\bfor\s+{re.escape(loop)}\s+in\b", nki):
            out.append(f"names loop `{loop}`, which the kernel does not have")
    for code in re.findall(r"`([^`]+)`", fix):
        for ident in re.findall(r"[A-Za-z_]\w*", code):
            if ident not in VOCAB and not re.search(rf"\b{re.escape(ident)}\b", sources):
                out.append(f"names `{ident}`, which is neither in the kernel nor NKI vocabulary")
    return out


def test_every_fix_names_only_what_the_kernel_has(reviews):
    bad = []
    for case, review, sources, nki in reviews:
        by_id = {f.id: f for f in review.findings}
        texts = [(f.id + " " + f.rule, f.fix or "", allowed([f])) for f in review.findings]
        texts += [(f"item {it.priority}", it.fix, allowed([by_id[i] for i in it.finding_ids if i in by_id]))
                  for it in (review.assessment.items if review.assessment else [])]
        assert texts, f"{case}: the review has no fix text to check"
        for where, fix, rec in texts:
            bad += [f"{case} {where}: {p} in {fix!r}" for p in problems_of(fix, sources, nki, rec)]
    assert not bad, "\n".join(bad)


def test_no_fix_removes_required_semantics(reviews):
    bad = []
    for case, review, _, _ in reviews:
        for f in review.findings:
            if f.category in ("unused-input", "missing-epilogue") and f.fix and REMOVES.search(f.fix):
                bad.append(f"{case} {f.id} {f.rule}: {f.fix!r}")
    assert not bad, "\n".join(bad)


def test_the_checker_catches_boilerplate():
    """The checks above would fail on the fix texts the issue reported."""
    softmax_free = "def k(x):\n    for t in range(4):\n        y = x * 2\n"
    assert problems_of("Subtract the running max before exp.", softmax_free, softmax_free)
    assert problems_of("check operand layout (lhsT vs lhs) and epilogue ops", softmax_free, softmax_free)
    assert problems_of("Loop `n` over ceil(L / 512) tiles", softmax_free, softmax_free)
    assert not problems_of("Loop `t` over ceil(L / 512) tiles", softmax_free, softmax_free)
    diff = "Proven by re-running all sizes:\n```diff\n--- a/k.py\n+++ b/k.py\n@@ -3 +3 @@\n-        y = x * 2\n{}\n```"
    assert not problems_of(diff.format("+        y = x * 3"), softmax_free, softmax_free)
    assert problems_of(diff.format("+        y = z * 3"), softmax_free, softmax_free)
    assert REMOVES.search("Read `scale` or remove it.")
    assert not REMOVES.search("drop it from the signature only if the computation truly does not need it")
