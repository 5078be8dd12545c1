"""Python-level correctness of kernel files through pyflakes (undefined names, redefinitions) and the
project model (a name imported from a module of the tree that does not define it).

These are NameErrors / ImportErrors on the code path that runs them: the kernel fails at trace time, or
worse, only on the branch a test never took."""

from __future__ import annotations

import ast

from pyflakes import messages

from ...api.hardware import Target
from ...findings import Severity
from ...parse.nki_model import NkiFile
from ...project.incremental import flakes
from ..registry import RuleSpec
from .common import check, emit, module_tree, per_text

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI002", "undefined-name", "unsupported-construct", Severity.ERROR,
             "A name is read that is neither defined nor imported where it is used (pyflakes).",
             fix="Define or import the name, or use the name that was meant.",
             doc="""\
## What it finds
A name the code reads that no assignment, parameter, import or builtin defines in that scope, as pyflakes reports it (`undefined name`, `local variable referenced before assignment`, a name listed in `__all__` that does not exist). Checked on every NKI file that Python can compile.

## Why it matters on Trainium
NKI kernels are Python traced at compile time: the line raises `NameError` when the tracer reaches it. In a branch that only some shapes or flags take (a quantised path, a masking option), the kernel works in every test and fails in production on the first call that takes the branch.

## Example
```python
def attention(q, k, v, mask_active):
    return _attend(q, k, v, attention_mask=mask)   # NKI002: `mask` is not defined
```

## Fix
Use the name that was meant (`mask_active` above), or import the missing one.
"""),
    RuleSpec("NKI003", "imported-name-missing", "unsupported-construct", Severity.ERROR,
             "`from m import x` names a module of the checked tree that does not define `x`.",
             fix="Import the name the module defines, or add it to that module.",
             doc="""\
## What it finds
`from pkg.mod import name` (relative imports included) where `pkg.mod` is one of the files checked together (the project model) and defines no `name`: no function, class, assignment or import of that name at its top level (or under its `if`/`try` blocks). Modules with a `*` import, modules that do not compile and submodules present on disk are not judged.

## Why it matters on Trainium
Importing the kernel file raises `ImportError` before any kernel runs, typically after a helper was renamed or moved in a refactor.

## Example
```python
from .helpers import load_tile   # NKI003: helpers.py defines load_tiles, not load_tile
```

## Fix
Import the name the module defines, or restore the name in the module.
"""),
    RuleSpec("NKI004", "redefined-unused-name", "unsupported-construct", Severity.WARNING,
             "A function or class is defined again before the first definition is used (pyflakes).",
             fix="Rename or delete one of the two definitions.", emits=(Severity.INFO,),
             doc="""\
## What it finds
A function or class defined again (by `def`, `class` or a decorated definition) before anything read the first definition, as pyflakes reports it (`redefinition of unused ...`). A repeated import is harmless and not reported. A definition that replaces an unused import of the same name (a local class overriding the imported one) is `info`: the import is dead lint, and no edited copy of code is left unused.

## Why it matters on Trainium
Every call reaches the second definition: the first is dead code. In kernel files this is usually a copied helper that was edited in one copy (a tile size, a mask) while the callers run the other.

## Example
```python
def load_block(x, i): ...    # the version with the tail mask
def load_block(x, i): ...    # NKI004: redefinition; this one runs
```

## Fix
Give the two functions different names, or delete the stale one.
"""),
]

_UNDEFINED = (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport)
_REDEFINED = (messages.RedefinedWhileUnused,)


def pyflakes_messages(nf: NkiFile) -> list:
    """pyflakes' messages for the file (none when Python cannot compile it: NKI001 reports that), computed once
    per file text for the checks that read them (NKI002/NKI004, NKI214)."""
    if nf.python_syntax_error is not None:
        return []
    return per_text(nf, "_pyflakes", _pyflakes_messages, nf.project)


def _pyflakes_messages(nf: NkiFile) -> list:
    tree = module_tree(nf)
    if tree is None:
        return []
    memo = nf.project.memo if nf.project is not None else None
    msgs = memo.pyflakes(tree, nf.path) if memo is not None else flakes(tree, nf.path)
    if any(isinstance(m, _UNDEFINED) for m in msgs):  # rare: only then find the annotations (a full walk)
        lazy = _lazy_annotations(tree)
        msgs = [m for m in msgs if not (isinstance(m, _UNDEFINED) and _within(m, lazy))]
    return sorted(msgs, key=lambda m: (m.lineno, getattr(m, "col", 0)))


