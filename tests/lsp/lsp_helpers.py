"""Shared pytest-lsp plumbing for the language-server tests (VS Code's recorded capabilities)."""

from __future__ import annotations

import asyncio
import copy
import os
import sys
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
FAKE_SERVER = [sys.executable, str(HERE / "lsp_fake_server.py")]
REAL_SERVER = [sys.executable, "-m", "nki_assist", "lsp"]
FAST = {"diagnostics": {"debounceMs": 50}}


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NKI_ASSIST_LSP_TEST", "FAKE_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def vscode_capabilities(pull: bool = False) -> types.ClientCapabilities:
    caps = copy.deepcopy(client_capabilities("visual-studio-code"))
    if pull:  # VS Code >= 1.70 pulls; the recorded 1.65 capabilities predate it
        caps.text_document.diagnostic = types.DiagnosticClientCapabilities(related_document_support=False)
        caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    return caps


def make_client_fixture(command: list[str], *, pull: bool = False, settings: dict | None = None,
                        scope: str = "module", **env: str):
    """A pytest-lsp client fixture (one server per module by default: start-up costs ~1 s).

    `client.root` is the workspace folder; tests give their documents distinct names.
    """

    @pytest_lsp.fixture(config=ClientServerConfig(server_command=command, server_env=server_env(**env)),
                        scope=scope)
    async def fixture(lsp_client: LanguageClient, tmp_path_factory):
        tmp_path = tmp_path_factory.mktemp("ws")
        lsp_client.root = tmp_path
        if types.CLIENT_REGISTER_CAPABILITY not in lsp_client.protocol.fm.features:
            lsp_client.registrations = []
            lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)(
                lambda params: lsp_client.registrations.extend(params.registrations))
            lsp_client.code_lens_refreshes = 0

            def refresh(params):
                lsp_client.code_lens_refreshes += 1

            lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)(refresh)
        lsp_client.set_configuration(settings if settings is not None else FAST, section="nki-assist")
        await lsp_client.initialize_session(types.InitializeParams(
            capabilities=vscode_capabilities(pull),
            root_uri=tmp_path.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=tmp_path.as_uri(), name="ws")],
        ))
        yield
        await lsp_client.shutdown_session()

    return fixture


def open_doc(client: LanguageClient, uri: str, text: str, language: str = "python", version: int = 1) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id=language, version=version, text=text)))


def replace_all(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


async def wait_diagnostics(client: LanguageClient, uri: str, predicate=lambda d: True, timeout: float = 10.0):
    """Wait until the client holds diagnostics for `uri` that satisfy `predicate`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        if uri in client.diagnostics and predicate(client.diagnostics[uri]):
            return client.diagnostics[uri]
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise AssertionError(f"no matching diagnostics for {uri}; have {client.diagnostics.get(uri)!r}")
        try:
            await asyncio.wait_for(client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS),
                                   remaining)
        except asyncio.TimeoutError:
            pass
