"""GitHub Actions workflow commands: one `::error file=...,line=...::message` line per finding, so a
CI step's findings show as annotations on the pull request's diff."""

from __future__ import annotations

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(f) -> str:
    props = []
    if f.file:
        props.append(f"file={_prop(f.file)}")
    if f.line is not None:
        props.append(f"line={f.line}")
        if f.end_line is not None and f.end_line != f.line:
            props.append(f"endLine={f.end_line}")
        elif f.column is not None:  # GitHub takes columns only on single-line annotations
            props.append(f"col={f.column}")
            if f.end_column is not None:
                props.append(f"endColumn={f.end_column}")
    props.append(f"title={_prop(f'{f.rule} {f.name}')}")
    text = f.message + (f"\nFix: {f.fix}" if f.fix else "")
    return f"::{LEVEL[f.severity.value]} {','.join(props)}::{_data(text)}"


def render(report, **_) -> str:
    lines = [annotation(f) for f in report.findings]
    lines += [f"::warning title=nki-assist::{_data(e)}" for e in report.errors]
    return "\n".join(lines) + ("\n" if lines else "")
