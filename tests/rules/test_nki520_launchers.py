"""NKI520 and the legacy launchers: the project index records which functions a module hands to a pass-by-reference
launcher (`nki_jit()(f)`, `nki_jit(f)`, `torch_neuronx.nki_jit(f)`, `nki_call(partial(f))`), and a kernel launched
that way anywhere in the project gets an info naming the launcher's line instead of the error (optimum-neuron's
`flash_fwd_large_d` is launched from a sibling module). Fixtures: tests/fixtures/rules/NKI520/cross_module (ours)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nki_assist.check import CheckOptions, check_paths, check_source
from nki_assist.project import Project, context_digest
from nki_assist.project.index import index_module, module_from_json, module_to_json

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "rules" / "NKI520"
PKG = FIX / "cross_module"
XLA = "torch_neuronx.xla_impl.ops.nki_jit"


def _nki520(report_findings):
    return sorted((Path(f.file).name, f.line, f.severity.value, f) for f in report_findings if f.rule == "NKI520")


def _package(tmp_path: Path) -> Path:
    pkg = tmp_path / "cross_module"
    shutil.copytree(PKG, pkg)
    return pkg


def _launches(text: str, path: str = "host.py"):
    return index_module(path, text).launches


# -- the index fact ---------------------------------------------------------------------------------------------
def test_the_index_records_what_a_module_hands_to_a_legacy_launcher():
    m = index_module(str(PKG / "launch.py"), (PKG / "launch.py").read_text(encoding="utf-8"))
    assert m.name == "cross_module.launch"
    # a relative `from .kernels import gelu_into`, and `kernels.bias_into` through `from . import kernels`, inside
    # a function (its qualname is the scope the project resolves a bare name from)
    assert m.launches == [("", "cross_module.kernels.gelu_into", XLA, 9),
                          ("biased", "cross_module.kernels.bias_into", XLA, 14)]
    again = module_from_json(module_to_json(m))
    assert again.launches == m.launches and again == m
    old = module_to_json(m)
    del old["launches"]  # an index cached before the fact existed is a miss, not an empty list
    with pytest.raises(KeyError):
        module_from_json(old)


def test_launch_forms_public_code_writes():
    text = '''
import torch_neuronx
from functools import partial
from jax_neuronx import nki_call
from torch_neuronx import nki_jit as legacy_jit

from .kernels import k1, k2, k3, k4


def local(x, out):
    pass


a = legacy_jit(func=k1)                 # nki-samples sd_attention_torch.py
b = torch_neuronx.nki_jit()(k2)
c = legacy_jit(k3)(x, out)              # the launch is k3's; x is a launch argument, not a kernel


def run(x):
    from torch_neuronx.xla_impl.ops import nki_jit   # optimum-neuron's tests import it in the function
    nki_jit()(local)[2](x, x)
    return nki_call(partial(k4, pool=2), x, out_shape=None)
'''
    got = _launches(text, "pkg/host.py")
    assert [(scope, passed, launcher, line) for scope, passed, launcher, line in got] == [
        ("", "kernels.k1", "torch_neuronx.nki_jit", 14),
        ("", "kernels.k2", "torch_neuronx.nki_jit", 15),
        ("", "kernels.k3", "torch_neuronx.nki_jit", 16),
        ("run", "local", XLA, 21),
        ("run", "kernels.k4", "jax_neuronx.nki_call", 22),
    ]


def test_names_that_are_not_the_framework_launcher_record_nothing():
    # the standalone nki package's jit under the same name (NxD Inference's Qwen3.5 files), a module's own alias
    # for nki.trace (the SDK's tests), a module that defines nki_jit itself, a file without either word
    assert _launches("from nki import jit as nki_jit\nfrom .k import f\n\nk = nki_jit()(f)\n") == []
    assert _launches("import nki\nnki_jit = nki.trace\n\n\ndef f(x):\n    pass\n\n\nk = nki_jit(f)\n") == []
    assert _launches("def nki_jit(f):\n    return f\n\n\ndef g():\n    pass\n\n\nk = nki_jit(g)\n") == []
    assert _launches("import neuronxcc.nki as nki\n\n\ndef f(x):\n    pass\n\n\nk = nki.jit(f)\n") == []
    # a bare nki_jit bound nowhere in the module: imported where the index cannot see, the framework's by name
    assert _launches("def f(x):\n    pass\n\n\nk = nki_jit()(f)\n") == [("", "f", "nki_jit", 5)]


def test_the_project_resolves_launches_across_modules():
    p = Project.build({str(f): f.read_text(encoding="utf-8") for f in sorted(PKG.glob("*.py"))})
    launched = p.context(str(PKG / "kernels.py")).launched_by
    launch = str(PKG / "launch.py")
    assert launched == {"gelu_into": [(launch, 9, XLA)], "bias_into": [(launch, 14, XLA)]}  # not clamp_into
    assert p.context(launch).launched_by == {}


def test_a_kernels_slice_digest_follows_its_launchers(tmp_path):
    """check's cache keys a file's entry with its slice: removing the launch elsewhere must re-check the kernel."""
    pkg = _package(tmp_path)
    kernels, launch = str(pkg / "kernels.py"), pkg / "launch.py"

    def digest():
        return context_digest(Project.build({str(f): f.read_text(encoding="utf-8")
                                             for f in sorted(pkg.glob("*.py"))}).context(kernels))

    base = digest()
    text = launch.read_text(encoding="utf-8")
    launch.write_text(text.replace("_gelu_call = nki_jit()(gelu_into)", "_gelu_call = gelu_into"), encoding="utf-8")
    assert digest() != base
    launch.write_text(text, encoding="utf-8")
    assert digest() == base


# -- the rule ---------------------------------------------------------------------------------------------------
def test_a_kernel_launched_by_reference_from_another_module_is_info_naming_the_launcher():
    got = _nki520(check_paths([str(PKG)], CheckOptions()).findings)
    assert [(name, line, sev) for name, line, sev, _ in got] == [
        ("kernels.py", 9, "info"), ("kernels.py", 16, "info"), ("kernels.py", 24, "error")]
    gelu, bias, clamp = (f for *_, f in got)
    assert "launched through torch_neuronx.xla_impl.ops.nki_jit at launch.py:9" in gelu.message
    assert "err_cannot_update_immutable_parameter" in gelu.message  # what a direct nki.jit launch would do
    assert gelu.evidence["launched_by_reference"] == [f"launch.py:9 ({XLA})"]
    assert [(Path(r.file).name, r.line) for r in gelu.related] == [("kernels.py", 12), ("launch.py", 9)]
    assert bias.evidence["launched_by_reference"] == [f"launch.py:14 ({XLA})"]
    # nothing launches clamp_into by reference: the error stands, and names no launcher
    assert clamp.evidence["launched_by_reference"] == [] and "launched through" not in clamp.message


def test_the_kernel_file_alone_keeps_its_errors():
    text = (PKG / "kernels.py").read_text(encoding="utf-8")
    got = [(f.line, f.severity.value) for f in check_source(str(PKG / "kernels.py"), text, CheckOptions())
           if f.rule == "NKI520"]
    assert got == [(9, "error"), (16, "error"), (24, "error")]


def test_an_optional_output_launched_elsewhere_is_info(tmp_path):
    # optimum-neuron's shape: `output=None`, launched by torch_neuronx.nki_jit()(kernel) from a sibling module
    pkg = tmp_path / "attn"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    shutil.copy(FIX / "pos_optional_output.py", pkg / "flash.py")
    (pkg / "base.py").write_text("from torch_neuronx.xla_impl.ops import nki_jit\n\nfrom .flash import add_bias\n\n"
                                 "_call = nki_jit()(add_bias)\n", encoding="utf-8")
    got = _nki520(check_paths([str(pkg)], CheckOptions()).findings)
    assert [(name, line, sev) for name, line, sev, _ in got] == [("flash.py", 8, "info")]
    assert "base.py:5" in got[0][3].message


def test_a_kernel_also_called_directly_keeps_its_severity(tmp_path):
    pkg = _package(tmp_path)
    (pkg / "direct.py").write_text("from .kernels import gelu_into\n\n\ndef run(x, out):\n"
                                   "    gelu_into(x, out)\n", encoding="utf-8")
    got = _nki520(check_paths([str(pkg)], CheckOptions()).findings)
    assert [(name, line, sev) for name, line, sev, _ in got] == [
        ("kernels.py", 9, "error"), ("kernels.py", 16, "info"), ("kernels.py", 24, "error")]
    assert "also launched through torch_neuronx.xla_impl.ops.nki_jit at launch.py:9" in got[0][3].message
    assert "cross_module.direct:run calls it directly" in got[0][3].message


def test_same_file_launchers():
    def found(name):
        path = FIX / name
        return [(f.line, f.severity.value, f) for f in check_source(str(path), path.read_text(encoding="utf-8"),
                                                                    CheckOptions()) if f.rule == "NKI520"]

    same = found("pos_same_file_launcher.py")
    assert [(line, sev) for line, sev, _ in same] == [(9, "info")]
    assert same[0][2].evidence["launched_by_reference"] == [f"line 15 ({XLA})"]
    # `nki_jit = nki.jit` in the module: not the framework launcher, the error stands
    assert [(line, sev) for line, sev, _ in found("pos_local_nki_jit_alias.py")] == [(10, "error")]
    # undecorated kernels launched only by reference (three forms), and the parser's `k = torch_neuronx.nki_jit(f)`
    # wrapping (which it reads as nki.jit) is not taken for a decorator
    assert found("neg_launcher_alias.py") == []
