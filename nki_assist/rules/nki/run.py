"""Entry point of the static NKI rules: run every registered check over one parsed file."""

from __future__ import annotations

import dataclasses
from functools import cache, partial

from ...api.hardware import Target
from ...findings import Finding, RelatedLocation, Severity
from ...parse.nki_model import NkiFile, NkiKernel
from ...project import apply_context, context_for
from ..registry import RuleSpec
from ..runner import Check, crash_message, findings_of, load_family
from .common import CHECKS, emit, release_walks

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI001", "nki-syntax-error", "unsupported-construct", Severity.ERROR,
             "Part of the file cannot be parsed (or a check could not analyse it); facts there are missing.",
             fix="Fix the syntax error; the checks skip the code that does not parse.",
             doc="""\
## What it finds
Code the tree-sitter parser cannot parse (a missing bracket, a stray operator). The finding sits on the first broken line. The rest of the file still gets checked. The same id, at `info` severity, also reports a check that crashed on this file: the other checks still ran. When Python itself cannot compile the file, the finding is one error at the line and column CPython reports (a duplicated docstring tail is an `unexpected indent` there, not wherever the tree-sitter parser lost track), and the rules that report something missing (NKI202, NKI203, NKI206, NKI402) skip the file: what they would call missing is usually the code that did not parse. When only nki-assist's parser fails on code Python accepts, the finding is an `info` saying facts are missing there.

## Why it matters on Trainium
The NKI compiler rejects the file outright, and every fact nki-assist extracts from the broken region (allocations, loops, shapes) is missing. So capacity and correctness checks are silent there, and that silence is not evidence that the code is fine.

## Example
```python
y = nl.multiply(x, 2.0 +)   # NKI001: cannot parse
```

## Fix
Fix the syntax error. Once the file parses, the other checks cover the whole file again.
"""),
]

__all__ = ["run_nki_rules", "rule_ids"]


@cache
def load_checks() -> None:
    """Import every rule module of this package once: each registers its checks (and lists its RULES)."""
    load_family(CHECKS, __name__.rpartition(".")[0], skip=("common", "run"))


def rule_ids() -> list[str]:
    load_checks()
    return sorted(CHECKS.rule_ids() | {"NKI001"})


# rules whose finding says something is missing (never read, no guard, no output, no max before): on a
# file Python cannot compile, the missing part is usually the code that did not parse
ABSENCE_RULES = frozenset({"NKI202", "NKI203", "NKI206", "NKI402"})
# rules that read Python's own parse of the file (pyflakes, the project index, the module's AST): silent when it
# does not compile
PYTHON_LEVEL_RULES = frozenset({"NKI002", "NKI003", "NKI004", "NKI213", "NKI214", "NKI215", "NKI216"})


def _syntax_findings(nf: NkiFile) -> list[Finding]:
    """One error where CPython stops; when only the tree-sitter grammar fails (Python compiles the file),
    one low-confidence info that facts are missing there."""
    if nf.python_syntax_error is not None:
        line, col, msg = nf.python_syntax_error
        f = emit("NKI001", nf, line, col, line, col + 1,
                 f"Syntax error: {msg} (where Python stops); the file cannot be imported. Checks skip the code "
                 f"that does not parse, and the rules that report something missing ({', '.join(sorted(ABSENCE_RULES))}) "
                 "skip this file.",
                 {"line": line, "column": col, "error": msg, "source": "python"})
        above = _line_above(nf, line) if msg == "unexpected indent" else None
        if above is not None:  # the defect is as often the line above, dedented out of the block this one is in
            f.related.append(RelatedLocation(file=nf.path or "", line=above,
                                             message="the statement above, indented less: was it dedented out of "
                                                     "its block, or is this line indented too far?"))
        return [f]
    if not nf.syntax_errors:
        return []
    line, col, msg = nf.syntax_errors[0]
    return [emit("NKI001", nf, line, col, line, col + 1,
                 f"nki-assist's parser could not read this code ({msg}) although Python compiles the file; facts "
                 "there are missing, so checks may be silent on it.",
                 {"line": line, "column": col, "error": msg, "source": "tree-sitter",
                  "places": len(nf.syntax_errors)},
                 severity=Severity.INFO, confidence="low", fix="Report this file to the nki-assist maintainers.")]


