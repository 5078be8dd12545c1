"""`--save-spec DIR`: a port spec per kernel and shape family, from what the run observed.

A family is one kernel with the same argument kinds, dtypes, ranks and scalar values; its launches become
the spec's [[sizes]]. Dimensions that are equal in every launch of the family share a symbol (named after
the first argument and axis where it appears: `a_vec0`). The reference comes from the program's own
comparison (compare.py) when the other operand is a plain NumPy expression of the kernel's arguments, or a
call of a function of the comparing file on exactly the kernel's arguments: its source is written beside the
spec as `<port>_reference.py`. Otherwise the spec names no reference and says so in a comment.
"""

from __future__ import annotations

import ast
import builtins
import json
import os
import re
from pathlib import Path

from .compare import launch_key
from .record import Launch

MAX_SIZES = 8
_KEEP_IMPORTS = ("numpy", "math", "torch", "scipy", "functools", "itertools")


def _family(x: Launch) -> tuple:
    return (x.file, x.kernel, tuple((a.name, a.kind, a.dtype, len(a.shape or ()), repr(a.value) if a.kind != "array"
                                     else None) for a in x.args))


def _symbols(launches: list[Launch]) -> tuple[dict[tuple[int, int], str], list[dict[str, int]]]:
    """(arg, axis) -> symbol, and one binding per distinct shape."""
    first = launches[0]
    slots = [(i, ax) for i, a in enumerate(first.args) if a.kind == "array" for ax in range(len(a.shape or ()))]
    shapes = []
    for x in launches:
        vec = tuple(x.args[i].shape[ax] for i, ax in slots)
        if vec not in shapes:
            shapes.append(vec)
    names: dict[tuple[int, int], str] = {}
    columns: dict[tuple, str] = {}
    for k, (i, ax) in enumerate(slots):
        col = tuple(s[k] for s in shapes)
        if col not in columns:
            columns[col] = re.sub(r"\W", "_", f"{first.args[i].name}{ax}")
        names[(i, ax)] = columns[col]
    bindings = []
    for s in shapes[:MAX_SIZES]:
        b: dict[str, int] = {}
        for k, slot in enumerate(slots):
            b[names[slot]] = s[k]
        bindings.append(b)
    return names, bindings


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value))


def _tree(path: str):
    try:
        return ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None


def _assigned_value(tree, name: str, line: int):
    """The value last assigned to `name` before `line` (a plain `name = expr`)."""
    best = None
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and node.lineno < line and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name):
            if best is None or node.lineno > best.lineno:
                best = node
    return best.value if best is not None else None


class _Rename(ast.NodeTransformer):
    def __init__(self, mapping):
        self.mapping = mapping

    def visit_Name(self, node):
        if node.id in self.mapping:
            return ast.copy_location(ast.Name(self.mapping[node.id], node.ctx), node)
        return node


def _imports(tree) -> list[str]:
    out = []
    for node in tree.body:
        if isinstance(node, ast.Import) and all(a.name.split(".")[0] in _KEEP_IMPORTS for a in node.names):
            out.append(ast.unparse(node))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in _KEEP_IMPORTS:
            out.append(ast.unparse(node))
    return out or ["import numpy as np"]


