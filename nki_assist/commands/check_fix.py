"""The parts of `nki-assist check` beyond reporting: `--fix`/`--diff`, and source read from stdin."""

from __future__ import annotations

import difflib
import os
import sys
from dataclasses import dataclass, field

STDIN = "-"
STDIN_DEFAULT_NAME = "stdin.py"  # language detection and config when --stdin-filename is not given


@dataclass
class FixSummary:
    fixed: int = 0  # findings whose fix was applied (or would be, with --diff)
    files: int = 0  # files changed (or that would change)
    diffs: list[str] = field(default_factory=list)
    fixed_findings: list[tuple[str, str, str]] = field(default_factory=list)  # (path, rule, name) for --show-fixes
    fixed_source: bytes | None = None  # stdin with --fix: what goes to stdout


def unified_diff(path: str, before: str, after: str) -> str:
    name = os.path.normpath(path).replace(os.sep, "/")
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=f"a/{name}", tofile=f"b/{name}"))


def fixer(options, unsafe: bool, write: bool, summary: FixSummary):
    """A `check_file` replacement for `check_paths`: checks, and fixes what it may."""
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..check import selected_fixes
    from ..check import fix_text
    from ..check import check_file, decode_source

    def check_and_fix(path: str, opts):
        result = check_file(path, opts)
        if result.status != "checked" or not selected_fixes(result.findings, unsafe):
            return result
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            result.notes.append(f"{path}: not fixed: cannot read: {exc.strerror or exc}")
            return result
        text, problem, _, encoding = decode_source(data)
        if problem:  # writing back would replace the undecodable bytes
            result.notes.append(f"{path}: not fixed: {problem}")
            return result
        if encoding not in ("utf-8", "utf-8-sig"):  # written back as UTF-8, the cookie would lie
            result.notes.append(f"{path}: not fixed: encoded as {encoding} (only UTF-8 files are rewritten)")
            return result
        outcome = fix_text(path, text, opts, unsafe=unsafe)
        if not outcome.changed:
            return result
        if write:
            bom = "\ufeff" if data.startswith(b"\xef\xbb\xbf") else ""
            try:
                with open(path, "w", encoding="utf-8", newline="") as fh:
                    fh.write(bom + outcome.text)
            except OSError as exc:
                result.notes.append(f"{path}: not fixed: cannot write: {exc.strerror or exc}")
                return result
        else:
            summary.diffs.append(unified_diff(path, text, outcome.text))
        summary.fixed += len(outcome.fixed)
        summary.fixed_findings += [(path, f.rule, f.name) for f in outcome.fixed]
        summary.files += 1
        final = outcome.result
        final.notes = result.notes + final.notes
        return final

    return check_and_fix


def check_stdin(display: str, options, fix: bool, unsafe: bool, summary: FixSummary):
    """A CheckReport for source read from stdin, reported under `display`."""
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..check import CheckReport, check_text, decode_source

    data = sys.stdin.buffer.read()
    text, problem, refused, encoding = decode_source(data)
    engine_path = display if display != STDIN else STDIN_DEFAULT_NAME
    result = check_text(engine_path, text, options, refused=refused)
    if fix and encoding not in ("utf-8", "utf-8-sig"):
        problem = problem or f"encoded as {encoding}: not fixed (only UTF-8 source is rewritten)"
    if fix:
        summary.fixed_source = data  # unchanged unless a fix applies
    if problem:
        result.notes.insert(0, f"{display}: {problem}")
    elif fix:
        # deferred: a command imports the engine only when it runs (CLI start-up time)
        from ..check import fix_text

        outcome = fix_text(engine_path, text, options, unsafe=unsafe)
        if outcome.changed:
            summary.fixed, summary.files = len(outcome.fixed), 1
            summary.fixed_findings = [(display, f.rule, f.name) for f in outcome.fixed]
            summary.diffs.append(unified_diff(display, text, outcome.text))
            result = outcome.result
            summary.fixed_source = ("\ufeff" if data.startswith(b"\xef\xbb\xbf") else "").encode() + \
                outcome.text.encode("utf-8")
    if display == STDIN:
        result.findings = [f.model_copy(update={"file": STDIN}) for f in result.findings]
    result.path = display
    report = CheckReport(target=options.target)
    report.add(result)
    return report.finish()


def fixable_hint(findings, fixing: bool, unsafe: bool) -> str | None:
    """`N findings fixable with --fix (M more with --unsafe-fixes)`, or None."""
    if fixing:
        return None
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..check import fix_applicability

    kinds = [fix_applicability(f) for f in findings]
    safe, risky = kinds.count("safe"), kinds.count("unsafe")
    if unsafe:
        safe, risky = safe + risky, 0
    if not safe and not risky:
        return None
    flag = "--fix --unsafe-fixes" if unsafe else "--fix"
    parts = [f"{safe} fixable with `{flag}`"] if safe else []
    if risky:
        parts.append(f"{risky} {'more ' if safe else ''}with `--fix --unsafe-fixes`")
    return "; ".join(parts) + " (preview with --diff)"
