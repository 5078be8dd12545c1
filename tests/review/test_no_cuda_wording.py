"""A port reviewed without a CUDA file says nothing about a CUDA kernel (issue 29): every eval case, its CUDA
file and spec keys removed, reviewed on its first size; no gpu-model scenario is invented either."""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

import pytest

from nki_assist.feedback.drafter import without_cuda
from nki_assist.report.markdown import render_markdown
from nki_assist.review import ReviewOptions, review_port

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted(p.parent for p in (ROOT / "evals" / "cases").glob("*/port.toml"))
GPU_WORDS = re.compile(r"\bCUDA\b|\bwarps?\b|__global__|threadIdx|blockIdx|\bGPU\b|gpu-model", re.IGNORECASE)


_TABLE = re.compile(r"^\[\[?[A-Za-z_][\w.-]*\]\]?\s*(#.*)?$")


def _without_table(text: str, name: str) -> str:
    """The TOML text minus the `[name]` table (up to the next table header)."""
    out, skip = [], False
    for line in text.splitlines(keepends=True):
        if _TABLE.match(line.strip()):
            skip = line.strip().split("#")[0].strip() == f"[{name}]"
        if not skip:
            out.append(line)
    return "".join(out)


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_review_without_cuda_has_no_cuda_wording(case, tmp_path):
    d = tmp_path / case.name
    shutil.copytree(case, d, ignore=shutil.ignore_patterns("*.cu", "*.cuh", "llm_reply*", "gold.toml"))
    text = re.sub(r"(?m)^cuda(_kernel)?\s*=.*\n", "", (d / "port.toml").read_text())
    text = _without_table(text, "cuda")  # the [cuda] launch section needs a CUDA file
    (d / "port.toml").write_text(text)
    first = tomllib.loads(text)["sizes"][0]["name"]
    review = review_port(str(d / "port.toml"), ReviewOptions(plots=False, sizes=[first])).review
    assert review.port.cuda is None and "gpu-model" not in (review.numerics.scenarios if review.numerics else [])
    leaks = [ln for ln in render_markdown(review).splitlines()
             if GPU_WORDS.search(ln) and "no CUDA file" not in ln]
    assert leaks == []


def test_without_cuda_keeps_what_is_not_about_cuda():
    assert without_cuda("CUDA reduces in warp trees; the Tensor Engine accumulates in PSUM. Addition is not "
                        "associative.") == "the Tensor Engine accumulates in PSUM. Addition is not associative."
    assert without_cuda("Apply `eps` where the reference (or the CUDA kernel) uses it.") == \
        "Apply `eps` where the reference uses it."
    assert without_cuda("Tile 128 rows; a row count copied from a CUDA block shape does not carry over.") == \
        "Tile 128 rows."
    assert without_cuda("No CUDA here at all.") == ""
    assert without_cuda("Plain text stays.") == "Plain text stays."
