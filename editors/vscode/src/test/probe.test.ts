import { strict as assert } from 'node:assert';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { serverCandidates } from '../command';
import { findServer, probePython } from '../probe';

test('findServer takes the first interpreter whose probe succeeds', async () => {
  const candidates = serverCandidates({ pythonPath: '/no/python', activeInterpreter: '/good/python' }, {});
  const seen: string[] = [];
  const found = await findServer(candidates, async (p) => { seen.push(p); return p === '/good/python' ? '0.1.0' : undefined; });
  assert.equal(found?.candidate.python, '/good/python');
  assert.equal(found?.version, '0.1.0');
  assert.deepEqual(seen, ['/no/python', '/good/python']); // python3 is never reached
});

test('findServer trusts server.path without probing, and returns undefined when nothing works', async () => {
  const explicit = serverCandidates({ serverPath: ['/opt/nki-assist', 'lsp'] }, {});
  assert.equal((await findServer(explicit, async () => { throw new Error('no probe expected'); }))?.candidate, explicit[0]);
  assert.equal(await findServer(serverCandidates({}, {}), async () => undefined), undefined);
});

test('probePython: a missing interpreter and one without nki-assist both say no', async () => {
  assert.equal(await probePython('/definitely/not/a/python'), undefined);
  const dir = mkdtempSync(path.join(tmpdir(), 'nki-assist-probe-'));
  const fake = path.join(dir, 'python');
  writeFileSync(fake, '#!/bin/sh\necho "ModuleNotFoundError: No module named nki_assist" >&2\nexit 1\n');
  chmodSync(fake, 0o755);
  assert.equal(await probePython(fake), undefined);
  const ok = path.join(dir, 'python-ok');
  writeFileSync(ok, '#!/bin/sh\necho 9.9.9\n');
  chmodSync(ok, 0o755);
  assert.equal(await probePython(ok), '9.9.9');
});
