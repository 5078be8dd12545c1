"""The project model: files indexed once, calls resolved across modules, roles, call-site facts, guards,
imported constants and names, and what `check` does with them on a small package written here."""

from __future__ import annotations

from pathlib import Path

from nki_assist.check import CheckOptions, check_paths, check_source
from nki_assist.findings import Severity
from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.project import ENTRY, FUNCTION, HELPER, SUB_KERNEL, Project, apply_context, context_for
from nki_assist.rules.nki.run import run_nki_rules

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rules"
HEAD = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n"

CONSTS = "PSUM_SIZE = 2048\nTILE = 128\nHALF = TILE // 2\n"
UTILS = HEAD + '''
def kernel_assert(cond, msg):
    if not cond:
        raise AssertionError(msg)


def load_rows(dst, src, n):
    for i in nl.affine_range(n // 128):
        nisa.dma_copy(dst=dst[i * 128:(i + 1) * 128, 0:512], src=src[i * 128:(i + 1) * 128, 0:512])


def mm_into(dst, a, b):
    nisa.nc_matmul(dst=dst, stationary=a, moving=b)
'''
KERNEL = HEAD + '''from .consts import PSUM_SIZE, TILE
from .utils import kernel_assert, load_rows, mm_into, missing_helper
from . import utils


@nki.jit
def sub(a):
    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    return t


@nki.jit
def entry(a, b, unused):
    N, K = a.shape
    kernel_assert(N % 128 == 0, "N")
    out = nl.ndarray((N, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    buf = nl.ndarray((N, 512), dtype=nl.float32, buffer=nl.sbuf)
    load_rows(buf, a, N)
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    utils.mm_into(acc, buf, buf)
    t = sub(b)
    for j in nl.affine_range(PSUM_SIZE // TILE // 2):
        nisa.dma_copy(dst=out[0:128, 0:512], src=t)
    return out
'''


def _package(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "consts.py").write_text(CONSTS, encoding="utf-8")
    (pkg / "utils.py").write_text(UTILS, encoding="utf-8")
    (pkg / "kernel.py").write_text(KERNEL, encoding="utf-8")
    return pkg


def _project(pkg: Path) -> Project:
    return Project.build({str(p): p.read_text(encoding="utf-8") for p in sorted(pkg.glob("*.py"))})


def test_modules_relative_imports_and_constants(tmp_path):
    pkg = _package(tmp_path)
    p = _project(pkg)
    assert set(p.modules) == {"pkg", "pkg.consts", "pkg.utils", "pkg.kernel"}
    k = p.modules["pkg.kernel"]
    assert k.imports["PSUM_SIZE"] == "pkg.consts.PSUM_SIZE" and k.imports["utils"] == "pkg.utils"
    assert p.modules["pkg.consts"].constants == {"PSUM_SIZE": 2048, "TILE": 128, "HALF": 64}
    ctx = p.context(str(pkg / "kernel.py"))
    assert ctx.imported_constants == {"PSUM_SIZE": 2048, "TILE": 128}
    assert ctx.missing_imports == [("missing_helper", 5, "pkg.utils")]


def test_roles_and_call_site_facts(tmp_path):
    pkg = _package(tmp_path)
    p = _project(pkg)
    assert p.roles["pkg.kernel:entry"] == ENTRY
    assert p.roles["pkg.kernel:sub"] == SUB_KERNEL
    assert p.roles["pkg.utils:load_rows"] == HELPER
    assert p.roles["pkg.utils:mm_into"] == HELPER  # called as `utils.mm_into` through the module alias
    assert p.roles["pkg.utils:kernel_assert"] == HELPER
    facts = p.param_facts("pkg.utils:mm_into")
    assert facts["dst"].buffer == "psum" and facts["a"].buffer == "sbuf"
    assert facts["dst"].shape == "(128, 512)" and facts["dst"].dtype == "nl.float32"
    # the caller's kernel_assert guards the helper's `n // 128` (by the leaf name of what it checks)
    ctx = p.context(str(pkg / "utils.py")).functions["load_rows"]
    assert ctx.callers == ("pkg.kernel:entry",)
    assert ctx.proves_divisible("N", 128) and not ctx.proves_divisible("N", 256)


def test_a_file_alone_is_a_project():
    p = Project.build({"k.py": KERNEL})
    assert p.roles == {"k:sub": SUB_KERNEL, "k:entry": ENTRY}
    assert context_for("k.py", KERNEL, None).functions["entry"].role == ENTRY
    assert Project.build({"k.py": "def f(:\n"}).modules["k"].syntax_error[0] == 1


def test_check_uses_the_project(tmp_path):
    pkg = _package(tmp_path)
    report = check_paths([str(pkg)], CheckOptions())
    by_file = {(Path(f.file).name, f.rule, f.line) for f in report.findings}
    # NKI003: the name utils.py does not define; nothing else is an error
    assert ("kernel.py", "NKI003", 5) in by_file
    assert [f.rule for f in report.findings if f.severity == Severity.ERROR] == ["NKI003"]
    # the imported constants fold: 2048 // 128 // 2 = 8 iterations, no unguarded floor division
    assert not any(r == "NKI203" for _, r, _ in by_file)
    # the helper's floor division is guarded by the caller's kernel_assert (another module)
    assert not any(n == "utils.py" and r == "NKI203" for n, r, _ in by_file)
    # `unused` is an unread input of the entry kernel: the only NKI202
    assert [(n, r) for n, r, _ in by_file if r == "NKI202"] == [("kernel.py", "NKI202")]
    # checked alone, utils.py knows no caller: its `n // 128` is unguarded there
    alone = check_source(str(pkg / "utils.py"), UTILS, CheckOptions())
    assert [f.rule for f in alone if f.rule == "NKI203"] == ["NKI203"]