def _self_contained(fdef: ast.FunctionDef, imports: list[str]) -> bool:
    """Every name the function reads is its own (a parameter, a local), an import kept, or a builtin."""
    known = {a.arg for a in fdef.args.args + fdef.args.kwonlyargs + fdef.args.posonlyargs}
    known |= {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for line in imports:
        for node in ast.walk(ast.parse(line)):
            if isinstance(node, ast.alias):
                known.add((node.asname or node.name).split(".")[0])
    used = {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return used <= known | set(dir(builtins))


def reference_source(x: Launch, comparisons: list[dict]) -> str | None:
    """Python source of `reference(<kernel params>)` from the program's comparison, or None."""
    key = launch_key(x)
    params = [a.name for a in x.args]
    exprs = {a.expr: a.name for a in x.args if a.expr and a.expr.isidentifier()}
    for c in comparisons:
        if c.get("key") != key or not c.get("other"):
            continue
        tree = _tree(c["file"])
        if tree is None:
            continue
        try:
            node = ast.parse(c["other"], mode="eval").body
        except SyntaxError:
            continue
        if isinstance(node, ast.Name) and node.id not in exprs:
            node = _assigned_value(tree, node.id, c["line"]) or node
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        header = "\n".join(_imports(tree))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and [ast.unparse(a) for a in node.args] == [a.expr for a in x.args if a.kind == "array"]):
            fdef = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == node.func.id), None)
            if fdef is not None and _self_contained(fdef, _imports(tree)):
                body = ast.unparse(fdef)
                call = ", ".join(params)
                return (f"{header}\n\n\n{body}\n\n\ndef reference({call}):\n"
                        f"    return {fdef.name}({', '.join(a.name for a in x.args if a.kind == 'array')})\n")
        if used and used <= set(exprs) | {"np", "numpy", "math"}:
            expr = ast.unparse(_Rename(exprs).visit(node))
            return f"{header}\n\n\ndef reference({', '.join(params)}):\n    return {expr}\n"
    return None


def _spec_text(name: str, x: Launch, names, bindings, out_dir: Path, target: str, ref_file: str | None) -> str:
    nki = os.path.relpath(x.file, out_dir)
    lines = [f"# Written by `nki-assist run --save-spec` from {len(bindings)} observed shape(s) of {x.kernel}.",
             "[port]", f"name = {_toml(name)}", f"nki = {_toml(nki)}", f"nki_kernel = {_toml(x.kernel)}",
             f"target = {_toml(target)}"]
    if x.grid:
        lines.append(f"grid = [{', '.join(str(int(g)) for g in x.grid)}]")
    if ref_file:
        lines.append(f"reference = {_toml(ref_file + ':reference')}")
    else:
        lines.append("# reference = \"reference.py:function\"  # the program's comparison was not a plain NumPy call")
    lines += ["", "[inputs]"]
    for i, a in enumerate(x.args):
        kw = ", keyword = true" if a.keyword else ""
        if a.kind == "array":
            shape = ", ".join(_toml(names[(i, ax)]) for ax in range(len(a.shape or ())))
            lines.append(f"{a.name} = {{ shape = [{shape}], dtype = {_toml(a.dtype)}{kw} }}")
        else:
            lines.append(f"{a.name} = {{ value = {_toml(a.value)}{kw} }}")
    for k, b in enumerate(bindings, 1):
        lines += ["", "[[sizes]]", f"name = \"observed{k}\""] + [f"{s} = {v}" for s, v in b.items()]
    return "\n".join(lines) + "\n"


def save_specs(launches: list[Launch], comparisons: list[dict], out_dir: str, target: str) -> list[str]:
    """Write one spec per family into out_dir; returns the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    families: dict[tuple, list[Launch]] = {}
    for x in launches:
        if x.status == "tool-limit" or any(a.kind == "other" or (a.kind == "scalar" and a.value is None)
                                           for a in x.args):
            continue  # an argument a spec cannot express, or a launch the simulator could not run
        families.setdefault(_family(x), []).append(x)
    written: list[str] = []
    used: dict[str, int] = {}
    for fam in families.values():
        x = fam[0]
        base = re.sub(r"\W", "_", x.kernel.split(".")[-1])
        used[base] = used.get(base, 0) + 1
        name = base if used[base] == 1 else f"{base}_{used[base]}"
        names, bindings = _symbols(fam)
        ref_src = next((s for s in (reference_source(y, comparisons) for y in fam) if s), None)
        ref_file = None
        if ref_src:
            ref_file = f"{name}_reference.py"
            (out / ref_file).write_text(f"# Written by `nki-assist run --save-spec`: the program's own comparison.\n"
                                        f"{ref_src}", encoding="utf-8")
        path = out / f"{name}.toml"
        path.write_text(_spec_text(name, x, names, bindings, out, target, ref_file), encoding="utf-8")
        written.append(str(path))
    return written
