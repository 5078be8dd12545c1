"""Language server: diagnostics latency for a 1,000-line NKI file, and server memory after 100 edits.

The server runs as editors run it (`python -m nki_assist lsp`, stdio). Latency is measured from
sending `didChange` to receiving `publishDiagnostics` for that version, with the debounce set to
0 ms (so it is the time after the debounce fires: parse + rules + conversion + IPC; each edit is sent
once the previous version's hover/lens parse finished, as after a typing pause), and
once more with the default 300 ms debounce for reference. Target (design.md): < 100 ms after the
debounce. RSS is read from /proc after 100 edits, each analysed.
"""

from __future__ import annotations

import asyncio
import importlib.util
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

HERE = Path(__file__).resolve().parent
EDITS = 100
DEFAULT_DEBOUNCE_EDITS = 10


def _generate() -> str:
    spec = importlib.util.spec_from_file_location("benchmarks.check_bench", HERE / "check_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate(1000)


def _rss_kib(pid: int) -> dict[str, int]:
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


async def _session(text: str) -> dict:
    client = LanguageClient("lsp-bench", "1")
    config = {"diagnostics": {"debounceMs": 0}}
    received: dict[int, float] = {}
    counts: dict[int, int] = {}
    arrived = asyncio.Event()
    parsed = asyncio.Event()  # the server asks for a code-lens refresh when its hover/lens parse is done

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def lens_refresh(params):
        parsed.set()

    @client.feature(types.WORKSPACE_CONFIGURATION)
    def configuration(params: types.ConfigurationParams):
        return [config for _ in params.items]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params):
        return None

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def publish(params: types.PublishDiagnosticsParams):
        if params.version is not None:
            received[params.version] = time.perf_counter()
            counts[params.version] = len(params.diagnostics)
            arrived.set()

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def log(params):
        return None

    await client.start_io(sys.executable, "-m", "nki_assist", "lsp")
    pid = client._server.pid  # noqa: SLF001 - the subprocess pygls started
    caps = types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(
        configuration=True, did_change_configuration=types.DidChangeConfigurationClientCapabilities(
            dynamic_registration=True), code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True)))
    await client.initialize_async(types.InitializeParams(capabilities=caps, process_id=None))
    client.initialized(types.InitializedParams())
    await asyncio.sleep(0.3)  # settings round trip

    uri = "file:///bench/generated_nki.py"

    async def wait_version(version: int, timeout: float = 30.0) -> float:
        deadline = time.perf_counter() + timeout
        while version not in received:
            arrived.clear()
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise TimeoutError(f"no diagnostics for version {version}")
            try:
                await asyncio.wait_for(arrived.wait(), remaining)
            except asyncio.TimeoutError:
                pass
        return received[version]

    started = time.perf_counter()
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=text)))
    first = (await wait_version(1)) - started

    async def settle() -> None:
        """A user pauses before the debounce fires: let the hover/lens parse of the last version end."""
        try:
            await asyncio.wait_for(parsed.wait(), 10)
        except asyncio.TimeoutError:
            pass
        parsed.clear()

    await settle()
    rss_open = _rss_kib(pid)

    lines = text.splitlines()
    target_line = next(i for i, line in enumerate(lines) if line.startswith("TILE_F = "))
    latencies = []
    version = 1
    for i in range(EDITS):  # retype the TILE_F constant: a one-line incremental edit
        version += 1
        new = f"TILE_F = {512 if i % 2 else 256}"
        sent = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=target_line, character=0),
                                  end=types.Position(line=target_line, character=len(lines[target_line]))),
                text=new)]))
        lines[target_line] = new
        latencies.append(((await wait_version(version)) - sent) * 1000)
        await settle()
    rss_after = _rss_kib(pid)

    config["diagnostics"]["debounceMs"] = 300
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await asyncio.sleep(0.5)
    with_debounce = []
    for i in range(DEFAULT_DEBOUNCE_EDITS):
        version += 1
        sent = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text + f"# {i}\n")]))
        with_debounce.append(((await wait_version(version)) - sent) * 1000)
        await settle()

    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {
        "lines": len(text.splitlines()),
        "diagnostics": counts.get(version, 0),
        "first_diagnostics_ms": round(first * 1000, 1),
        "latency_after_debounce_median_ms": round(statistics.median(latencies), 1),
        "latency_after_debounce_p95_ms": round(_p95(latencies), 1),
        "latency_with_300ms_debounce_median_ms": round(statistics.median(with_debounce), 1),
        "edits": EDITS,
        "rss_after_open_mib": round(rss_open.get("VmRSS", 0) / 1024, 1),
        "rss_after_100_edits_mib": round(rss_after.get("VmRSS", 0) / 1024, 1),
        "rss_peak_mib": round(rss_after.get("VmHWM", 0) / 1024, 1),
    }


def run() -> dict:
    return asyncio.run(_session(_generate()))


if __name__ == "__main__":
    for key, value in run().items():
        print(f"{key:42s} {value}")
