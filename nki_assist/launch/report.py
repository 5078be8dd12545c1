"""The run's report: a `CheckReport` of the deduplicated findings (so text, json, sarif and github come from
`check`'s renderers, and CI and the editor read them the same way), plus the launches for the json form."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from ..check import CheckReport
from ..report import render_check
from .collect import args_text, dedupe, display_path, host_limits, kernel_rows, summary_notes, table_text
from .record import Launch, read

RUN_KEY = "run"


@dataclass
class RunReport:
    report: CheckReport
    launches: list[Launch]
    comparisons: list[dict]
    table: str
    program: str
    unfinished: list[dict] = field(default_factory=list)


def _unfinished(starts: list[dict], launches: list[Launch]) -> list[dict]:
    """Launches that started and never ended (the program was stopped, or its process died in them)."""
    finished: dict[tuple, int] = {}
    for x in launches:
        key = (x.pid, x.kernel, x.file)
        finished[key] = finished.get(key, 0) + 1
    left = []
    for s in starts:
        key = (s.get("pid"), s.get("kernel"), s.get("file"))
        if finished.get(key, 0) > 0:
            finished[key] -= 1
        else:
            left.append(s)
    return left


def build_report(record_path: str, cwd: str, target: str, program_note: str, stopped: bool = False,
                 backend: str = "builtin") -> RunReport:
    if backend != "builtin":  # the real SDK ran the kernels: nothing of ours was installed to record them
        report = CheckReport(findings=[], target=target)
        report.notes = [program_note, "--backend neuron: the kernels ran on the Neuron SDK, which nki-assist does not "
                        "instrument; no launches are recorded (the program's own output and exit status are the "
                        "result)"]
        report.finish()
        return RunReport(report=report, launches=[], comparisons=[], table=table_text([]), program=program_note,
                         unfinished=[])
    launches, others, bad = read(record_path)
    starts = [o for o in others if o.get("type") == "start"]
    comparisons = [o for o in others if o.get("type") == "comparison"]
    findings = dedupe(launches, cwd) + host_limits([o for o in others if o.get("type") == "host-limit"], cwd)
    report = CheckReport(findings=findings, target=target)
    report.files_checked = len({x.file for x in launches})
    report.notes = [program_note] + summary_notes(launches, findings, bad)
    unfinished = _unfinished(starts, launches)
    for s in unfinished:
        where = f"{display_path(s.get('file'), cwd)}:{s.get('def_line')}"
        why = "when the program was stopped" if stopped else "when its process ended"
        report.notes.append(f"kernel {s.get('kernel')} ({where}) was still running on the simulator {why}")
    report.finish()
    return RunReport(report=report, launches=launches, comparisons=comparisons,
                     table=table_text(kernel_rows(launches, cwd)), program=program_note, unfinished=unfinished)


def launch_json(x: Launch, cwd: str) -> dict:
    return {"kernel": x.kernel, "file": display_path(x.file, cwd), "line": x.def_line, "api": x.api,
            "call_site": f"{display_path(x.call_file, cwd)}:{x.call_line}" if x.call_file else None,
            "arguments": args_text(x), "grid": x.grid, "status": x.status, "error": x.error,
            "error_line": x.error_line, "findings": sorted({f.get("rule") for f in x.findings}),
            "outputs": x.outputs, "cost": x.cost, "seconds": x.elapsed_s, "pid": x.pid}


def render_run(result: RunReport, fmt: str) -> str:
    """`check`'s renderers; `concise` is text without source snippets (one line per finding), as in `check`."""
    if fmt == "concise":
        return render_check(result.report, "text", snippets=False)
    text = render_check(result.report, fmt)
    if fmt != "json":
        return text
    data = json.loads(text)
    cwd = os.getcwd()
    data[RUN_KEY] = {"program": result.program, "launches": [launch_json(x, cwd) for x in result.launches],
                     "unfinished": result.unfinished}
    return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"
