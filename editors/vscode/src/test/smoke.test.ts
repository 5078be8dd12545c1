// Node smoke test over the same JSON-RPC stack VS Code uses: discover the interpreter the way the
// extension does (probe for nki-assist), spawn the Python server, open an NKI file, expect a
// diagnostic. The interpreter: NKI_ASSIST_PYTHON, else the repo's .venv. With
// NKI_ASSIST_REQUIRE_SERVER=1 (CI) a missing server FAILS the test instead of skipping it.
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { test } from 'node:test';
import { StreamMessageReader, StreamMessageWriter, createMessageConnection } from 'vscode-jsonrpc/node';
import { notFoundMessage, serverCandidates } from '../command';
import { findServer } from '../probe';

const repo = path.resolve(__dirname, '..', '..', '..', '..');
const required = process.env.NKI_ASSIST_REQUIRE_SERVER === '1';

async function server(): Promise<string[] | undefined> {
  const candidates = serverCandidates({
    pythonPath: process.env.NKI_ASSIST_PYTHON,
    activeInterpreter: path.join(repo, '.venv', 'bin', 'python'),
  }, { env: process.env });
  const found = await findServer(candidates.filter((c) => c.source !== 'python3 on PATH'));
  if (!found && required) {
    assert.fail(`the smoke test needs the language server: ${notFoundMessage(candidates)}`);
  }
  return found?.candidate.command;
}

test('initialize, open an NKI kernel, receive diagnostics', { timeout: 60000 }, async (t) => {
  const command = await server();
  if (!command) {
    t.skip('no python with nki-assist (set NKI_ASSIST_PYTHON; NKI_ASSIST_REQUIRE_SERVER=1 makes this fail)');
    return;
  }
  const [program, ...args] = command;
  const proc = spawn(program, args, { cwd: repo, stdio: ['pipe', 'pipe', 'inherit'] });
  const conn = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
  const published = new Promise<any>((resolve) => {
    conn.onNotification('textDocument/publishDiagnostics', (p: any) => { if (p.diagnostics.length > 0) resolve(p); });
  });
  conn.onRequest('workspace/configuration', (p: any) => p.items.map(() => ({ diagnostics: { debounceMs: 0 } })));
  conn.onRequest('client/registerCapability', () => null);
  conn.listen();
  const init: any = await conn.sendRequest('initialize', {
    processId: process.pid, rootUri: null, capabilities: { workspace: { configuration: true } },
  });
  assert.ok(init.capabilities.hoverProvider);
  assert.ok(init.capabilities.executeCommandProvider.commands.includes('nki-assist.reviewPort'));
  await conn.sendNotification('initialized', {});
  const uri = 'untitled:smoke_nki.py';
  const text = [
    'import neuronxcc.nki as nki', 'import neuronxcc.nki.language as nl', '', '',
    '@nki.jit', 'def k(a):',
    '    acc = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)', '    return acc', '',
  ].join('\n');
  await conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'python', version: 1, text } });
  const params = await published;
  assert.equal(params.uri, uri);
  const psum = params.diagnostics.find((d: any) => d.code === 'NKI103');
  assert.ok(psum, JSON.stringify(params.diagnostics));
  assert.deepEqual(psum.range.start, { line: 6, character: 10 });
  assert.equal(psum.source, 'nki-assist');
  await conn.sendRequest('shutdown');
  await conn.sendNotification('exit');
  conn.dispose();
  proc.kill();
});
