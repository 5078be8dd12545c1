// Which command launches the server; kept free of the `vscode` module so node can unit-test it.

/** Where a candidate interpreter came from, for the log and the "not found" message. */
export type Source =
  | 'nki-assist.server.path'
  | 'nki-assist.server.pythonPath'
  | 'Python extension (selected interpreter)'
  | 'python.defaultInterpreterPath'
  | 'python3 on PATH';

export interface Candidate {
  /** Full command line of the server. */
  command: string[];
  source: Source;
  /** The interpreter (python candidates only): probed for nki-assist before it is used. */
  python?: string;
}

export interface Inputs {
  serverPath?: string[];
  pythonPath?: string;
  /** The interpreter chosen with "Python: Select Interpreter" (the Python extension's API). */
  activeInterpreter?: string;
  defaultInterpreter?: string;
}

export interface Variables {
  workspaceFolder?: string;
  /** `${workspaceFolder:name}` */
  workspaceFolders?: Record<string, string>;
  userHome?: string;
  env?: Record<string, string | undefined>;
}

/**
 * `${workspaceFolder}`, `${workspaceFolder:name}`, `${userHome}`, `${env:NAME}` and a leading `~`
 * expanded as VS Code does in settings; undefined when a variable cannot be resolved (the value is
 * then not a usable path, and the next candidate is tried).
 */
export function expandVariables(value: string, vars: Variables): string | undefined {
  let unresolved = false;
  let out = value.replace(/\$\{([^}]*)\}/g, (_match, name: string) => {
    let result: string | undefined;
    if (name === 'workspaceFolder' || name === 'workspaceRoot') {
      result = vars.workspaceFolder;
    } else if (name.startsWith('workspaceFolder:')) {
      result = vars.workspaceFolders?.[name.slice('workspaceFolder:'.length)];
    } else if (name === 'userHome') {
      result = vars.userHome;
    } else if (name.startsWith('env:')) {
      result = vars.env?.[name.slice(4)] ?? '';
    }
    if (result === undefined) {
      unresolved = true;
      return '';
    }
    return result;
  });
  if (vars.userHome && (out === '~' || out.startsWith('~/'))) {
    out = vars.userHome + out.slice(1);
  }
  return unresolved || out.trim() === '' ? undefined : out;
}

function pythonCandidate(python: string, source: Source): Candidate {
  return { command: [python, '-m', 'nki_assist', 'lsp'], source, python };
}

/**
 * Candidates in the order they are tried: `server.path` (used verbatim), `server.pythonPath`, the
 * Python extension's selected interpreter, `python.defaultInterpreterPath`, then `python3`.
 */
export function serverCandidates(inputs: Inputs, vars: Variables): Candidate[] {
  const explicit = (inputs.serverPath ?? []).filter((part) => part.trim() !== '');
  if (explicit.length > 0) {
    const [head, ...rest] = explicit;
    return [{ command: [expandVariables(head, vars) ?? head, ...rest], source: 'nki-assist.server.path' }];
  }
  const out: Candidate[] = [];
  const add = (value: string | undefined, source: Source) => {
    const python = value && value.trim() !== '' ? expandVariables(value.trim(), vars) : undefined;
    if (python && !out.some((c) => c.python === python)) {
      out.push(pythonCandidate(python, source));
    }
  };
  add(inputs.pythonPath, 'nki-assist.server.pythonPath');
  add(inputs.activeInterpreter, 'Python extension (selected interpreter)');
  add(inputs.defaultInterpreter, 'python.defaultInterpreterPath');
  add('python3', 'python3 on PATH');
  return out;
}

function quote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** The shell command that installs nki-assist into an interpreter. */
export function installCommand(python: string): string {
  return `${quote(python)} -m pip install nki-assist`;
}

/** What to tell the user when no candidate has nki-assist. */
export function notFoundMessage(tried: Candidate[]): string {
  const first = tried.find((c) => c.python)?.python ?? 'python3';
  const list = tried.map((c) => `${c.python ?? c.command[0]} (${c.source})`).join(', ');
  return (
    `NKI Assist: no Python environment with nki-assist was found (tried ${list || 'nothing'}). ` +
    `Install it with \`${installCommand(first)}\`, or pick an interpreter that has it ` +
    '("Python: Select Interpreter" or the `nki-assist.server.pythonPath` setting).'
  );
}

/** Backwards-compatible helper: the first candidate's command line. */
export function serverCommand(serverPath?: string[], pythonPath?: string, defaultInterpreter?: string): string[] {
  return serverCandidates({ serverPath, pythonPath, defaultInterpreter }, {})[0].command;
}
