"""Plain text: one `path:line:col: ID [severity] message` line per finding; no colour codes ever.

The coloured summary (`print_summary`) goes to stderr and only when the caller says stdout is a
terminal, so piped output stays grep-able.
"""

from __future__ import annotations

from ..check import fix_applicability


def finding_line(f) -> str:
    """`path:line:col: ID [severity] [*] message`; `[*]` (as in ruff) when `check --fix` fixes it. The
    marker follows the severity so that `ID [severity]` stays one greppable string."""
    where = f.file or "<input>"
    if f.line is not None:
        where += f":{f.line}"
        if f.column is not None:
            where += f":{f.column}"
    marker = " [*]" if fix_applicability(f) == "safe" else ""
    return f"{where}: {f.rule} [{f.severity.value}]{marker} {f.message}"


def statistics(report) -> str:
    """Count per rule, most frequent first (`--statistics`)."""

    # deferred: the registry (and pydantic) load only for --statistics
    from ..rules.registry import get

    # the severity each finding was reported at (config overrides and promotions included), not the rule's default;
    # a rule reported at several severities lists each
    reported: dict[str, dict[str, int]] = {}
    for f in report.findings:
        per = reported.setdefault(f.rule, {})
        per[f.severity.value] = per.get(f.severity.value, 0) + 1
    rows = []
    for rule, n in report.counts_by_rule().items():
        try:
            name = get(rule).name
        except KeyError:
            name = "?"
        sev = "/".join(s for s in ("error", "warning", "info") if s in reported.get(rule, {})) or "?"
        rows.append(f"{n:6d}  {rule:<8} {name:<40} [{sev}]")
    return "\n".join(rows)


def summary_line(report) -> str:
    by = report.counts_by_severity()
    n = len(report.findings)
    parts = [f"{n} finding{'s' if n != 1 else ''}"]
    if n:
        parts.append("(" + ", ".join(f"{v} {k}" for k, v in by.items() if v) + ")")
    parts.append(f"in {report.files_checked} file{'s' if report.files_checked != 1 else ''} checked")
    if report.files_skipped:
        parts.append(f"{report.files_skipped} skipped")
    if report.suppressed:
        parts.append(f"{len(report.suppressed)} suppressed")
    return ", ".join([" ".join(parts[:3])] + parts[3:]) + f"; target {report.target}."


def render(report, statistics_table: bool = False, snippets: bool = True) -> str:
    """ruff's full output: each finding with its source lines, then the statistics when asked, then
    `Found N findings (M fixable).` or `All checks passed!`. `snippets=False` is the concise form (one line per
    finding and the closing line)."""
    lines: list[str] = []
    if snippets:
        # deferred: snippets read the sources only for this format
        from .snippets import Sources, snippet

        sources = Sources()
        for f in report.findings:
            lines += [finding_line(f), *snippet(f, sources), ""]
    else:
        lines = [finding_line(f) for f in report.findings]
    if statistics_table and report.findings:
        lines += ([] if snippets else [""]) + [statistics(report), ""]
    elif report.findings and not snippets:
        lines.append("")
    lines.append(closing_line(report))
    return "\n".join(lines) + "\n"


def closing_line(report) -> str:
    """`Found N findings (M fixable).`, or `All checks passed!` when nothing was found in a complete run."""
    n = len(report.findings)
    if n:
        fixable = sum(1 for f in report.findings if fix_applicability(f) == "safe")
        return f"Found {n} finding{'s' if n != 1 else ''} ({fixable} fixable)."
    if report.incomplete or report.errors:
        return "No findings, but the run is incomplete (see the messages on stderr)."
    return "All checks passed!"


def print_summary(report, console=None) -> None:
    """A short coloured summary on stderr: notes, errors, counts (only for interactive use)."""
    from rich.console import Console
    from rich.markup import escape

    console = console or Console(stderr=True, highlight=False)
    for note in report.notes:
        console.print(f"[dim]note:[/] {escape(note)}", soft_wrap=True)
    for err in report.errors:
        console.print(f"[bold red]error:[/] {escape(err)}", soft_wrap=True)
    by = report.counts_by_severity()
    style = "bold red" if by["error"] else "yellow" if by["warning"] else "green"
    console.print(f"[{style}]{summary_line(report)}[/]", soft_wrap=True)
