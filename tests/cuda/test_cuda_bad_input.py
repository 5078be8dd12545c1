"""Bad input never raises: empty, binary, huge, broken, deeply nested, non-str."""

from __future__ import annotations

import os

from nki_assist.api.hardware import get_target
from nki_assist.parse.cuda import MAX_PARSE_BYTES, parse_cuda
from nki_assist.rules.cuda.checks import run_cuda_rules

TRN2 = get_target("trn2")


def check(text, path="bad.cu"):
    f = parse_cuda(text, path)
    return f, run_cuda_rules(f, TRN2)


def test_empty_and_whitespace():
    for text in ("", "   \n\n\t"):
        f, findings = check(text)
        assert f.kernels == [] and f.syntax_errors == [] and findings == []


def test_binary_is_a_note_and_a_finding():
    f, findings = check("\x7fELF\x00\x01\x02" + "\x00" * 64)
    assert f.kernels == [] and "binary" in f.notes[0]
    assert [x.rule for x in findings] == ["CUDA100"]


def test_ten_megabytes_is_not_parsed():
    text = "// filler\n" * (10 * 1024 * 1024 // 10)
    assert len(text.encode()) > MAX_PARSE_BYTES
    f, findings = check(text)
    assert f.kernels == [] and "parse limit" in f.notes[0]
    assert findings[0].rule == "CUDA100" and "not analysed" in findings[0].message


def test_random_bytes_decoded_with_replacement():
    raw = os.urandom(4096).replace(b"\x00", b"\x01").decode("latin-1")
    f, findings = check(raw)
    assert isinstance(f.syntax_errors, list)
    assert all(x.rule.startswith("CUDA") for x in findings)


def test_bytes_input_accepted():
    f = parse_cuda(b"__global__ void k(float* x) { x[0] = 1.0f; }", "b.cu")
    assert [k.name for k in f.kernels] == ["k"]


def test_partial_syntax_error_keeps_other_kernels():
    text = """
__global__ void good(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = __expf(x[i]);
}
__global__ void bad(float* y {
    y[threadIdx.x] = ;
}
"""
    f, findings = check(text)
    good = f.kernel("good")
    assert good is not None and good.fast_math == [("__expf", 4)]
    assert f.syntax_errors and f.syntax_errors[0].line >= 6
    rules = {x.rule for x in findings}
    assert {"CUDA100", "CUDA104"} <= rules


def test_deep_nesting_does_not_recurse_out():
    expr = "(" * 3000 + "1" + ")" * 3000
    text = f"__global__ void k(float* y) {{ y[0] = {expr}; }}\n"
    f, findings = check(text)
    assert [k.name for k in f.kernels] == ["k"]
    assert any("nesting deeper" in n for n in f.notes)


def test_unterminated_everything():
    for text in ("__global__ void k(", "__global__ void k() { for (;;", "#define X (", "/* open comment",
                 "template <int", "k<<<", '"open string', "__shared__ float s[[[];"):
        f, findings = check(text)
        assert isinstance(f.to_json(), dict)


def test_error_in_a_kernel_signature_is_reported():
    # the missing comma sits in the parameter list, a part of the tree the fact walk never enters
    text = "__global__ void k(float* x int n) {\n    if (threadIdx.x < n) x[threadIdx.x] = 0.0f;\n}\n"
    f, findings = check(text)
    assert f.syntax_errors and f.syntax_errors[0].line == 1
    assert [x.rule for x in findings if x.rule == "CUDA100"] == ["CUDA100"]
