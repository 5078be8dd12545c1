"""Go to definition and find references for tiles and kernels.

A tile's definition is where the kernel allocates it (or binds it: a parameter, an assignment); its
references are the uses of that name inside the same kernel. A kernel's definition is its `def` in
this document or another open one; its references are the uses of its name in every open NKI
document. Names are found with Python's tokenizer (strings and comments are not uses); a document
that does not tokenize (half-typed) falls back to a word search outside `#` comments.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from .hover import _get, word_at


@dataclass(frozen=True)
class Place:
    """1-based line, 1-based character columns [col, end_col)."""

    line: int
    col: int
    end_col: int


def name_places(text: str) -> dict[str, list[Place]]:
    """Every identifier of `text` -> where it occurs (code only)."""
    out: dict[str, list[Place]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NAME:
                (line, col), (_, end) = tok.start, tok.end
                out.setdefault(tok.string, []).append(Place(line, col + 1, end + 1))
        return out
    except (tokenize.TokenError, IndentationError, SyntaxError):
        out.clear()
    for n, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        for m in re.finditer(r"[A-Za-z_][A-Za-z0-9_]*", code):
            out.setdefault(m.group(), []).append(Place(n, m.start() + 1, m.end() + 1))
    return out


def _kernels(nki_file: Any) -> list[Any]:
    return list(_get(nki_file, "kernels") or []) if nki_file is not None else []


def kernel_at(nki_file: Any, line: int) -> Any:
    """The innermost kernel whose lines contain `line`."""
    inside = [k for k in _kernels(nki_file) if (_get(k, "line") or 0) <= line <= (_get(k, "end_line") or 0)]
    return max(inside, key=lambda k: _get(k, "line")) if inside else None


def kernel_named(nki_file: Any, name: str) -> Any:
    return next((k for k in _kernels(nki_file) if _get(k, "name") == name), None)


def kernel_def_place(kernel: Any, lines: Sequence[str]) -> Place:
    line, name = _get(kernel, "line"), _get(kernel, "name")
    text = lines[line - 1] if 1 <= line <= len(lines) else ""
    at = text.find(f"def {name}")
    col = at + len("def ") + 1 if at >= 0 else (_get(kernel, "col") or 1)
    return Place(line, col, col + len(name))


def tile_definitions(kernel: Any, name: str, places: Iterable[Place]) -> list[Place]:
    """Where `name` is bound in `kernel`: its allocations (at the name on their line), assignments,
    and the parameter of that name."""
    k0, k1 = _get(kernel, "line") or 0, _get(kernel, "end_line") or 0
    lines_bound = set()
    for alloc in _get(kernel, "allocations") or []:
        if _get(alloc, "name") == name and _get(alloc, "line"):
            lines_bound.add(_get(alloc, "line"))
    for assignment in _get(kernel, "assignments") or []:
        if (_get(assignment, "name") == name and _get(assignment, "line") and _get(assignment, "op") == "="
                and not _get(assignment, "subscript")):  # `t[...] = x` writes into t, it does not bind it
            lines_bound.add(_get(assignment, "line"))
    out = []
    for param in _get(kernel, "params") or []:
        if _get(param, "name") == name:
            col = _get(param, "col") or 1
            out.append(Place(_get(param, "line"), col, col + len(name)))
    in_kernel = [p for p in places if k0 <= p.line <= k1]
    for line in sorted(lines_bound):
        first = next((p for p in in_kernel if p.line == line), None)  # the bound name comes first on its line
        if first is not None:
            out.append(first)
    return out


@dataclass
class Target:
    """What the name under the cursor is: a kernel (file-wide / cross-file) or a tile of one kernel."""

    name: str
    kernel: Any  # the kernel named `name` (kind "kernel") or the kernel containing the tile
    kind: str  # "kernel" | "tile"


def resolve(nki_file: Any, places: dict[str, list[Place]], line: int, col: int, line_text: str,
            other_kernel_names: set[str]) -> Target | None:
    word = word_at(line_text, col)
    if not word or not any(p.line == line and p.col <= col <= p.end_col for p in places.get(word, [])):
        return None  # in a string or a comment
    own = kernel_named(nki_file, word)
    if own is not None or word in other_kernel_names:
        return Target(word, own, "kernel")
    kernel = kernel_at(nki_file, line)
    if kernel is None:
        return None
    if tile_definitions(kernel, word, places.get(word, [])):
        return Target(word, kernel, "tile")
    return None


def tile_references(target: Target, places: dict[str, list[Place]]) -> list[Place]:
    k0, k1 = _get(target.kernel, "line") or 0, _get(target.kernel, "end_line") or 0
    return [p for p in places.get(target.name, []) if k0 <= p.line <= k1]


# ---- across the workspace: the project model (lsp_server/project_model.py) ---------------------------------
# A name resolves as the project resolves calls (nki_assist/project/model.py): the enclosing def's scope chain,
# then the module, then its imports (aliases and re-exports included). A same-named def in a module that the
# file does not import resolves nowhere.

_DOTTED_BEFORE = re.compile(r"((?:[A-Za-z_][A-Za-z0-9_]*\s*\.\s*)*)$")


class _ModuleScope:
    qualname = "<module>"  # no def of the module is named so: the chain tries the module's own defs, then imports
    in_class = None


def dotted_at(line_text: str, place: Place) -> str:
    """The dotted name the identifier at `place` ends (`K.my_kernel` for `my_kernel` in `K.my_kernel(x)`)."""
    before = _DOTTED_BEFORE.search(line_text[max(0, place.col - 1 - 256):place.col - 1]).group(1)  # bounded: hover.WINDOW
    return re.sub(r"\s+", "", before) + line_text[place.col - 1:place.end_col - 1]


def function_key(project: Any, path: str, line: int, dotted: str) -> str | None:
    """The project key ("module:qualname") of the function `dotted`, written on `line` of the module at
    `path`, names; None when it names none (or the name is a parameter or local of the enclosing def)."""
    m = project.by_path.get(path)
    if m is None or not dotted:
        return None
    inside = [f for f in m.functions.values() if f.line <= line <= f.end_line]
    scope = max(inside, key=lambda f: f.line) if inside else _ModuleScope()
    head = dotted.partition(".")[0]
    if inside and head in scope.params and "." not in dotted:
        return None
    for alias, at in m.import_lines.items():  # `from kernels import my_kernel as mk`: the imported name itself
        target = m.imports.get(alias, "")
        if at == line and target.rpartition(".")[2] == dotted:
            hit = project._function_at(target)
            if hit is not None:
                return hit.key
    return project._resolve(m, scope, dotted)


def function_place(project: Any, key: str, text_of) -> tuple[str, Place] | None:
    """(path, place of the name in its `def`) of the function `key`; `text_of(path)` reads the file."""
    f = project.functions.get(key)
    m = project.modules.get(f.module) if f is not None else None
    text = text_of(m.path) if m is not None else None
    if text is None:
        return None
    lines = text.splitlines()
    return m.path, kernel_def_place({"line": f.line, "name": f.name}, lines)


def function_references(project: Any, key: str, text_of, with_def: bool) -> list[tuple[str, Place]]:
    """Every place in the workspace whose name resolves to the function `key`: calls, other uses (a kernel
    passed to a launcher), imports of it, and (`with_def`) its `def`. Only modules that define the function,
    import it or its module, or hold a call the project resolved to it are read."""
    f = project.functions.get(key)
    if f is None:
        return []
    home = project.modules.get(f.module)
    declared = function_place(project, key, text_of)
    out: list[tuple[str, Place]] = []
    for m in project.modules.values():
        names = {f.name} if m is home else set()
        for alias, target in m.imports.items():
            if target == home.name or home.name.endswith("." + target) or target.endswith("." + home.name):
                names.add(f.name)  # `import kernels` / `kernels.my_kernel`
            elif target.rpartition(".")[2] == f.name:  # `from kernels import my_kernel as mk`
                names.update((alias, f.name))
        callees = [c.callee for g in m.functions.values() for c in g.calls if c.resolved == key]
        if callees:
            names.add(f.name)
            names.update(callee.rpartition(".")[2] for callee in callees)
        if not names:
            continue
        text = text_of(m.path)
        if text is None:
            continue
        lines, places = text.splitlines(), name_places(text)
        for name in sorted(names):
            for p in places.get(name, []):
                if not 1 <= p.line <= len(lines):
                    continue
                if declared is not None and (m.path, p) == declared:
                    if with_def:
                        out.append((m.path, p))
                    continue
                if function_key(project, m.path, p.line, dotted_at(lines[p.line - 1], p)) == key:
                    out.append((m.path, p))
    return sorted(set(out), key=lambda x: (x[0], x[1].line, x[1].col))
