import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { expandVariables, installCommand, notFoundMessage, serverCandidates, serverCommand } from '../command';

const vars = {
  workspaceFolder: '/ws/proj',
  workspaceFolders: { proj: '/ws/proj', other: '/ws/other' },
  userHome: '/home/me',
  env: { VENV: '/opt/venv', EMPTY: '' },
};

test('variables in settings are expanded as VS Code does', () => {
  assert.equal(expandVariables('${workspaceFolder}/.venv/bin/python', vars), '/ws/proj/.venv/bin/python');
  assert.equal(expandVariables('${workspaceFolder:other}/py', vars), '/ws/other/py');
  assert.equal(expandVariables('${env:VENV}/bin/python', vars), '/opt/venv/bin/python');
  assert.equal(expandVariables('${userHome}/py', vars), '/home/me/py');
  assert.equal(expandVariables('~/venvs/k/bin/python', vars), '/home/me/venvs/k/bin/python');
  assert.equal(expandVariables('/usr/bin/python3', vars), '/usr/bin/python3');
});

test('a variable that cannot be resolved makes the value unusable, not `python3`', () => {
  assert.equal(expandVariables('${workspaceFolder}/.venv/bin/python', {}), undefined);
  assert.equal(expandVariables('${workspaceFolder:nope}/py', vars), undefined);
  assert.equal(expandVariables('${command:python.interpreterPath}', vars), undefined);
  assert.equal(expandVariables('${env:UNSET_VAR}', vars), undefined); // expands to nothing
});

test('server.path wins and is used verbatim (after expansion)', () => {
  const c = serverCandidates({ serverPath: ['${workspaceFolder}/.venv/bin/nki-assist', 'lsp'], pythonPath: '/p' }, vars);
  assert.deepEqual(c, [{ command: ['/ws/proj/.venv/bin/nki-assist', 'lsp'], source: 'nki-assist.server.path' }]);
  assert.deepEqual(serverCommand(['/opt/venv/bin/nki-assist', 'lsp'], '/usr/bin/python3'), ['/opt/venv/bin/nki-assist', 'lsp']);
});

test('interpreters in order: our setting, the selected interpreter, the Python default, python3', () => {
  const c = serverCandidates({
    serverPath: [' '],
    pythonPath: '',
    activeInterpreter: '/ws/proj/.venv/bin/python',
    defaultInterpreter: '${workspaceFolder}/.venv/bin/python', // same interpreter: tried once
  }, vars);
  assert.deepEqual(c.map((x) => [x.python, x.source]), [
    ['/ws/proj/.venv/bin/python', 'Python extension (selected interpreter)'],
    ['python3', 'python3 on PATH'],
  ]);
  assert.deepEqual(c[0].command, ['/ws/proj/.venv/bin/python', '-m', 'nki_assist', 'lsp']);
  const all = serverCandidates({ pythonPath: '${env:VENV}/bin/python', activeInterpreter: '/a/python',
    defaultInterpreter: '/b/python' }, vars);
  assert.deepEqual(all.map((x) => x.python), ['/opt/venv/bin/python', '/a/python', '/b/python', 'python3']);
  // an unresolvable default is skipped (previously silently replaced by python3)
  assert.deepEqual(serverCandidates({ defaultInterpreter: '${workspaceFolder}/py' }, {}).map((x) => x.python), ['python3']);
});

test('the not-found message names what was tried and the install command', () => {
  const tried = serverCandidates({ activeInterpreter: '/ws/my env/bin/python' }, vars);
  const msg = notFoundMessage(tried);
  assert.match(msg, /tried \/ws\/my env\/bin\/python \(Python extension \(selected interpreter\)\), python3 \(python3 on PATH\)/);
  assert.match(msg, /`'\/ws\/my env\/bin\/python' -m pip install nki-assist`/);
  assert.equal(installCommand('/usr/bin/python3'), '/usr/bin/python3 -m pip install nki-assist');
});
