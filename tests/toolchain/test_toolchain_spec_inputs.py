"""Richer spec inputs: keyword arguments, enum members, dtypes by name, config objects, literal arrays,
caller outputs, a package root, and kernels under `if` / named by path (errors name file and key)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from nki_assist.cli import main
from nki_assist.contracts.callargs import Keyword, Named, Output, PackageRoot
from nki_assist.numerics.inputs import make_inputs, upcast
from nki_assist.numerics.spec import SpecError, load_spec

from toolchain_paths import PORTS

KERNEL = '''
import nki
import nki.language as nl

try:
    import nki.isa as nisa
    HAS_NKI = True
except ImportError:
    HAS_NKI = False

if HAS_NKI:
    @nki.jit
    def k(x, out, mode, *, scale, idx=None):
        return out

def make(n):
    return k
'''


def _spec(tmp_path: Path, inputs: str, port_extra: str = "") -> Path:
    (tmp_path / "k.py").write_text(KERNEL)
    (tmp_path / "ref.py").write_text("def ref(x, out, mode, *, scale, idx=None):\n    return x\n")
    p = tmp_path / "port.toml"
    p.write_text(f'[port]\nname = "t"\nnki = "k.py"\nreference = "ref.py:ref"\n{port_extra}\n[inputs]\n'
                 + textwrap.dedent(inputs) + '\n[[sizes]]\nname = "s"\nN = 4\n')
    return p


GOOD = """
x = { shape = [2, "N"], dtype = "bfloat16" }
out = { shape = [2, "N"], dtype = "float32", dist = "zeros", output = true }
mode = { enum = "ActFnType.SiLU" }
scale = { call = "cfg.Config", kwargs = { a = 1, b = { dtype = "bf16" }, c = [{ enum = "E.X" }, 2] }, keyword = true }
idx = { array = [[0, 3], [1, 2]], dtype = "int32", keyword = true }
"""


def test_every_form_becomes_its_call_marker(tmp_path):
    spec = load_spec(_spec(tmp_path, GOOD, 'package_root = "."'))
    assert spec.kernel_name == "k"  # found under `if HAS_NKI:`
    assert [spec.inputs[n].kind for n in spec.inputs] == ["generated", "generated", "enum", "call", "array"]
    args = make_inputs(spec, "s")
    x, out, mode, scale, idx, root = args
    assert x.shape == (2, 4) and str(x.dtype) == "bfloat16"
    assert isinstance(out, Output) and out.value.shape == (2, 4) and not out.value.any()
    assert mode == Named("enum", "ActFnType.SiLU")
    assert scale == Keyword("scale", Named("call", "cfg.Config",
                                           {"a": 1, "b": Named("dtype", "bfloat16"), "c": [Named("enum", "E.X"), 2]}))
    assert idx.name == "idx" and idx.value.dtype == np.int32 and idx.value.tolist() == [[0, 3], [1, 2]]
    assert root == PackageRoot(str(tmp_path.resolve()))
    up = upcast(args)
    assert up[0].dtype == np.float64 and isinstance(up[1], Output) and up[1].value.dtype == np.float64
    assert spec.input_bytes(spec.size("s")) == 2 * 4 * 2 + 2 * 4 * 4  # only generated arrays count


@pytest.mark.parametrize("inputs, port_extra, problem", [
    ('x = { shape = [2], dtype = "float32", enum = "A.B" }', "", "inputs.x: give either `value`, `shape`, `enum`, `call` or `array`, not several"),
    ('x = { enum = "A B" }', "", "inputs.x: `enum` must be a dotted Python name"),
    ('x = { call = "C", kwargs = { a = { enum = "E.X", dtype = "f" } } }', "",
     "inputs.x: kwargs.a: a table field needs exactly one of enum, dtype, call"),
    ('x = { dtype = "float12" }', "", "inputs.x: unknown dtype 'float12'"),
    ('x = { array = [1, 2] }', "", "inputs.x: a literal `array` needs a `dtype`"),
    ('x = { array = [[1, 2], [3]], dtype = "int32" }', "", "inputs.x: `array` must be a (nested) list"),
    ('x = { value = 1, output = true }', "", "inputs.x: `output = true` needs a `shape`"),
    ('x = { value = 1, kwargs = { a = 1 } }', "", "inputs.x: `kwargs` goes with `call`"),
    ('x = { value = 1 }\nout = { value = 1 }\nmode = { value = 1 }\nscale = { value = 1, keyword = true }\n'
     'bogus = { value = 1, keyword = true }', "", "has no keyword parameter 'bogus'"),
    ('x = { value = 1 }\nout = { value = 1 }\nmode = { value = 1 }', "", "requires keyword argument(s) scale"),
    ('x = { value = 1 }', 'package_root = "nope"', "port.package_root: not a folder"),
])
def test_spec_errors_name_file_and_key(tmp_path, inputs, port_extra, problem):
    with pytest.raises(SpecError) as exc:
        load_spec(_spec(tmp_path, inputs, port_extra))
    assert str(exc.value).startswith(str(tmp_path / "port.toml")) and problem in str(exc.value), str(exc.value)


@pytest.mark.parametrize("name, ok", [("make(3)", True), ("make(3).k", True), ("nope(3)", False),
                                      ("make(n)", False), ("1 +", False)])
def test_kernel_named_by_factory_or_path(tmp_path, name, ok):
    inputs = 'x = { value = 1 }\nout = { value = 1 }\nmode = { value = 1 }\nscale = { value = 1, keyword = true }'
    path = _spec(tmp_path, inputs, f'nki_kernel = "{name}"')
    if ok:
        assert load_spec(path).kernel_name == name
    else:
        with pytest.raises(SpecError, match="port.nki_kernel"):
            load_spec(path)


def test_simulate_a_package_sub_kernel_with_config_enum_dtype_and_output(capsys):
    code = main(["simulate", str(PORTS / "pkg_scale" / "port.toml"), "--format", "json", "--timeout", "60"])
    doc = json.loads(capsys.readouterr().out)
    (size,) = doc["sizes"]
    assert code == 0 and size["status"] == "ok" and size["within_tolerance"] is True, size
    (agr,) = size["agreement"]
    assert agr["shape"] == [128, 64] and agr["mismatches"] == 0 and agr["max_abs"] < 1e-6
    assert doc["findings"] == []
