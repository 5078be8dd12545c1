"""Dependencies point one way (design.md, docs/architecture.md): checked on the source, not by convention.

Every import of nki_assist/ and lsp_server/ (module level and inside functions) is resolved to the unit it
names (a subpackage, or a top-level module of nki_assist). A unit may import only units of a lower or equal
layer; units of one layer must not import each other in a cycle; modules must not import each other in a
cycle; and an import inside a function (allowed where start-up time needs it) says why in a comment.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("nki_assist", "lsp_server")

# Bottom first. A unit is a subpackage of nki_assist, a top-level module of it, or lsp_server.
LAYERS: list[tuple[str, ...]] = [
    ("taxonomy",),
    ("severity", "findings", "infra", "api", "__init__"),
    ("schema", "config", "contracts"),
    ("parse",),
    ("project",),
    ("rules",),
    ("sim",),
    ("toolchain",),
    ("numerics", "perf"),
    ("diagnose",),
    ("check",),
    ("feedback",),
    ("review",),
    ("report", "evalsuite"),
    ("batch", "launch"),
    ("lsp_server",),
    ("commands",),
    ("cli", "__main__"),
]
RANK = {unit: i for i, units in enumerate(LAYERS) for unit in units}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for p in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(p.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = p
    return out


MODULES = _modules()


def unit_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "lsp_server":
        return "lsp_server"
    return parts[1] if len(parts) > 1 else "__init__"


def _resolve(module: str, path: Path, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The internal modules an import statement names (`from pkg import mod` names pkg.mod)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] in PACKAGES]
    if node.level:
        base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    if target.split(".")[0] not in PACKAGES:
        return []
    named = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
    return named or [target]


def _imports() -> list[tuple[str, str, int, bool, str]]:
    """(importer, imported, line, inside a function, the line and the one before it)."""
    rows = []
    for module, path in MODULES.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        tree = ast.parse("\n".join(lines), str(path))
        in_fn: set[int] = set()
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                in_fn |= {id(n) for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))}
        import_lines = {i for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                        for i in range(node.lineno, node.end_lineno + 1)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                # The import's own lines and the comment above its block of imports (blank lines skipped).
                above = node.lineno - 1
                while above in import_lines or (above > 0 and not lines[above - 1].strip()):
                    above -= 1
                context = "\n".join(lines[max(0, above - 1): node.end_lineno])
                for target in _resolve(module, path, node):
                    rows.append((module, target, node.lineno, id(node) in in_fn, context))
    return rows


IMPORTS = _imports()


def test_every_unit_has_a_layer():
    units = {unit_of(m) for m in MODULES}
    assert sorted(units - set(RANK)) == [], "add the new unit to LAYERS (and docs/architecture.md)"


def test_no_upward_import():
    upward = [f"{src}:{line} imports {dst} ({unit_of(src)} -> {unit_of(dst)})"
              for src, dst, line, _, _ in IMPORTS
              if RANK.get(unit_of(dst), -1) > RANK.get(unit_of(src), 99)]
    assert upward == []


# Packages with one entry point: code outside them imports the package (its __init__), never a module behind it.
SEALED = ("nki_assist.check", "nki_assist.review")


def test_sealed_packages_are_entered_through_their_init():
    leaks = [f"{src}:{line} imports {dst}" for src, dst, line, _, _ in IMPORTS for pkg in SEALED
             if dst.startswith(pkg + ".") and not src.startswith(pkg + ".") and src != pkg]
    assert leaks == []


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_cycle_between_units():
    edges: dict[str, set[str]] = defaultdict(set)
    for src, dst, *_ in IMPORTS:
        if unit_of(src) != unit_of(dst):
            edges[unit_of(src)].add(unit_of(dst))
    assert _cycles(edges) == []


def test_no_cycle_between_modules():
    edges: dict[str, set[str]] = defaultdict(set)
    for src, dst, *_ in IMPORTS:
        # A package's __init__ re-exporting its modules is not a cycle of design.
        if src != dst and not dst.startswith(src + "."):
            edges[src].add(dst)
    assert _cycles(edges) == []


def test_function_level_imports_say_why():
    silent = [f"{src}:{line}" for src, _, line, in_fn, context in IMPORTS
              if in_fn and "#" not in context.splitlines()[0] and "#" not in "".join(context.splitlines()[1:])]
    assert silent == [], "an import inside a function needs a comment saying why it is deferred"


@pytest.mark.parametrize("src, dst, ok", [
    ("nki_assist.sim.core", "nki_assist.contracts.runs", True),
    ("nki_assist.sim.core", "nki_assist.toolchain.base", False),
    ("nki_assist.parse.nki", "nki_assist.rules.registry", False),
    ("nki_assist.commands.check", "nki_assist.check.engine", True),
])
def test_layer_order_examples(src, dst, ok):
    """The rank table says what design.md says (a guard against an edit that flattens it)."""
    assert (RANK[unit_of(dst)] <= RANK[unit_of(src)]) is ok
