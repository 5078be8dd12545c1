"""The [cuda] launch section: safe size expressions, validation with file/key/problem, the signature
check, --init, and `golden --dry-run` on the example port and every eval case with a CUDA file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nki_assist.cli import main
from nki_assist.numerics.cuda_compile import nvcc_version, nvrtc_available
from nki_assist.numerics.sizeexpr import ExprError, evaluate, evaluate_int, names
from nki_assist.numerics.spec import SpecError, load_spec

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "gemm_bias_relu"
CUDA_PORTS = [EXAMPLE / "port.toml"] + sorted(p for p in (REPO / "evals" / "cases").glob("*/port.toml")
                                              if any(p.parent.glob("*.cu")))
HAVE_COMPILER = bool(nvrtc_available() or nvcc_version())


@pytest.mark.parametrize("expr,env,value", [
    ("cdiv(N, 64)", {"N": 700}, 11), ("(N + 64 - 1) // 64", {"N": 700}, 11), ("M * N", {"M": 3, "N": 4}, 12),
    ("min(cdiv(R * D, 256), 4096)", {"R": 300, "D": 1024}, 1200), ("WC // 3", {"WC": 384}, 128), ("-2 + 5", {}, 3),
])
def test_size_expressions_evaluate(expr, env, value):
    assert evaluate_int(expr, env) == value


@pytest.mark.parametrize("expr,problem", [
    ("__import__('os')", "only these functions"), ("N.__class__", "Attribute is not allowed"),
    ("[1, 2]", "List is not allowed"), ("'a'", "only numbers"), ("N / 3", "not a whole number"),
    ("Q + 1", "unknown symbol 'Q'"), ("1 // 0", "division by zero"), ("2 ** 1000", "exponent out of range"),
    ("-" * 40 + "1", "nests deeper than 32"), ("x" * 300, "at most 200"), ("lambda: 1", "Lambda is not allowed"),
])
def test_size_expressions_refuse_anything_but_arithmetic(expr, problem):
    with pytest.raises(ExprError) as exc:
        evaluate_int(expr, {"N": 10})
    if problem:
        assert problem in str(exc.value)


def test_names_and_float_scalars():
    assert names("cdiv(N, 64) + max(M, K)") == {"N", "M", "K"}
    assert abs(evaluate("1 / sqrt(D)", {"D": 128}) - 0.08838834764831845) < 1e-15


@pytest.fixture
def port(tmp_path):
    dst = tmp_path / "gemm"
    shutil.copytree(EXAMPLE, dst)
    return dst / "port.toml"


def _edit(spec: Path, old: str, new: str) -> None:
    text = spec.read_text()
    assert old in text, old
    spec.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize("old,new,key,problem", [
    ('{ input = "rhs", dtype = "float32" }', '{ input = "rhz", dtype = "float32" }', "cuda.args[1].input",
     "no input 'rhz' in [inputs]"),
    ('block = [16, 16]', 'block = [64, 64]', "cuda.block", "4096 threads per block; at most 1024"),
    ('grid = ["cdiv(N, 64)", "cdiv(M, 64)"]', 'grid = ["cdiv(Q, 64)", "cdiv(M, 64)"]', "cuda.grid[0]",
     "unknown symbol 'Q'"),
    ('{ scalar = "K", type = "int" }', '{ scalar = "K", type = "int128" }', "cuda.args[6]", "unknown scalar type"),
    ('{ output = 0, shape = ["M", "N"], dtype = "float32" }', '{ output = 1, shape = ["M", "N"], dtype = "float32" }',
     "cuda.args", "outputs are numbered [1]"),
    ('{ input = "lhsT", transpose = true, dtype = "float32" }', '{ input = "lhsT", transpose = [0, 0], dtype = "float32" }',
     "cuda.args[0].transpose", "not a permutation"),
    ('block = [16, 16]', 'block = [16, 16]\nflags = ["-o/etc/passwd"]', "cuda.flags", "not an allowed flag"),
    ('block = [16, 16]', 'block = [16, 16]\ndefines = { X = "1; rm" }', "cuda.defines", "a define is a number"),
    ('{ scalar = "M", type = "int" }', '{ scalar = "M * 2**40", type = "int" }', "cuda.args[4].scalar",
     "does not fit a int"),
])
def test_a_bad_cuda_section_is_a_spec_error_naming_file_and_key(port, old, new, key, problem):
    _edit(port, old, new)
    with pytest.raises(SpecError) as exc:
        load_spec(port)
    msg = str(exc.value)
    assert str(port) in msg and key in msg and problem in msg, msg


def test_golden_dry_run_names_a_signature_mismatch(port, capsys):
    _edit(port, '{ scalar = "K", type = "int" }', '{ scalar = "K", type = "long" }')
    assert main(["golden", str(port), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "cuda.args[6] (K -> parameter 'K'): the parameter is int (int32), the spec passes int64" in err


def test_golden_dry_run_names_an_output_the_reference_does_not_return(port, capsys):
    _edit(port, 'shape = ["M", "N"], dtype = "float32" }', 'shape = ["N", "M"], dtype = "float32" }')
    assert main(["golden", str(port), "--dry-run"]) == 2
    out = capsys.readouterr().out
    assert "size 'aligned': output 0 is [1024, 256] in the reference's layout, the reference returns [256, 1024]" in out


def test_init_proposes_a_section_from_the_signature_and_launcher(port, capsys):
    assert main(["golden", str(port), "--init"]) == 0
    out = capsys.readouterr().out
    assert 'grid = ["(N + 64 - 1) // 64", "(M + 64 - 1) // 64"]' in out and "block = [16, 16]" in out
    assert '{ output = 0, shape = ["M", "N"], dtype = "float32" },  # C' in out
    assert '{ input = "lhsT", dtype = "float32" },  # A: guessed by position' in out


def test_capture_without_a_gpu_is_a_clear_message(port, capsys, monkeypatch):
    monkeypatch.delenv("NKI_ASSIST_GOLDEN_LAUNCHER", raising=False)
    from nki_assist.numerics import gpu_launch

    def none():
        raise gpu_launch.NoGpu("no GPU to capture on (cuda-python: not installed; cupy: not installed)")

    monkeypatch.setattr(gpu_launch, "find_launcher", none)
    assert main(["golden", str(port)]) == 2
    err = capsys.readouterr().err
    assert "no GPU to capture on" in err and "Traceback" not in err


@pytest.mark.parametrize("spec", CUDA_PORTS, ids=lambda p: p.parent.name)
def test_dry_run_maps_and_compiles_every_port_with_a_cuda_file(spec, capsys):
    code = main(["golden", str(spec), "--dry-run", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["problems"] == [], doc["problems"]
    assert doc["plans"] and all(p["grid"] and p["block"] for p in doc["plans"])
    if HAVE_COMPILER:
        assert doc["compiled"], doc["compile"]["log"]
        assert doc["compile"]["cubin_bytes"] > 1000


TEMPLATED = """
template <typename T, int TILE>
__global__ void scale_tile(const T* __restrict__ x, T* __restrict__ y, int n) {
    int i = blockIdx.x * TILE + threadIdx.x;
    if (i < n) y[i] = x[i] * T(2);
}
void launch(const float* x, float* y, int n) { scale_tile<float, 128><<<(n + 127) / 128, 128>>>(x, y, n); }
"""


@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc"])
def test_a_templated_kernel_compiles_with_its_template_arguments(tmp_path, compiler):
    from nki_assist.numerics.cuda_compile import compile_kernel

    if (compiler == "nvrtc" and not nvrtc_available()) or (compiler == "nvcc" and not nvcc_version()):
        pytest.skip(f"{compiler} is not installed here")
    src = tmp_path / "k.cu"
    src.write_text(TEMPLATED)
    res = compile_kernel(src, "scale_tile<float, 128>", ["-ftz=false"], "sm_80", template=True, prefer=compiler)
    assert res.ok, res.log
    assert res.image[:4] == b"\x7fELF"
    if compiler == "nvrtc":  # the mangled name of the instantiation, for the driver to load
        assert res.lowered_name == "_Z10scale_tileIfLi128EEvPKT_PS0_i"
