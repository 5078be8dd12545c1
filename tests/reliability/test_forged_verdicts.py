"""A kernel cannot forge its review (issue 44, case 1).

Every kernel here is the row-sum port with its accumulation left out (it returns zeros), so an honest
review blocks it. The hostile ones add lines at the top of the kernel module that, before the fix, made
the reference return zeros too: the batched review ran the reference in the kernel's process after the
kernel's module had loaded, and read reference.py after the kernel ran. The verdict and the failed
comparison must be the ones of the plain broken kernel, whatever the kernel patches.
"""

from __future__ import annotations

import pytest
from reliability_helpers import ROWSUM, make_port

from nki_assist.review import ReviewOptions, review_port
from nki_assist.toolchain import isolation

# the kernel's accumulation removed: it returns zeros
BROKEN = ("        nisa.tensor_tensor(dst=acc, data1=acc, data2=part, op=nl.add)\n", "")

ATTACKS = {
    "numpy": """import numpy as _np
_sum = _np.sum
_np.sum = lambda a, *args, **kw: _np.zeros_like(_sum(a, *args, **kw))
""",
    "builtins": """import builtins as _b
import numpy as _np
_getattr = _b.getattr
_b.getattr = lambda o, n, *d: ((lambda *a, **k: _np.zeros((128, 1))) if n == "row_sum_ref" else _getattr(o, n, *d))
""",
    "nki_assist": """import numpy as _np
import nki_assist.numerics.refchild as _rc
import nki_assist.numerics.scenarios as _sc
import nki_assist.numerics.reference as _ref
_zeros = lambda *a, **k: [_np.zeros((128, 1))]
_sc.child_call = _rc.child_call = _zeros
_ref.normalize_outputs = lambda v: [_np.zeros((128, 1))]
for _name in ("refbatch",):
    try:
        import importlib as _il
        setattr(_il.import_module("nki_assist.numerics." + _name), "child_call", _zeros)
    except ImportError:
        pass
""",
    "rewrite-reference": """import pathlib as _pl
_pl.Path(__file__).with_name("reference.py").write_text(
    "import numpy as np\\n\\ndef row_sum_ref(x):\\n    return np.zeros((x.shape[0], 1))\\n")
""",
}


def _port(root, attack: str = ""):
    port = make_port(root)
    kernel = port.parent / "row_sum_nki.py"
    text = kernel.read_text()
    assert BROKEN[0] in text
    text = text.replace(*BROKEN)
    head = '"""Port of row_sum.cu'
    kernel.write_text(text.replace(head, attack + head, 1) if attack else text)
    return port


def _verdict(port) -> tuple[str, list[tuple[str, bool]]]:
    res = review_port(str(port), ReviewOptions(timeout_s=30, memory_mb=2048, plots=False))
    rows = [(r["scenario"], r["passed"]) for r in res.review.numerics.matrix
            if r["against"] == "reference" and r["scenario"].startswith("trainium")]
    return res.review.assessment.verdict, rows


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    verdict, rows = _verdict(_port(tmp_path_factory.mktemp("honest")))
    assert verdict == "block" and rows and not any(p for _, p in rows), (verdict, rows)
    return verdict, rows


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_kernel_patching_at_import_cannot_change_its_verdict(tmp_path, honest, attack):
    assert ROWSUM.exists()
    assert _verdict(_port(tmp_path, ATTACKS[attack])) == honest  # before: approve/revise with every row passing


@pytest.mark.parametrize("mode", ["no-zygote", "strong"])
def test_every_attack_at_once_in_each_sandbox_mode(tmp_path, honest, monkeypatch, mode):
    if mode == "strong":
        if isolation.strong_tool()[0] is None:
            pytest.skip("no namespace tool (bwrap/unshare) works here")
        monkeypatch.setattr(isolation, "_chosen", "strong")
    else:
        monkeypatch.setenv("NKI_ASSIST_NO_ZYGOTE", "1")
    assert _verdict(_port(tmp_path, "".join(ATTACKS.values()))) == honest


def test_the_reference_is_read_before_the_kernel_runs(tmp_path, honest):
    """The rewrite happened (the kernel ran), yet the review used the bytes read before."""
    port = _port(tmp_path, ATTACKS["rewrite-reference"])
    assert _verdict(port) == honest
    assert "np.zeros" in (port.parent / "reference.py").read_text()
