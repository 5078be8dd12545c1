"""Per-kernel NKI checks: the language server reuses a kernel's findings when the parse cache reuses the
kernel, which is right only if a check's findings for a kernel depend on that kernel, the file's dialect
and path and the target. These tests hold every check registered per kernel to that shape, and compare
the per-kernel run with the whole-file run on all our fixtures, crashes included."""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

import pytest

from benchmarks.check_bench import generate
from nki_assist.findings import Finding, Severity
from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import is_nki_source, parse_nki
from nki_assist.rules.nki import common as nki_common
from nki_assist.rules.nki.run import run_nki_rules
from nki_assist.rules.runner import Check

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(p for p in [*(ROOT / "tests" / "fixtures").rglob("*.py"), *(ROOT / "examples").rglob("*.py")]
                 if is_nki_source(p.read_text(encoding="utf-8", errors="replace")))
PER_KERNEL = [c for c in nki_common.CHECKS.checks if c.per_kernel]
# what a per-kernel check may read of the file besides the kernel (the memo key in rules/nki/run.py)
FILE_ATTRIBUTES = {"dialect", "path"}
MUTATORS = {"add", "append", "extend", "update", "setdefault", "pop", "remove", "discard", "insert", "clear"}


def _function(check: Check) -> ast.FunctionDef:
    tree = ast.parse(textwrap.dedent(inspect.getsource(check.fn)))
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    return fn


def _is_kernel_loop(node: ast.stmt, nf: str) -> bool:
    return (isinstance(node, ast.For) and isinstance(node.target, ast.Name)
            and isinstance(node.iter, ast.Attribute) and node.iter.attr == "kernels"
            and isinstance(node.iter.value, ast.Name) and node.iter.value.id == nf)


def _problems(check: Check) -> list[str]:
    fn = _function(check)
    nf = fn.args.args[0].arg
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body or not _is_kernel_loop(body[-1], nf):
        return ["the body does not end in one `for k in nf.kernels:` loop"]
    loop, before = body[-1], body[:-1]
    out = []
    for st in before:  # guards and per-file constants: no kernel, nothing the loop could accumulate into
        for node in ast.walk(st):
            if isinstance(node, ast.Attribute) and node.attr == "kernels":
                out.append(f"line {st.lineno}: reads the kernels before the loop")
    bound = {t.id for st in before for node in ast.walk(st) if isinstance(node, (ast.Assign, ast.AugAssign))
             for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)}
    inside = [node for st in loop.body + loop.orelse for node in ast.walk(st)]
    parents = {child: parent for parent in inside for child in ast.iter_child_nodes(parent)}
    for node in inside:
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            out.append(f"line {node.lineno}: global/nonlocal state")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound \
                and node.attr in MUTATORS:
            out.append(f"line {node.lineno}: mutates `{node.value.id}`, shared by all kernels")
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in bound:
                    out.append(f"line {node.lineno}: mutates `{t.value.id}`, shared by all kernels")
                if isinstance(node, ast.AugAssign) and isinstance(t, ast.Name) and t.id in bound:
                    out.append(f"line {node.lineno}: accumulates `{t.id}` over kernels")
        if isinstance(node, ast.Name) and node.id == nf:
            parent = parents.get(node)
            if isinstance(parent, ast.Attribute) and parent.attr in FILE_ATTRIBUTES:
                continue
            if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "emit" \
                    and len(parent.args) > 1 and parent.args[1] is node:
                continue  # emit reads the path only
            what = f"`{nf}.{parent.attr}`" if isinstance(parent, ast.Attribute) else f"`{nf}` itself"
            out.append(f"line {node.lineno}: reads {what} inside the kernel loop")
    return out


