"""Python-level correctness of kernel files through pyflakes (undefined names, redefinitions) and the
project model (a name imported from a module of the tree that does not define it).

These are NameErrors / ImportErrors on the code path that runs them: the kernel fails at trace time, or
worse, only on the branch a test never took."""

from __future__ import annotations

import ast

from pyflakes import checker, messages

from ..hardware import Target
from ..parse.nki_model import NkiFile
from .nki_common import check, emit

_UNDEFINED = (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport)
_REDEFINED = (messages.RedefinedWhileUnused,)


def pyflakes_messages(nf: NkiFile) -> list:
    """pyflakes' messages for the file (none when Python cannot compile it: NKI001 reports that)."""
    if nf.python_syntax_error is not None:
        return []
    text = "\n".join(nf.lines)
    try:
        tree = ast.parse(text, filename=nf.path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    w = checker.Checker(tree, filename=nf.path)
    return sorted(w.messages, key=lambda m: (m.lineno, getattr(m, "col", 0)))


def _is_definition(nf: NkiFile, line: int) -> bool:
    text = nf.lines[line - 1].lstrip() if 0 < line <= len(nf.lines) else ""
    return text.startswith(("def ", "async def ", "class ", "@"))


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
