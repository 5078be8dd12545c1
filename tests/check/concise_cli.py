"""`check`'s CLI as the older tests read it: the concise format (one line per finding) without the closing
`Found N findings` / `All checks passed!` line, which tests/check/test_check_text_output.py covers."""

from __future__ import annotations

CLOSING = ("Found ", "All checks passed!", "No findings, but the run is incomplete")


def concise(argv) -> list[str]:
    """`argv` with `--format concise` unless it names a format."""
    argv = list(argv)
    if not any(a in ("--format", "--output-format") or a.startswith(("--format=", "--output-format="))
               for a in argv):
        argv += ["--format", "concise"]
    return argv


def findings_only(out: str) -> str:
    """Concise output less its closing line (and the blank line before it)."""
    lines = out.split("\n")
    if len(lines) >= 2 and lines[-1] == "" and lines[-2].startswith(CLOSING):
        lines = lines[:-2]
        if lines and lines[-1] == "":
            lines = lines[:-1]
        return "\n".join(lines) + ("\n" if lines else "")
    return out
