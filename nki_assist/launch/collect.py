"""Launch records -> one finding per (rule, kernel line) across every launch, and a per-kernel table.

A defect that shows in 40 launches of a test matrix is one finding: its message is the first launch's, its
evidence counts the launches, names the first failing arguments and the call site that passed them
(also a related location, so the editor links the kernel line to the test line). Tool limits (SIM117, and
SIM115 for an API the simulator lacks) stay `info`/`warning` and are counted apart from defects.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..findings import Finding, RelatedLocation
from .record import Launch

TOOL_LIMIT_RULES = ("SIM117", "SIM115")


def args_text(launch: Launch) -> str:
    parts = []
    for a in launch.args:
        if a.kind == "array":
            parts.append(f"{a.name}: {a.dtype}[{', '.join(map(str, a.shape or []))}]")
        else:
            parts.append(f"{a.name}={a.value!r}")
    return ", ".join(parts)


def display_path(path: str | None, cwd: str) -> str | None:
    if not path:
        return path
    try:
        rel = os.path.relpath(path, cwd)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


@dataclass
class KernelRow:
    kernel: str
    file: str
    launches: int = 0
    ok: int = 0
    failed: int = 0
    tool_limits: int = 0
    findings: set = field(default_factory=set)  # (rule, line)
    estimated_us: list = field(default_factory=list)


def dedupe(launches: list[Launch], cwd: str) -> list[Finding]:
    merged: dict[tuple, Finding] = {}
    counts: dict[tuple, int] = {}
    for lau in launches:
        seen_here: set[tuple] = set()
        for raw in lau.findings:
            f = Finding.model_validate(raw)
            key = (f.rule, f.file or lau.file, f.line)
            if key in seen_here:
                continue
            seen_here.add(key)
            counts[key] = counts.get(key, 0) + 1
            if key in merged:
                continue
            ev = dict(f.evidence)
            ev.update({"kernel": lau.kernel, "first_arguments": args_text(lau), "api": lau.api})
            related = [r.model_copy(update={"file": display_path(r.file, cwd)}) for r in f.related]
            if lau.call_file and lau.call_line:
                ev["first_call_site"] = f"{display_path(lau.call_file, cwd)}:{lau.call_line}"
                related.append(RelatedLocation(file=display_path(lau.call_file, cwd), line=lau.call_line,
                                               message=f"launched here with {args_text(lau)}"))
            merged[key] = f.model_copy(update={"file": display_path(f.file or lau.file, cwd), "evidence": ev,
                                               "related": related})
    out = []
    for key, f in merged.items():
        n = counts[key]
        ev = dict(f.evidence)
        ev["launches"] = n
        msg = f.message if n == 1 else f"{f.message} (in {n} launches; first with {ev['first_arguments']})"
        out.append(f.model_copy(update={"evidence": ev, "message": msg}))
    return out


def host_limits(records: list[dict], cwd: str) -> list[Finding]:
    """An NKI API the simulator does not provide, called by the program's host code (outside a kernel)."""
    from ..rules.registry import get  # deferred: the rule registry is needed only when this happened

    out = []
    for r in records:
        f = get("SIM117").finding(
            f"the program called {r.get('api')} outside a kernel; the simulator's NKI modules do not provide it, "
            "so the program stopped here (a tool limit, not a defect of the program)", file=display_path(
                r.get("file"), cwd), line=r.get("line"), source="simulation", evidence={"api": r.get("api")})
        out.append(f)
    return out


def kernel_rows(launches: list[Launch], cwd: str) -> list[KernelRow]:
    rows: dict[tuple, KernelRow] = {}
    for lau in launches:
        row = rows.setdefault((lau.file, lau.kernel), KernelRow(lau.kernel, display_path(lau.file, cwd)))
        row.launches += 1
        if lau.status == "ok":
            row.ok += 1
        elif lau.status == "tool-limit":
            row.tool_limits += 1
        else:
            row.failed += 1
        for raw in lau.findings:
            row.findings.add((raw.get("rule"), raw.get("line")))
        if lau.cost and lau.cost.get("estimated_us") is not None:
            row.estimated_us.append(lau.cost["estimated_us"])
    return list(rows.values())


def is_tool_limit(f: Finding) -> bool:
    return f.rule in TOOL_LIMIT_RULES


def summary_notes(launches: list[Launch], findings: list[Finding], bad_lines: int) -> list[str]:
    n = len(launches)
    kernels = len({(x.file, x.kernel) for x in launches})
    by = {s: sum(1 for x in launches if x.status == s) for s in ("ok", "kernel-error", "tool-limit")}
    other = n - sum(by.values())
    limits = sum(1 for f in findings if is_tool_limit(f))
    notes = [f"{n} launch{'es' if n != 1 else ''} of {kernels} kernel{'s' if kernels != 1 else ''} on the "
             f"simulator: {by['ok']} ran, {by['kernel-error'] + other} failed, {by['tool-limit']} stopped at a "
             f"tool limit; {len(findings) - limits} finding{'s' if len(findings) - limits != 1 else ''} and "
             f"{limits} tool limit{'s' if limits != 1 else ''} after deduplication"]
    if bad_lines:
        notes.append(f"{bad_lines} launch record line(s) could not be read (a process killed while writing)")
    return notes


def table_text(rows: list[KernelRow]) -> str:
    """The per-kernel table `run` prints on stderr after the program's output."""
    if not rows:
        return "no kernel launches were recorded"
    lines = [f"{'kernel':<34} {'launches':>8} {'ok':>4} {'failed':>6} {'limits':>6} {'findings':>8} {'est. us':>10}"]
    for r in sorted(rows, key=lambda r: (r.file, r.kernel)):
        est = f"{sorted(r.estimated_us)[len(r.estimated_us) // 2]:.1f}" if r.estimated_us else "-"
        name = f"{r.kernel} ({os.path.basename(r.file)})"
        lines.append(f"{name[:34]:<34} {r.launches:>8} {r.ok:>4} {r.failed:>6} {r.tool_limits:>6} "
                     f"{len(r.findings):>8} {est:>10}")
    return "\n".join(lines)
