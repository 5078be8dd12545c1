"""run_cuda_rules: metadata, columns, evidence, barrier kinds, crash isolation."""

from __future__ import annotations

from pathlib import Path

from nki_assist.findings import Finding, Severity
from nki_assist.api.hardware import get_target
from nki_assist.parse.cuda import parse_cuda
from nki_assist.rules.cuda import checks as cuda_rules
from nki_assist.rules.cuda.checks import run_cuda_rules
from nki_assist.rules.runner import Check
from nki_assist.rules.registry import all_rules

FIX = Path(__file__).resolve().parents[1] / "fixtures"
TRN2 = get_target("trn2")


def run(text: str, path: str = "k.cu") -> list[Finding]:
    return run_cuda_rules(parse_cuda(text, path), TRN2)


def test_specs_registered_as_cuda_rules():
    specs = {s.id: s for s in all_rules() if s.id.startswith("CUDA")}
    assert set(specs) == {"CUDA100", "CUDA101", "CUDA102", "CUDA103", "CUDA104", "CUDA105", "CUDA106"}
    assert all(s.languages == ("cuda",) and s.source == "static" for s in specs.values())
    assert {s.id: s.category for s in specs.values()} == {
        "CUDA100": "unsupported-construct", "CUDA101": "uninitialized-read", "CUDA102": "indexing-error",
        "CUDA103": "accumulation-order", "CUDA104": "activation-approximation",
        "CUDA105": "low-precision-accumulation", "CUDA106": "missing-boundary-mask"}


def test_race_finding_has_column_evidence_and_related_write():
    path = FIX / "rules" / "CUDA101" / "pos_block_sum_no_barrier.cu"
    text = path.read_text()
    [f] = [x for x in run(text, str(path)) if x.rule == "CUDA101"]
    line = text.splitlines()[10]
    assert (f.line, f.column) == (11, line.index("partial[j]") + 1)
    assert f.severity is Severity.ERROR and f.criterion == "migration-correctness"
    assert f.evidence["first_line"] == 8 and f.evidence["first_index"] == "[tid]"
    assert f.evidence["second_index"] == "[j]" and f.evidence["kernel"] == "block_sum"
    assert [(r.line, r.message) for r in f.related] == [(8, "shared-memory write")]
    assert f.file == str(path)


def test_syncwarp_and_cooperative_groups_count_as_barriers():
    template = """
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void k(float* out) {{
    __shared__ float s[64];
    cg::thread_block block = cg::this_thread_block();
    s[threadIdx.x] = threadIdx.x;
    {barrier}
    out[threadIdx.x % 64] = s[63 - threadIdx.x % 64];
}}
"""
    assert [f.line for f in run(template.format(barrier="")) if f.rule == "CUDA101"] == [9]
    for barrier in ("__syncwarp();", "block.sync();", "cg::sync(block);", "__syncthreads_or(1);",
                    'asm volatile("bar.sync 0;");'):
        assert not [f for f in run(template.format(barrier=barrier)) if f.rule == "CUDA101"], barrier


def test_atomics_fast_math_and_accumulator_messages_carry_numbers():
    text = """
#include <cuda_bf16.h>
__global__ void k(float* out, const __nv_bfloat16* x, int n) {
    __nv_bfloat16 s = __float2bfloat16(0.f);
    for (int i = 0; i < n; ++i) s += x[i];
    float e = __expf(__bfloat162float(s));
    atomicAdd(out, e);
}
"""
    by_rule = {f.rule: f for f in run(text)}
    assert by_rule["CUDA105"].line == 5 and "8-bit significand" in by_rule["CUDA105"].message
    assert by_rule["CUDA105"].evidence == {"kernel": "k", "variable": "s", "dtype": "__nv_bfloat16"}
    assert by_rule["CUDA104"].evidence["intrinsic"] == "__expf" and "1.173" in by_rule["CUDA104"].message
    assert by_rule["CUDA104"].column == text.splitlines()[5].index("__expf") + 1
    assert by_rule["CUDA103"].evidence["dtype"] == "float" and by_rule["CUDA103"].severity is Severity.INFO
    assert "CUDA106" not in by_rule  # the only store is an atomic, not a plain indexed store


def test_unguarded_store_respects_reverse_dependency_guard():
    text = """
__global__ void k(float* y, int rows, int cols) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int r = idx / cols;
    if (r >= rows) return;
    y[idx] = 1.0f;
}
__global__ void k2(float* y, int cols) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int r = idx / cols;
    y[r * cols + idx % cols] = 1.0f;
}
"""
    assert [(f.rule, f.line) for f in run(text)] == [("CUDA106", 11)]


def test_one_crashing_rule_does_not_lose_the_others(monkeypatch):
    def boom(cf, target):
        raise RuntimeError("synthetic failure")

    checks = [Check(c.rules, boom) if "CUDA101" in c.rules else c for c in cuda_rules.CHECKS.checks]
    monkeypatch.setattr(cuda_rules.CHECKS, "checks", checks)
    path = FIX / "rules" / "CUDA101" / "pos_tree_max_loop.cu"
    text = path.read_text() + "\n__global__ void f(float* y) { y[threadIdx.x] = __expf(1.0f); }\n"
    findings = run_cuda_rules(parse_cuda(text, "x.cu"), TRN2)
    crash = [f for f in findings if f.rule == "CUDA101"]
    assert len(crash) == 1 and "synthetic failure" in crash[0].message
    assert crash[0].severity is Severity.INFO and crash[0].confidence == "low"
    assert {"CUDA104", "CUDA106"} <= {f.rule for f in findings}


def test_clean_sample_kernels_have_no_race_or_guard_findings():
    for name in ("gemm_bias_relu.cu", "softmax_warp.cu"):
        path = FIX / "cuda" / name
        rules = {f.rule for f in run(path.read_text(), str(path))}
        assert not rules & {"CUDA100", "CUDA101", "CUDA102", "CUDA105", "CUDA106"}, (name, rules)
    softmax = FIX / "cuda" / "softmax_warp.cu"
    assert sorted(f.line for f in run(softmax.read_text()) if f.rule == "CUDA104") == [27, 29, 30]
