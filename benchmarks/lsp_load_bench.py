"""Language server under load: 50 open 1,000-line documents, 2,000 rapid edits with hovers, code
actions, pull diagnostics and one port review in between (issue 31 item 7).

A pull-diagnostics client (like VS Code) drives `python -m nki_assist lsp` over stdio with the
server's default debounce. Edits go out every EDIT_GAP seconds without waiting for anything, each to
a random document (seeded); every 10th edit also sends a hover, every 10th (offset 5) a code action,
every 20th a pull for a random document; the review runs once, a quarter into the storm.
Reported: p50/p95 per request kind (ms), the server's resident size after the 50 documents were
opened and checked vs after the storm settled (ratio; target <= 1.5x), its peak, and whether every
document ended on its latest version (a hover after the storm names the last edit's tile width).
Targets: hover and code-action p95 < 500 ms. Bounded: 2,000 edits, 30 s per request (a request that
times out counts 30 s), 300 s in all; stdio only. `--python`/`--cwd` drive another checkout's server.
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import random
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DOCUMENTS = 50
LINES = 1000
EDITS = 2000
EDIT_GAP = 0.003  # seconds between edits: ~300 edits/s offered
REQUEST_TIMEOUT = 30.0
SETTLE_LIMIT = 60.0  # seconds for every document to show its last edit
PORT_SPEC = REPO / "examples" / "gemm_bias_relu" / "port.toml"


def _check_bench():
    spec = importlib.util.spec_from_file_location("benchmarks.check_bench", HERE / "check_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CB = _check_bench()


class Doc:
    def __init__(self, uri: str, text: str) -> None:
        self.uri = uri
        self.lines = text.splitlines()
        self.version = 1
        # the tile-width lines (`F = ...`) of the elementwise kernels: an edit there changes one kernel
        self.edit_lines = [i for i, ln in enumerate(self.lines) if ln.strip().startswith("F = ")]
        # `a_tile = nl.load(...)` lines: a hover on the name shows the tile's shape, [128, F]
        self.alloc_lines = [i for i, ln in enumerate(self.lines) if "a_tile = nl.load(" in ln]
        self.diagnostics: list[types.Diagnostic] = []
        self.last_width: dict[int, int] = {}


class LoadClient:
    def __init__(self, settings: dict, python: str = sys.executable, cwd: str | None = None) -> None:
        self.client = LanguageClient("lsp-load-bench", "1")
        self.settings = settings
        self.python, self.cwd = python, cwd
        client = self.client

        @client.feature(types.WORKSPACE_CONFIGURATION)
        def configuration(params: types.ConfigurationParams):
            return [self.settings for _ in params.items]

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register(params):
            return None

        for method in (types.WORKSPACE_DIAGNOSTIC_REFRESH, types.WORKSPACE_CODE_LENS_REFRESH,
                       types.WORKSPACE_INLAY_HINT_REFRESH):
            client.feature(method)(lambda params: None)

        @client.feature(types.WINDOW_SHOW_DOCUMENT)
        def show(params):
            return types.ShowDocumentResult(success=True)

        for method in (types.WINDOW_LOG_MESSAGE, types.WINDOW_SHOW_MESSAGE):
            client.feature(method)(lambda params: None)

    async def start(self) -> int:
        await self.client.start_io(self.python, "-m", "nki_assist", "lsp", cwd=self.cwd)
        caps = types.ClientCapabilities(
            workspace=types.WorkspaceClientCapabilities(
                configuration=True,
                diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)),
            text_document=types.TextDocumentClientCapabilities(
                diagnostic=types.DiagnosticClientCapabilities(related_document_support=False)))
        await self.client.initialize_async(types.InitializeParams(capabilities=caps, process_id=None))
        self.client.initialized(types.InitializedParams())
        await asyncio.sleep(0.3)
        return self.client._server.pid

    async def stop(self) -> None:
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), 10)
            self.client.exit(None)
        finally:
            await self.client.stop()

    def open(self, doc: Doc) -> None:
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=doc.uri, language_id="python", version=doc.version, text="\n".join(doc.lines) + "\n")))

    def edit(self, doc: Doc, line: int, new: str) -> None:
        doc.version += 1
        old = doc.lines[line]
        doc.lines[line] = new
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=line, character=0),
                                  end=types.Position(line=line, character=len(old))),
                text=new)]))

    async def pull(self, doc: Doc) -> types.DocumentDiagnosticReport:
        return await asyncio.wait_for(self.client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri))), REQUEST_TIMEOUT)

    async def hover(self, doc: Doc, line: int, character: int):
        return await asyncio.wait_for(self.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri),
            position=types.Position(line=line, character=character))), REQUEST_TIMEOUT)

    async def code_action(self, doc: Doc, line: int):
        diags = [d for d in doc.diagnostics if d.range.start.line == line] or doc.diagnostics[:1]
        rng = diags[0].range if diags else types.Range(start=types.Position(line=line, character=0),
                                                       end=types.Position(line=line, character=1))
        return await asyncio.wait_for(self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=doc.uri), range=rng,
            context=types.CodeActionContext(diagnostics=diags))), REQUEST_TIMEOUT)


async def _timed(kind: str, times: dict[str, list[float]], coro) -> None:
    started = time.perf_counter()
    try:
        await coro
    except Exception as exc:
        times.setdefault(f"{kind}_errors", []).append(1.0)
        times.setdefault(kind, []).append(REQUEST_TIMEOUT * 1000)
        if not isinstance(exc, asyncio.TimeoutError):
            print(f"lsp_load: {kind} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return
    times.setdefault(kind, []).append((time.perf_counter() - started) * 1000)


async def _session(settings: dict, documents: int, edits: int, python: str = sys.executable,
                   cwd: str | None = None) -> dict:
    rng = random.Random(31)
    text = CB.generate(LINES)
    c = LoadClient(settings, python, cwd)
    pid = await c.start()
    docs = [Doc(f"file:///bench/load/doc_{i:02d}_nki.py", text) for i in range(documents)]
    started = time.perf_counter()
    for doc in docs:
        c.open(doc)
    for doc in docs:  # the first pull of each waits for its first check
        try:
            report = await c.pull(doc)
        except asyncio.TimeoutError:
            continue
        doc.diagnostics = list(getattr(report, "items", []) or [])
    open_seconds = time.perf_counter() - started
    await asyncio.sleep(1.5)
    rss_open = CB.rss_kib(pid).get("VmRSS", 0)

    times: dict[str, list[float]] = {}
    tasks: list[asyncio.Task] = []

    async def pull_into(doc: Doc) -> None:
        report = await c.pull(doc)
        if getattr(report, "items", None) is not None:
            doc.diagnostics = list(report.items)

    storm_started = time.perf_counter()
    for i in range(edits):
        doc = rng.choice(docs)
        line = rng.choice(doc.edit_lines)
        width = rng.choice((128, 256, 384, 512))
        indent = doc.lines[line][:len(doc.lines[line]) - len(doc.lines[line].lstrip())]
        c.edit(doc, line, f"{indent}F = {width}")
        doc.last_width[line] = width
        if i % 10 == 0:
            target = rng.choice(docs)
            tasks.append(asyncio.ensure_future(_timed("hover", times, c.hover(target, rng.choice(target.alloc_lines), 13))))
        if i % 10 == 5:
            target = rng.choice(docs)
            tasks.append(asyncio.ensure_future(_timed("code_action", times,
                                                      c.code_action(target, rng.choice(target.alloc_lines)))))
        if i % 20 == 10:
            tasks.append(asyncio.ensure_future(_timed("pull", times, pull_into(rng.choice(docs)))))
        if i == edits // 4 and PORT_SPEC.exists():
            tasks.append(asyncio.ensure_future(_timed("review", times, asyncio.wait_for(
                c.client.workspace_execute_command_async(types.ExecuteCommandParams(
                    command="nki-assist.reviewPort", arguments=[docs[0].uri])), 120))))
        await asyncio.sleep(EDIT_GAP)
    storm_seconds = time.perf_counter() - storm_started
    await asyncio.gather(*tasks)
    requests_done = time.perf_counter() - storm_started

    # Settled: every document's pull answers for its latest version; a hover names the last width.
    settle_started = time.perf_counter()
    latest_ok = 0
    for doc in docs:
        line = max(doc.last_width, default=None)
        for _ in range(100):
            if time.perf_counter() - settle_started > SETTLE_LIMIT:
                break
            if line is None:
                latest_ok += 1
                break
            # the allocation below the edited width line uses F: its hover shows the new width
            alloc = next(i for i in doc.alloc_lines if i > line)
            try:
                await c.pull(doc)
                hover = await c.hover(doc, alloc, 13)
            except asyncio.TimeoutError:
                continue
            want = f"[128, {doc.last_width[line]}]"
            if hover is not None and want in hover.contents.value:
                latest_ok += 1
                break
            await asyncio.sleep(0.1)
    settle_seconds = time.perf_counter() - settle_started
    await asyncio.sleep(2.0)
    mem = CB.rss_kib(pid)
    await c.stop()
    out = {"documents": documents, "lines_per_document": LINES, "edits": edits,
           "open_and_first_check_s": round(open_seconds, 2), "storm_send_s": round(storm_seconds, 2),
           "storm_requests_done_s": round(requests_done, 2), "settle_s": round(settle_seconds, 2),
           "documents_on_latest_version": latest_ok}
    for kind in ("hover", "code_action", "pull", "review"):
        values = times.get(kind, [])
        out[f"{kind}_count"] = len(values)
        if kind == "review":
            out["review_ms"] = round(values[0], 1) if values else 0.0
            continue
        out[f"{kind}_p50_ms"] = round(CB.percentile(values, 0.5), 1)
        out[f"{kind}_p95_ms"] = round(CB.percentile(values, 0.95), 1)
        out[f"{kind}_errors"] = len(times.get(f"{kind}_errors", []))
    out["rss_after_open_mib"] = round(rss_open / 1024, 1)
    out["rss_after_storm_mib"] = round(mem.get("VmRSS", 0) / 1024, 1)
    out["rss_peak_mib"] = round(mem.get("VmHWM", 0) / 1024, 1)
    out["rss_ratio_after_storm"] = round(mem.get("VmRSS", 0) / rss_open, 2) if rss_open else 0.0
    out["rss_ratio_peak"] = round(mem.get("VmHWM", 0) / rss_open, 2) if rss_open else 0.0
    return out


def run(documents: int = DOCUMENTS, edits: int = EDITS, settings: dict | None = None, python: str = sys.executable,
        cwd: str | None = None) -> dict:
    settings = settings if settings is not None else {"review": {"portSpec": str(PORT_SPEC)}}
    logging.getLogger("pygls").setLevel(logging.CRITICAL)  # late answers to timed-out requests
    return asyncio.run(asyncio.wait_for(_session(settings, documents, edits, python, cwd), 300))


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=DOCUMENTS)
    parser.add_argument("--edits", type=int, default=EDITS)
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter that runs `-m nki_assist lsp` (compare another checkout's server)")
    parser.add_argument("--cwd", default=None, help="working directory of that server (its checkout)")
    args = parser.parse_args()
    for key, value in run(args.documents, args.edits, python=args.python, cwd=args.cwd).items():
        print(f"{key:36s} {value}")
