"""Definition and references of kernels across the workspace, through the project model: a name resolves as
the project resolves calls (imports, aliases, `module.name`), into files the editor never opened. The workspace
is tests/fixtures/lsp_workspace (navpkg: kernels.py defines `scale_rows`, launch.py and alias.py call it,
other.py holds an unrelated `scale_rows` that nothing imports)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import FAST, REAL_SERVER, open_doc, server_env, vscode_capabilities, wait_diagnostics
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

pytest.importorskip("nki_assist.check.engine")
pytest.importorskip("nki_assist.project")
pytestmark = pytest.mark.asyncio(loop_scope="module")

FIXTURE = Path(__file__).parents[1] / "fixtures" / "lsp_workspace"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=REAL_SERVER, server_env=server_env()), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory):
    root = tmp_path_factory.mktemp("navws") / "ws"
    shutil.copytree(FIXTURE, root)
    lsp_client.root = root.resolve()
    lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)(lambda params: None)
    lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)(lambda params: None)
    lsp_client.set_configuration(FAST, section="nki-assist")
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=vscode_capabilities(), root_uri=lsp_client.root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=lsp_client.root.as_uri(), name="ws")]))
    for _ in range(300):  # the model is built in a worker after `initialized`
        if any("project model ready" in m.message for m in lsp_client.log_messages):
            break
        await asyncio.sleep(0.1)
    else:
        pytest.fail("the project model was not ready in 30 s")
    yield
    await lsp_client.shutdown_session()


def _file(client, name: str) -> Path:
    return client.root / "navpkg" / name


async def _open(client, name: str) -> tuple[str, list[str]]:
    path = _file(client, name)
    text = path.read_text(encoding="utf-8")
    open_doc(client, path.as_uri(), text)
    await wait_diagnostics(client, path.as_uri(), timeout=30)
    return path.as_uri(), text.splitlines()


def _pos(lines: list[str], line: int, needle: str) -> types.Position:
    """0-based position inside `needle` on 1-based `line`."""
    return types.Position(line=line - 1, character=lines[line - 1].index(needle) + 1)


def _spots(client, locations) -> list[tuple[str, int, int, int]]:
    """(file name, 1-based line, 0-based start and end character) of each location, sorted."""
    return sorted((Path(types.Location(uri=loc.uri, range=loc.range).uri.removeprefix("file://")).name,
                   loc.range.start.line + 1, loc.range.start.character, loc.range.end.character)
                  for loc in locations or [])


async def _definition(client, uri, position):
    return await client.text_document_definition_async(types.DefinitionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=position))


async def _references(client, uri, position, include=True):
    return await client.text_document_references_async(types.ReferenceParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=position,
        context=types.ReferenceContext(include_declaration=include)))


# every use of kernels.scale_rows in the workspace: (file, line, start, end); the `def` is kernels.py line 7
CALLS = [("alias.py", 2, 21, 31), ("alias.py", 2, 35, 37), ("alias.py", 6, 12, 14), ("alias.py", 7, 13, 23),
         ("kernels.py", 16, 11, 21),
         ("launch.py", 1, 27, 37), ("launch.py", 5, 11, 21), ("launch.py", 9, 4, 14), ("launch.py", 10, 11, 21)]
DEF = ("kernels.py", 7, 4, 14)


async def test_definition_goes_into_a_file_the_editor_never_opened(client):
    uri, lines = await _open(client, "launch.py")
    got = await _definition(client, uri, _pos(lines, 5, "scale_rows"))
    assert len(got) == 1
    assert got[0].uri == _file(client, "kernels.py").as_uri()
    assert _spots(client, got) == [DEF]
    # the imported name on the import line resolves alike
    assert _spots(client, await _definition(client, uri, _pos(lines, 1, "scale_rows"))) == [DEF]


async def test_definition_through_import_aliases(client):
    uri, lines = await _open(client, "alias.py")
    assert _spots(client, await _definition(client, uri, _pos(lines, 6, "sr("))) == [DEF]  # `as sr`
    assert _spots(client, await _definition(client, uri, _pos(lines, 7, "scale_rows"))) == [DEF]  # `K.scale_rows`


async def test_references_list_call_sites_in_unopened_callers(client):
    uri, lines = await _open(client, "launch.py")  # kernels.py and alias.py stay closed
    with_def = await _references(client, uri, _pos(lines, 9, "scale_rows"))
    assert _spots(client, with_def) == sorted(CALLS + [DEF])
    without = await _references(client, uri, _pos(lines, 9, "scale_rows"), include=False)
    assert _spots(client, without) == sorted(CALLS)


async def test_same_named_function_in_a_module_nobody_imports_is_apart(client):
    uri, lines = await _open(client, "other.py")
    # its own call resolves to its own def, never to the kernel
    assert _spots(client, await _definition(client, uri, _pos(lines, 6, "scale_rows"))) == [("other.py", 1, 4, 14)]
    refs = await _references(client, uri, _pos(lines, 1, "scale_rows"))
    assert _spots(client, refs) == [("other.py", 1, 4, 14), ("other.py", 6, 11, 21)]
    # and with other.py open, the kernel's references still do not list it
    launch, launch_lines = await _open(client, "launch.py")
    kernel_refs = _spots(client, await _references(client, launch, _pos(launch_lines, 5, "scale_rows")))
    assert kernel_refs == sorted(CALLS + [DEF])


async def test_open_text_wins_over_the_disk(client):
    """An unsaved edit that moves the kernel's `def` two lines down: definition follows the editor's text."""
    path = _file(client, "kernels.py")
    text = path.read_text(encoding="utf-8").replace("@nki.jit\n", "# moved\n\n@nki.jit\n", 1)
    open_doc(client, path.as_uri(), text)
    await wait_diagnostics(client, path.as_uri(), timeout=30)
    uri, lines = await _open(client, "alias.py")
    for _ in range(50):  # the model re-indexes the open document with its check
        got = _spots(client, await _definition(client, uri, _pos(lines, 6, "sr(")))
        if got == [("kernels.py", 9, 4, 14)]:
            break
        await asyncio.sleep(0.1)
    assert got == [("kernels.py", 9, 4, 14)]
