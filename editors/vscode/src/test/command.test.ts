import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { serverCommand } from '../command';

test('server.path wins and is used verbatim', () => {
  assert.deepEqual(serverCommand(['/opt/venv/bin/nki-assist', 'lsp'], '/usr/bin/python3'), ['/opt/venv/bin/nki-assist', 'lsp']);
});

test('python interpreter setting, then the Python extension default, then python3', () => {
  assert.deepEqual(serverCommand([], '/venv/bin/python', '/other/python'), ['/venv/bin/python', '-m', 'nki_assist', 'lsp']);
  assert.deepEqual(serverCommand([], '', '/other/python'), ['/other/python', '-m', 'nki_assist', 'lsp']);
  assert.deepEqual(serverCommand(undefined, undefined, '${workspaceFolder}/.venv/bin/python'), ['python3', '-m', 'nki_assist', 'lsp']);
  assert.deepEqual(serverCommand([' '], undefined, undefined), ['python3', '-m', 'nki_assist', 'lsp']);
});
