// Thin client: find a Python with nki-assist, launch `<python> -m nki_assist lsp` over stdio and
// forward editor state. All analysis lives in the Python server (lsp_server/).
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  TransportKind,
} from 'vscode-languageclient/node';
import { Candidate, installCommand, notFoundMessage, serverCandidates } from './command';
import { discoveryInputs, watchInterpreter } from './interpreter';
import { findServer } from './probe';
import { RUN_COMMAND, runMessage } from './run';

const SECTION = 'nki-assist';
const REVIEW_COMMAND = 'nki-assist.reviewPort';
let client: LanguageClient | undefined;
let output: vscode.LogOutputChannel | undefined;
let running: string | undefined; // the server command line of `client`

function settingsSnapshot(): unknown {
  // Sent as initializationOptions so the very first checks already use the user's settings.
  const cfg = vscode.workspace.getConfiguration(SECTION);
  return {
    target: cfg.get('target'),
    select: cfg.get('select'),
    ignore: cfg.get('ignore'),
    diagnostics: { debounceMs: cfg.get('diagnostics.debounceMs') },
    maxFileBytes: cfg.get('maxFileBytes'),
    execution: { enabled: vscode.workspace.isTrusted && cfg.get('execution.enabled') === true },
    review: { portSpec: cfg.get('review.portSpec'), outputDir: cfg.get('review.outputDir') },
    runCommand: vscode.workspace.isTrusted ? cfg.get('runCommand') : undefined,
    llm: { provider: cfg.get('llm.provider'), model: cfg.get('llm.model'), baseUrl: cfg.get('llm.baseUrl') },
  };
}

function createClient(command: string[]): LanguageClient {
  const [program, ...args] = command;
  const serverOptions: ServerOptions = { command: program, args, transport: TransportKind.stdio };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'python' },
      { scheme: 'untitled', language: 'python' },
      { scheme: 'file', language: 'cuda-cpp' },
      { scheme: 'untitled', language: 'cuda-cpp' },
      { scheme: 'file', pattern: '**/*.{cu,cuh}' },
    ],
    initializationOptions: { settings: settingsSnapshot() },
    outputChannel: output,
  };
  return new LanguageClient(SECTION, 'NKI Assist', serverOptions, clientOptions);
}

/** The server command: the first candidate interpreter that has nki-assist (see command.ts). */
async function resolveServer(): Promise<{ command?: string[]; tried: Candidate[] }> {
  const log = (msg: string) => output?.info(msg);
  const { inputs, vars } = await discoveryInputs(log);
  const tried = serverCandidates(inputs, vars);
  const found = await findServer(tried);
  if (found) {
    const version = found.version ? ` (nki-assist ${found.version})` : '';
    output?.info(`server from ${found.candidate.source}${version}: ${found.candidate.command.join(' ')}`);
    return { command: found.candidate.command, tried };
  }
  return { tried };
}

async function notFound(tried: Candidate[]): Promise<void> {
  const message = notFoundMessage(tried);
  output?.error(message);
  const python = tried.find((c) => c.python)?.python ?? 'python3';
  const choice = await vscode.window.showErrorMessage(message, 'Copy install command', 'Select Interpreter', 'Retry');
  if (choice === 'Copy install command') {
    await vscode.env.clipboard.writeText(installCommand(python));
  } else if (choice === 'Select Interpreter') {
    await vscode.commands.executeCommand('python.setInterpreter');
  } else if (choice === 'Retry') {
    await restart(true);
  }
}

let queue: Promise<void> = Promise.resolve();

/** Restart the server (serialized: settings and interpreter events may arrive together). Without
 *  `force`, a restart that would run the same command keeps the running server. */
function restart(force = true): Promise<void> {
  queue = queue.then(() => doRestart(force)).catch((err) => output?.error(`restart failed: ${err}`));
  return queue;
}

async function doRestart(force: boolean): Promise<void> {
  const { command, tried } = await resolveServer();
  const key = command?.join('\u0000');
  if (!force && client && key === running) {
    return; // the same interpreter: nothing to do
  }
  if (client) {
    await client.stop().catch(() => undefined);
    client = undefined;
    running = undefined;
  }
  if (!command) {
    void notFound(tried); // not awaited: the message waits for the user, later restarts must not
    return;
  }
  output?.info(`starting: ${command.join(' ')}`);
  client = createClient(command);
  running = key;
  try {
    await client.start();
  } catch (err) {
    void vscode.window.showErrorMessage(
      `NKI Assist: could not start the language server (${err}). Command: ${command.join(' ')}.`,
    );
  }
}

async function reviewCurrentPort(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!client || !editor) {
    void vscode.window.showWarningMessage('NKI Assist: open an NKI kernel first.');
    return;
  }
  // The server reports progress (cancellable) and opens the markdown itself.
  const result = await client.sendRequest(ExecuteCommandRequest.type, {
    command: REVIEW_COMMAND,
    arguments: [editor.document.uri.toString()],
  });
  if (result && typeof result === 'object' && (result as { ok?: boolean }).ok) {
    const r = result as { verdict?: string; findings?: number };
    void vscode.window.showInformationMessage(`NKI Assist: review done — verdict ${r.verdict}, ${r.findings} findings.`);
  }
}

async function runProgram(): Promise<void> {
  if (!client) {
    void vscode.window.showWarningMessage('NKI Assist: the language server is not running.');
    return;
  }
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'NKI Assist: running the program on the simulator' },
    () => client!.sendRequest(ExecuteCommandRequest.type, { command: RUN_COMMAND, arguments: [] }),
  );
  const m = runMessage(result);
  if (m) {
    void (m.level === 'info' ? vscode.window.showInformationMessage(m.text) : vscode.window.showWarningMessage(m.text));
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel('NKI Assist', { log: true });
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand('nki-assist.restartServer', () => restart(true)),
    vscode.commands.registerCommand('nki-assist.reviewCurrentPort', reviewCurrentPort),
    vscode.commands.registerCommand('nki-assist.runProgram', runProgram),
    vscode.workspace.onDidChangeConfiguration((e) => {
      // Other settings reach the server through workspace/configuration; these change the process.
      if (e.affectsConfiguration(`${SECTION}.server`) || e.affectsConfiguration('python.defaultInterpreterPath')) {
        void restart(false);
      }
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void restart(true)),
    // "Python: Select Interpreter": restart on the newly selected environment (if it changes the command)
    await watchInterpreter(() => void restart(false), (msg) => output?.info(msg)),
  );
  await restart(true);
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