def _line_above(nf: NkiFile, line: int) -> int | None:
    """The nearest line above `line` that holds code, when it is indented less than `line`."""
    def indent(text: str) -> int:
        return len(text) - len(text.lstrip())

    here = nf.lines[line - 1] if 0 < line <= len(nf.lines) else ""
    for n in range(line - 1, 0, -1):
        text = nf.lines[n - 1]
        if text.strip() and not text.lstrip().startswith("#"):
            return n if indent(text) < indent(here) else None
    return None


def run_nki_rules(nki_file: NkiFile, target: Target) -> list[Finding]:
    """All static NKI findings for one file. A crashing check becomes an NKI001 note, never a raise."""
    if nki_file.project is None:  # parsed outside check: a one-file project (roles, call sites in the file)
        apply_context(nki_file, context_for(nki_file.path, "\n".join(nki_file.lines), None))
    load_checks()
    findings: list[Finding] = _syntax_findings(nki_file)

    def crashed(check: Check, exc: Exception) -> Finding:
        return emit("NKI001", nki_file, 1, 1, 1, 1, crash_message(check, exc),
                    {"check": check.name, "rules": list(check.rules), "exception": type(exc).__name__},
                    severity=Severity.INFO, fix="Report this file to the nki-assist maintainers.", confidence="low")

    parts = _kernel_parts(nki_file, target) if nki_file.from_cache else None
    found = CHECKS.run(nki_file, target, on_crash=crashed, parts=parts)
    if nki_file.python_syntax_error is not None:
        found = [f for f in found if f.rule not in ABSENCE_RULES]
    if nki_file.project is not None:
        nki_file.project.module.tree = None  # read by this run's pyflakes only; a kept file must not hold it
    release_walks(nki_file)  # the rules' shared walks of the tree: this run's only
    return findings + found


def _kernel_parts(nf: NkiFile, target: Target):
    """Per-kernel checks split into one part per kernel, each part's findings remembered on its kernel.

    Only for a file from a parse cache (the language server): an edit re-runs these checks for the
    kernels it re-extracted, and the other kernels' findings come back unchanged. A cold check runs each
    check once over the file; the incremental tests compare the two."""
    views: dict[int, NkiFile] = {}
    done: list[dict] = []  # per kernel: check -> its findings (or its exception) for that kernel

    def parts(check: Check):
        if not check.per_kernel:
            return None
        if not done:  # once per run: the key holds the target, whose hash is not cheap
            # what a per-kernel check reads besides the kernel's facts (tests/rules/test_check_scope.py)
            context = ("findings", target, nf.path, nf.dialect)
            done.extend(k.memo((*context, k.helper, k.decorator, k.role, repr(k.context)), dict)
                        for k in nf.kernels)
        return [partial(_kernel_part, check, k, results, nf, target, views)
                for k, results in zip(nf.kernels, done)]

    return parts


def _kernel_part(check: Check, k: NkiKernel, results: dict, nf: NkiFile, target: Target,
                 views: dict[int, NkiFile]) -> list[Finding]:
    try:
        found = results[check.fn]
    except KeyError:
        view = views.get(id(k))
        if view is None:
            view = views[id(k)] = dataclasses.replace(nf, kernels=[k])
        try:
            found = findings_of(check.fn(view, target))
        except Exception as exc:  # remembered too: the crash recurs for the same kernel
            found = exc.with_traceback(None)
        results[check.fn] = found
    if isinstance(found, Exception):
        raise found
    return found


load_checks()  # importing the entry point loads the family: CHECKS is complete for whoever reads it