def test_there_are_per_kernel_and_per_file_checks():
    assert len(PER_KERNEL) >= 25
    # NKI504 reads the file's imports; the API-surface checks (NKI510-NKI519) read the file's Python AST
    # once (rules/nki/api_usage.py) to resolve import aliases; NKI211/NKI212 read the kernel text, NKI213-NKI215 the
    # module's AST; the Python-level checks (NKI002-NKI004) read the whole module; NKI110 reads the decorator line
    # above the kernel (mode=), NKI520/NKI521 the kernel's Python AST and the file's launcher calls; NKI112/NKI113 the
    # kernels' Python AST, NKI216 the module's, NKI523 the decorator lines and the file's target override; NKI524-NKI527
    # and the widened NKI106 (nl.transpose operands) / NKI514 (helpers' nested defs) the file's API usage and the
    # kernels' call tree
    assert sorted(c.rules for c in nki_common.CHECKS.checks if not c.per_kernel) == \
        [("NKI002", "NKI004"), ("NKI003",), ("NKI106",), ("NKI110",), ("NKI112",), ("NKI113",), ("NKI211",), ("NKI212",),
         ("NKI213",), ("NKI214",), ("NKI215",), ("NKI216",), ("NKI504",), ("NKI510",), ("NKI511",), ("NKI512",),
         ("NKI513",), ("NKI514",), ("NKI514",), ("NKI515",), ("NKI516",), ("NKI517",), ("NKI518",), ("NKI519",),
         ("NKI520",), ("NKI521",), ("NKI523",), ("NKI524",), ("NKI525",), ("NKI526",), ("NKI527",)]


@pytest.mark.parametrize("check", PER_KERNEL, ids=lambda c: c.name)
def test_a_per_kernel_check_reads_only_its_kernel(check):
    assert _problems(check) == []


def _accumulating(nf, t):
    seen = set()
    for k in nf.kernels:
        seen.add(k.name)
        yield from ()


def _reading_other_kernels(nf, t):
    for k in nf.kernels:
        if len(nf.kernels) > 1:
            yield from ()


def _file_level(nf, t):
    if nf.imports:
        yield from ()


@pytest.mark.parametrize("fn, problem", [
    (_accumulating, "mutates `seen`"), (_reading_other_kernels, "reads `nf.kernels`"),
    (_file_level, "does not end in one `for k in nf.kernels:` loop")])
def test_the_shape_test_rejects_checks_that_read_more(fn, problem):
    assert any(problem in p for p in _problems(Check(("NKI999",), fn, per_kernel=True)))


def _dump(findings: list[Finding]) -> list[dict]:
    return [f.model_dump() for f in findings]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
@pytest.mark.parametrize("target", ["trn1", "trn2"])
def test_per_kernel_run_equals_the_whole_file_run(path, target):
    text = path.read_text(encoding="utf-8", errors="replace")
    t = get_target(target)
    whole = parse_nki(text, path.name)
    parts = parse_nki(text, path.name)
    parts.from_cache = True  # what a parse with a ParseCache sets: per-kernel parts, remembered
    assert _dump(run_nki_rules(parts, t)) == _dump(run_nki_rules(whole, t))
    assert _dump(run_nki_rules(parts, t)) == _dump(run_nki_rules(whole, t))  # from the kernels' memo


def test_a_check_crashing_on_one_kernel_drops_all_its_findings_in_both_runs(monkeypatch):
    text = generate(150)  # 8 kernels; the softmax and rmsnorm ones have NKI203 findings
    t = get_target("trn2")
    broken = next(c for c in PER_KERNEL if c.name == "floor_div_trip")
    calls = []

    def flaky(nf, target):
        calls.append([k.name for k in nf.kernels])
        for k in nf.kernels:
            if k.name == "softmax_2":
                raise RuntimeError("synthetic failure")
            yield from broken.fn(nf, target)

    healthy = run_nki_rules(parse_nki(text, "k.py"), t)
    assert any(f.rule == "NKI203" for f in healthy)
    checks = [Check(c.rules, flaky, True) if c is broken else c for c in nki_common.CHECKS.checks]
    monkeypatch.setattr(nki_common.CHECKS, "checks", checks)
    whole = run_nki_rules(parse_nki(text, "k.py"), t)
    nf = parse_nki(text, "k.py")
    nf.from_cache = True
    first, again = run_nki_rules(nf, t), run_nki_rules(nf, t)
    for found in (whole, first, again):
        crashes = [f for f in found if "synthetic failure" in f.message]
        assert len(crashes) == 1 and crashes[0].severity is Severity.INFO
        assert not [f for f in found if f.rule == "NKI203"]  # also those of the kernels before the crash
    assert _dump(first) == _dump(whole) == _dump(again)
    names = [k.name for k in nf.kernels]
    crash_at = names.index("softmax_2")
    # once over the file; then per kernel up to the crashing one; then nothing: each outcome was remembered
    assert calls == [names] + [[n] for n in names[:crash_at + 1]]
