// The inputs of interpreter discovery as VS Code knows them: the Python extension's selected
// interpreter (with change events), the settings, and the values `${...}` variables expand to.
import * as os from 'node:os';
import * as vscode from 'vscode';
import { PythonExtension } from '@vscode/python-extension';
import { Inputs, Variables } from './command';

const SECTION = 'nki-assist';

async function pythonApi(log: (msg: string) => void): Promise<PythonExtension | undefined> {
  if (!vscode.extensions.getExtension('ms-python.python')) {
    return undefined; // not installed: the settings and python3 remain
  }
  try {
    return await PythonExtension.api();
  } catch (err) {
    log(`Python extension unavailable: ${err}`);
    return undefined;
  }
}

/** The executable of the interpreter selected for `resource` in the Python extension. */
async function activeInterpreter(api: PythonExtension | undefined, resource: vscode.Uri | undefined) {
  if (!api) {
    return undefined;
  }
  const envPath = api.environments.getActiveEnvironmentPath(resource);
  const resolved = await api.environments.resolveEnvironment(envPath).catch(() => undefined);
  return resolved?.executable.uri?.fsPath ?? envPath.path;
}

export function variables(folder: vscode.WorkspaceFolder | undefined): Variables {
  const folders: Record<string, string> = {};
  for (const f of vscode.workspace.workspaceFolders ?? []) {
    folders[f.name] = f.uri.fsPath;
  }
  return { workspaceFolder: folder?.uri.fsPath, workspaceFolders: folders, userHome: os.homedir(), env: process.env };
}

export async function discoveryInputs(log: (msg: string) => void): Promise<{ inputs: Inputs; vars: Variables }> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  const cfg = vscode.workspace.getConfiguration(SECTION, folder);
  const python = vscode.workspace.getConfiguration('python', folder);
  const api = await pythonApi(log);
  return {
    inputs: {
      serverPath: cfg.get<string[]>('server.path'),
      pythonPath: cfg.get<string>('server.pythonPath'),
      activeInterpreter: await activeInterpreter(api, folder?.uri),
      defaultInterpreter: python.get<string>('defaultInterpreterPath'),
    },
    vars: variables(folder),
  };
}

/** Calls `onChange` when the user selects another interpreter in the Python extension. */
export async function watchInterpreter(onChange: () => void, log: (msg: string) => void): Promise<vscode.Disposable> {
  const api = await pythonApi(log);
  if (!api) {
    return new vscode.Disposable(() => undefined);
  }
  return api.environments.onDidChangeActiveEnvironmentPath(() => onChange());
}
