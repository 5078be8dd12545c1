"""The `nki-assist.runCommand` command: run the configured program under `nki-assist run`, publish its findings.

The program is user code, so it runs only when `nki-assist.execution.enabled` is on, in a child
`python -m nki_assist run --format json` (the sandbox, its limits and the simulator live there, never in the
server). Its findings become diagnostics of the kernel files they point at; they stay until the next run,
merged with the check's own diagnostics of open documents (server.py `_publish`).
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls import uris

from nki_assist.findings import Finding

from .diagnostics import to_diagnostic

RUN_COMMAND = "nki-assist.runCommand"
KILL_POLL_S = 0.2


class RunFailed(Exception):
    """`nki-assist run` itself failed (bad command, unusable output)."""


def run_argv(command: str) -> list[str]:
    cmd = shlex.split(command)
    if not cmd:
        raise RunFailed("nki-assist.runCommand is empty")
    return [sys.executable, "-m", "nki_assist", "run", "--format", "json", "--fail-on", "never", "--", *cmd]


def run_configured(command: str, cwd: str, cancel: threading.Event | None = None) -> dict[str, Any]:
    """Run `command` under `nki-assist run` in `cwd`; returns the run's JSON document (findings, run)."""
    proc = subprocess.Popen(run_argv(command), cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    waiter = threading.Thread(target=lambda: None)
    if cancel is not None:
        def watch():
            while proc.poll() is None:
                if cancel.wait(KILL_POLL_S):
                    proc.terminate()  # `nki-assist run` ends the program's whole process tree on SIGTERM
                    return
        waiter = threading.Thread(target=watch, daemon=True)
    waiter.start()
    out, err = proc.communicate()
    try:
        data = json.loads(out)
    except ValueError:
        last = (err.strip().splitlines() or ["no output"])[-1]
        raise RunFailed(f"`nki-assist run -- {command}` failed (exit {proc.returncode}): {last[:300]}") from None
    return data


def findings_by_path(data: dict, cwd: str) -> dict[str, list]:
    """{absolute kernel path: [Finding]} with every path absolute (relative ones are the run's cwd's)."""
    out: dict[str, list] = {}
    for raw in data.get("findings", []):
        f = Finding.model_validate(raw)
        if not f.file:
            continue
        path = str((Path(cwd) / f.file).resolve())
        related = [r.model_copy(update={"file": str((Path(cwd) / r.file).resolve())}) for r in f.related]
        out.setdefault(path, []).append(f.model_copy(update={"file": path, "related": related}))
    return out


def summary(data: dict) -> str:
    run = data.get("run", {})
    n = len(run.get("launches", []))
    return f"{run.get('program', 'the program ran')}; {n} launch{'es' if n != 1 else ''}, " \
           f"{len(data.get('findings', []))} finding(s)"


def workspace_dir(roots: list[str]) -> str:
    return roots[0] if roots else os.getcwd()


async def run_command(ls: Any, *args: Any) -> dict:
    """The command: run `nki-assist.runCommand` (or the command given as the first argument), publish."""
    def fail(message: str) -> dict:
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))
        return {"ok": False, "message": message}

    given = args[0] if args and isinstance(args[0], str) else ""
    command = given.strip() or ls.settings.run_command
    if not command:
        return fail("nki-assist: set `nki-assist.runCommand` (e.g. `pytest tests/`) to run it on the simulator.")
    if not ls.settings.execution_enabled:
        return fail("nki-assist: running the program executes your code; enable `nki-assist.execution.enabled`.")
    cwd = workspace_dir(ls.roots())
    loop = asyncio.get_running_loop()
    try:
        data = await loop.run_in_executor(ls.review_executor, run_configured, command, cwd, None)
    except RunFailed as exc:
        return fail(f"nki-assist: {exc}")
    by_path = findings_by_path(data, cwd)
    fresh: dict[str, list] = {}
    for path, findings in by_path.items():
        try:
            lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines(True)
        except OSError:
            lines = []
        uri = uris.from_fs_path(path) or Path(path).as_uri()
        fresh[uri] = [to_diagnostic(f, lines, doc_path=path, language="nki") for f in findings]
    stale = set(ls.run_diagnostics) - set(fresh)
    ls.run_diagnostics = fresh
    for uri in set(fresh) | stale:
        if ls.document(uri) is not None:
            ls.schedule(uri, 0.0)  # re-checked and published with the run's diagnostics merged in
        else:
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri,
                                                                                diagnostics=fresh.get(uri, [])))
    message = f"nki-assist run: {summary(data)}"
    ls.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=message))
    return {"ok": True, "message": message, "findings": sum(len(v) for v in fresh.values()),
            "files": sorted(fresh)}
