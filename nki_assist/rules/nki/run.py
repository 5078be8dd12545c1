"""Entry point of the static NKI rules: run every registered check over one parsed file."""

from __future__ import annotations

import dataclasses
from functools import partial

from ...findings import Finding, RelatedLocation, Severity
from ...api.hardware import Target
from ...parse.nki_model import NkiFile, NkiKernel
from ...project import apply_context, context_for
from . import api_idioms as nki_api_idioms, api_surface as nki_api_surface, dialect as nki_dialect, dim_roles as nki_dim_roles, dropout as nki_dropout, loopvars as nki_loopvars, memory as nki_memory, migration as nki_migration, numerics as nki_numerics, python as nki_python, reductions as nki_reductions, slips as nki_slips, tails as nki_tails, utilization as nki_utilization, windows as nki_windows
from . import generation as nki_generation, kernel_io as nki_kernel_io  # noqa: F401
from . import api_forms as nki_api_forms  # noqa: F401  (NKI517-NKI519)
from . import partition_broadcast as nki_partition_broadcast, self_compare as nki_self_compare, target_gates as nki_target_gates, tile_rank as nki_tile_rank  # noqa: F401  (NKI112, NKI113, NKI216, NKI523)
from . import int_shift as nki_int_shift, tile_values as nki_tile_values, traced_python as nki_traced_python  # noqa: F401  (NKI524-NKI527; NKI106/NKI514 widened)
from .common import CHECKS, emit, release_walks
from ..runner import Check, crash_message, findings_of

__all__ = ["run_nki_rules", "rule_ids"]


def rule_ids() -> list[str]:
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
