"""Evidence for the versioned NKI API table: the nl/nisa/nki.collectives names, keywords and call shapes
that released code uses at a known NKI version (tools/gen_nki_api_table.py merges it; the corpus test
cross-checks every public corpus against the table with it).

Code that shipped at a version is evidence that what it calls exists there: AWS's nki-library at its
pinned NKI 0.3, nki-samples' new-dialect tutorials at NKI 0.2. Only `import nki` (new dialect) files
count; `neuronxcc.nki` files are the legacy dialect, which the table does not version.

`scan(folder)` -> {name: {"line": "path:line", "kwargs": {kw: "path:line"}, "omitted": {param-index
shape}}}, where each call records the keywords it passes and how many positional arguments.
"""

from __future__ import annotations

import ast
from pathlib import Path

MODULES = {"nki.language": "nl", "nki.isa": "nisa", "nki.collectives": "nki.collectives"}


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> canonical module prefix ("nl", "nisa", "nki.collectives", "nki")."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in MODULES:
                    out[a.asname or a.name] = MODULES[a.name] if a.asname else a.name
                elif a.name == "nki":
                    out[a.asname or "nki"] = "nki"
        elif isinstance(node, ast.ImportFrom) and node.module == "nki" and node.level == 0:
            for a in node.names:
                full = f"nki.{a.name}"
                if full in MODULES:
                    out[a.asname or a.name] = MODULES[full]
    return out


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _canonical(text: str, aliases: dict[str, str]) -> str | None:
    head, _, rest = text.partition(".")
    if head not in aliases or not rest:
        return None
    full = f"{aliases[head]}.{rest}"
    for long, short in MODULES.items():  # nki.language.exp -> nl.exp
        if full.startswith(long + "."):
            full = short + full[len(long):]
    if not full.startswith(("nl.", "nisa.", "nki.collectives.")):
        return None
    return full


def is_new_dialect(tree: ast.Module) -> bool:
    return any(isinstance(n, (ast.Import, ast.ImportFrom)) and
               ((isinstance(n, ast.Import) and any(a.name == "nki" or a.name.startswith("nki.") for a in n.names))
                or (isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "nki" and n.level == 0))
               for n in ast.walk(tree))  # imports under `if HAS_NKI:` count


def scan_file(path: Path, label: str, out: dict) -> None:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return
    if not is_new_dialect(tree):
        return
    aliases = _aliases(tree)
    calls: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = _dotted(node.func)
            full = _canonical(name, aliases) if name else None
            if full is None:
                continue
            calls.add(id(node.func))
            where = f"{label}:{node.lineno}"
            e = out.setdefault(full, {"line": where, "kwargs": {}, "calls": []})
            if any(k.arg is None for k in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
                continue  # *args / **kwargs: the shape is not known
            for k in node.keywords:
                e["kwargs"].setdefault(k.arg, where)
            shape = [len(node.args), sorted(k.arg for k in node.keywords), where]
            if not any(c[:2] == shape[:2] for c in e["calls"]):
                e["calls"].append(shape)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in calls and isinstance(node.ctx, ast.Load):
            name = _dotted(node)
            full = _canonical(name, aliases) if name else None
            if full is not None and full.count(".") <= 2:
                out.setdefault(full, {"line": f"{label}:{node.lineno}", "kwargs": {}, "calls": []})


def scan(folder: Path, label: str | None = None) -> dict[str, dict]:
    """Every nl/nisa/nki.collectives name the new-dialect files under `folder` use, with its call shapes."""
    out: dict[str, dict] = {}
    label = label or folder.name
    for p in sorted(folder.rglob("*.py")):
        scan_file(p, f"{label}/{p.relative_to(folder).as_posix()}", out)
    # a name whose attribute is itself used (nl.tile_size.pmax) also shows its parent exists
    for name in list(out):
        parent = name.rsplit(".", 1)[0]
        if parent.count(".") >= 1 and parent not in out and parent.split(".")[0] in ("nl", "nisa"):
            out[parent] = {"line": out[name]["line"], "kwargs": {}, "calls": []}
    return dict(sorted(out.items()))


def contradictions(used: dict[str, dict], version: str, table) -> list[str]:
    """What `used` (released code at `version`) does that the table says `version` lacks: a name the table
    calls absent or removed where the module's data is complete, a keyword it calls removed or absent from
    a certain signature, a required argument the code omits. `table` is nki_assist.api.table."""
    out = []
    for name, u in used.items():
        module = name.rsplit(".", 1)[0]
        st = table.status(name, version)
        if st == "removed" or (st == "unknown" and table.complete(module, version) and name.count(".") == 1):
            out.append(f"{name}: {st} at NKI {version}, used at {u['line']}")
            continue
        e = table.lookup(name, version)
        if e is None or e.params is None or not table.certain_signature(e, version):
            continue
        for kw, where in u["kwargs"].items():
            st = table.kwarg_status(name, kw, version)
            exact = (table.kwarg_fact(name, kw) or {}).get("api") == name
            # a migration-wide removal (ISA dtype=) is not certain for one call: the rule warns, no contradiction
            if st == "unknown" or (st == "removed" and exact):
                out.append(f"{name}({kw}=): {st} at NKI {version}, used at {where}")
        for npos, kws, where in u["calls"]:
            missing = [p.name for i, p in enumerate(e.params)
                       if p.required and p.name not in kws and not (p.kind in ("posonly", "pos") and i < npos)]
            if missing:
                out.append(f"{name}: requires {', '.join(missing)} at NKI {version}, called without at {where}")
    return out
