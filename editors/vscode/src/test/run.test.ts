import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { RUN_COMMAND, runMessage } from '../run';

test('the run command is the server command name', () => {
  assert.equal(RUN_COMMAND, 'nki-assist.runCommand');
});

test('a finished run reports the server line and the diagnostics it published', () => {
  const m = runMessage({ ok: true, message: 'nki-assist run: program exited with status 0', findings: 3,
    files: ['file:///k.py'] });
  assert.equal(m?.level, 'info');
  assert.equal(m?.text, 'nki-assist run: program exited with status 0 (3 diagnostics in 1 file)');
});

test('a refused run adds nothing to the server warning; no result at all is a warning', () => {
  assert.equal(runMessage({ ok: false, message: 'set nki-assist.runCommand' }), undefined);
  assert.equal(runMessage(undefined)?.level, 'warning');
});