def _lazy_annotations(tree: ast.Module) -> list[ast.AST]:
    """Annotations Python never evaluates at run time: string ones, and all of them under
    `from __future__ import annotations`. An undefined name there raises nothing."""
    postponed = any(isinstance(st, ast.ImportFrom) and st.module == "__future__" and
                    any(a.name == "annotations" for a in st.names) for st in tree.body)
    out = []
    for node in ast.walk(tree):
        anns = []
        if isinstance(node, ast.arg):
            anns = [node.annotation]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            anns = [node.returns]
        elif isinstance(node, ast.AnnAssign):
            anns = [node.annotation]
        for a in anns:
            if a is not None and (postponed or isinstance(a, ast.Constant)):
                out.append(a)
    return out


def _within(m, nodes: list[ast.AST]) -> bool:
    line, col = m.lineno, getattr(m, "col", 0)
    for n in nodes:
        if isinstance(n, ast.Constant) and n.lineno <= line <= (n.end_lineno or n.lineno):
            return True  # pyflakes reports a string annotation's names at the string
        if (n.lineno, n.col_offset) <= (line, col) <= (n.end_lineno or n.lineno, n.end_col_offset or col):
            return True
    return False


def _is_definition(nf: NkiFile, line: int) -> bool:
    text = nf.lines[line - 1].lstrip() if 0 < line <= len(nf.lines) else ""
    return text.startswith(("def ", "async def ", "class ", "@"))


def _is_import(nf: NkiFile, line: int) -> bool:
    text = nf.lines[line - 1].lstrip() if 0 < line <= len(nf.lines) else ""
    return text.startswith(("import ", "from "))


@check("NKI002", "NKI004", per_file=True)
def python_names(nf: NkiFile, t: Target):
    for m in pyflakes_messages(nf):
        line, col = m.lineno, getattr(m, "col", 0) + 1
        name = m.message_args[0] if m.message_args else ""
        if isinstance(m, _UNDEFINED):
            yield emit("NKI002", nf, line, col, line, col + len(str(name)),
                       f"`{name}` is not defined here: running this line raises NameError "
                       f"({m.message % m.message_args}).",
                       {"name": name, "pyflakes": type(m).__name__},
                       fix=f"Define or import `{name}`, or use the name that was meant.")
        elif isinstance(m, _REDEFINED) and _is_definition(nf, line):  # a repeated import is harmless
            first = m.message_args[1] if len(m.message_args) > 1 else None
            if isinstance(first, int) and _is_import(nf, first):
                # a local definition that replaces an unused import of the same name is an override, and the
                # import is dead lint: nothing edited in one copy runs in the other
                yield emit("NKI004", nf, line, col, line, col + len(str(name)),
                           f"`{name}` is defined here over the import on line {first}, which nothing read first: "
                           "the import is unused (this definition is the one that runs).",
                           {"name": name, "first_line": first, "pyflakes": type(m).__name__, "shadows_import": True},
                           severity=Severity.INFO, fix=f"Drop the unused import of `{name}` on line {first}.")
                continue
            yield emit("NKI004", nf, line, col, line, col + len(str(name)),
                       f"`{name}` is defined again here before its definition on line {first} was used: the "
                       "first one is dead code, and calls run this one.",
                       {"name": name, "first_line": first, "pyflakes": type(m).__name__},
                       fix=f"Rename one of the two `{name}` definitions, or delete the one that is not meant.")


@check("NKI003", per_file=True)
def imported_names_exist(nf: NkiFile, t: Target):
    ctx = nf.project
    if ctx is None:
        return
    for alias, line, module in ctx.missing_imports:
        pos = nf.import_lines.get(alias)
        col, end_col = (pos[1], pos[2]) if pos else (1, 1)
        yield emit("NKI003", nf, line, col, line, end_col,
                   f"`{alias}` is imported from `{module}`, which does not define it: importing this file raises "
                   "ImportError.",
                   {"name": alias, "module": module},
                   fix=f"Import the name `{module}` defines, or add `{alias}` to `{module}`.")