def test_helper_destination_buffer_comes_from_its_callers(tmp_path):
    pkg = _package(tmp_path)
    p = _project(pkg)
    path = str(pkg / "utils.py")
    nf = apply_context(parse_nki(UTILS, path), p.context(path))
    assert {k.name: k.role for k in nf.kernels}["mm_into"] == HELPER
    assert not [f for f in run_nki_rules(nf, get_target("trn2")) if f.rule == "NKI106"]
    hbm = KERNEL.replace("utils.mm_into(acc, buf, buf)", "utils.mm_into(out, buf, buf)")
    (pkg / "kernel.py").write_text(hbm, encoding="utf-8")
    p = _project(pkg)
    nf = apply_context(parse_nki(UTILS, path), p.context(path))
    found = [f for f in run_nki_rules(nf, get_target("trn2")) if f.rule == "NKI106"]
    assert [(f.line, f.evidence["buffer"]) for f in found] == [(16, "shared_hbm")]


def test_roles_without_callers():
    src = HEAD + "\ndef orphan(x):\n    return nl.exp(x)\n"
    assert Project.build({"o.py": src}).roles == {"o:orphan": FUNCTION}


def test_data_fixed_small_dmas_are_advice():
    path = FIXTURES / "NKI108" / "data_fixed_sizes.py"
    found = [f for f in run_nki_rules(parse_nki(path.read_text(encoding="utf-8"), str(path)), get_target("trn2"))
             if f.rule == "NKI108"]
    assert [(f.line, f.severity) for f in found] == [(14, Severity.INFO), (18, Severity.INFO)]
    assert found[0].evidence["data_fixed"].startswith("a single integer control value")
    assert found[1].evidence["data_fixed"].startswith("an MX scale layout")
    # the same single value as float data stays a warning (test_rules_public_idioms: one element per step)


def test_syntax_error_is_reported_once_where_python_stops():
    path = FIXTURES / "NKI001" / "pos_duplicated_docstring_tail.py"
    text = path.read_text(encoding="utf-8")
    found = [f for f in check_source(str(path), text, CheckOptions()) if f.rule == "NKI001"]
    assert [(f.line, f.severity) for f in found] == [(17, Severity.ERROR)]
    assert "unexpected indent" in found[0].message


def test_copies_of_one_package_make_no_missing_import_claims(tmp_path):
    """Two checked copies of a package (SDK stubs of two releases side by side) claim the same module name: which
    one an import means is ambiguous, so a name only one copy defines is not reported missing (NKI003)."""
    from nki_assist.project import Project

    files = {"r1/nki/__init__.py": "", "r1/nki/language/__init__.py": "class Other:\n    pass\n",
             "r1/nki/isa/__init__.py": "from nki.language import NkiTensor\n",
             "r2/nki/__init__.py": "", "r2/nki/language/__init__.py": "class NkiTensor:\n    pass\n",
             "r2/nki/isa/__init__.py": "from nki.language import NkiTensor\n"}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    p = Project.build({str(tmp_path / rel): text for rel, text in files.items()})
    assert "nki.language" in p.ambiguous
    for rel in ("r1/nki/isa/__init__.py", "r2/nki/isa/__init__.py"):
        assert p.context(str(tmp_path / rel)).missing_imports == []
    alone = Project.build({str(tmp_path / rel): files[rel] for rel in ("r1/nki/__init__.py",
                           "r1/nki/language/__init__.py", "r1/nki/isa/__init__.py")})
    assert [m[0] for m in alone.context(str(tmp_path / "r1/nki/isa/__init__.py")).missing_imports] == ["NkiTensor"]


def test_a_slice_digest_follows_what_the_project_tells_the_file(tmp_path):
    """`context_digest` keys check's cache entries with a file's slice: it changes when a call of the file resolves
    elsewhere, when another module's constant or a caller's guard changes, or the module is renamed; not when an
    unrelated module changes. (The module's own facts follow from its text, which the entry's key holds.)"""
    from nki_assist.project import context_digest

    pkg = _package(tmp_path)
    kernel = str(pkg / "kernel.py")
    base = context_digest(_project(pkg).context(kernel))
    assert base == context_digest(_project(pkg).context(kernel))  # the same on every build
    (pkg / "other.py").write_text("X = 1\n", encoding="utf-8")
    assert context_digest(_project(pkg).context(kernel)) == base
    (pkg / "consts.py").write_text(CONSTS.replace("TILE = 128", "TILE = 64"), encoding="utf-8")
    assert context_digest(_project(pkg).context(kernel)) != base  # an imported constant
    (pkg / "consts.py").write_text(CONSTS, encoding="utf-8")
    (pkg / "utils.py").write_text(UTILS.replace("def mm_into(", "def mm_other("), encoding="utf-8")
    assert context_digest(_project(pkg).context(kernel)) != base  # `utils.mm_into` no longer resolves
    (pkg / "utils.py").write_text(UTILS, encoding="utf-8")
    assert context_digest(_project(pkg).context(kernel)) == base
    (pkg / "__init__.py").unlink()  # no package: other module names, relative imports unresolved
    assert context_digest(_project(pkg).context(kernel)) != base
    # a call that resolves elsewhere and changes nothing else of the file's slice
    other = tmp_path / "other"
    other.mkdir()
    (other / "__init__.py").write_text("", encoding="utf-8")
    (other / "a.py").write_text("from . import b\n\n\ndef f(x):\n    return b.g(x)\n", encoding="utf-8")
    digests = []
    for text in ("def g(y):\n    return y\n", "def h(y):\n    return y\n"):
        (other / "b.py").write_text(text, encoding="utf-8")
        digests.append(context_digest(_project(other).context(str(other / "a.py"))))
    assert digests[0] != digests[1]
