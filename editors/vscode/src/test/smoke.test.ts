// Node smoke test over the same JSON-RPC stack VS Code uses: spawn the Python server, open an NKI
// file, expect a diagnostic. Needs a Python with nki-assist: NKI_ASSIST_PYTHON or the repo's .venv.
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { StreamMessageReader, StreamMessageWriter, createMessageConnection } from 'vscode-jsonrpc/node';

const repo = path.resolve(__dirname, '..', '..', '..', '..');
const python = process.env.NKI_ASSIST_PYTHON ?? path.join(repo, '.venv', 'bin', 'python');

test('initialize, open an NKI kernel, receive diagnostics', { skip: !existsSync(python) && 'no python with nki-assist', timeout: 30000 }, async () => {
  const proc = spawn(python, ['-m', 'nki_assist', 'lsp'], { cwd: repo, stdio: ['pipe', 'pipe', 'inherit'] });
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
