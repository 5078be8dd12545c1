"""`nki-assist.runCommand`: the configured program under `nki-assist run`, its findings as diagnostics."""

from __future__ import annotations

import shutil

import pytest
from lsp_helpers import FAST, REAL_SERVER, REPO, make_client_fixture, open_doc, wait_diagnostics
from lsprotocol import types

pytestmark = pytest.mark.asyncio(loop_scope="module")

FIXTURES = REPO / "tests" / "fixtures" / "run"
client = make_client_fixture(REAL_SERVER, settings={**FAST, "execution": {"enabled": True},
                                                    "runCommand": "python planted_harness.py"})


async def test_run_command_publishes_the_programs_findings_at_the_kernel_lines(client):
    for name in ("planted_kernels.py", "planted_harness.py"):
        shutil.copy(FIXTURES / name, client.root / name)
    kernel = client.root / "planted_kernels.py"
    uri = kernel.as_uri()
    open_doc(client, uri, kernel.read_text())
    await wait_diagnostics(client, uri)
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="nki-assist.runCommand", arguments=[]))
    assert result["ok"] is True and result["findings"] >= 13
    assert uri in result["files"] and "exited with status 1" in result["message"]

    def has_run_findings(diags):
        at = {(d.code, d.range.start.line + 1) for d in diags}
        return {("SIM101", 17), ("SIM112", 39), ("SIM111", 52), ("SIM119", 118)} <= at

    diags = await wait_diagnostics(client, uri, has_run_findings, timeout=30)
    tail = next(d for d in diags if d.code == "SIM112")
    assert any(r.location.uri.endswith("planted_harness.py") for r in tail.related_information or [])


async def test_a_command_argument_overrides_the_setting_and_clears_the_previous_runs_diagnostics(client):
    uri = (client.root / "planted_kernels.py").as_uri()
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="nki-assist.runCommand", arguments=["python -c pass"]))
    assert result["ok"] is True and result["findings"] == 0 and result["files"] == []
    diags = await wait_diagnostics(client, uri, lambda ds: not any(d.code.startswith("SIM") for d in ds),
                                   timeout=30)
    assert any(d.code == "NKI101" for d in diags)  # the check's own diagnostics stay
