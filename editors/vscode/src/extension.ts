// Thin client: launch `<python> -m nki_assist lsp` over stdio and forward editor state.
// All analysis lives in the Python server (lsp_server/); this file only wires VS Code to it.
import * as vscode from 'vscode';
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  TransportKind,
} from 'vscode-languageclient/node';
import { serverCommand } from './command';

const SECTION = 'nki-assist';
const REVIEW_COMMAND = 'nki-assist.reviewPort';
let client: LanguageClient | undefined;
let output: vscode.LogOutputChannel | undefined;

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
    llm: { provider: cfg.get('llm.provider'), model: cfg.get('llm.model'), baseUrl: cfg.get('llm.baseUrl') },
  };
}

function createClient(): LanguageClient {
  const cfg = vscode.workspace.getConfiguration(SECTION);
  const python = vscode.workspace.getConfiguration('python').get<string>('defaultInterpreterPath');
  const [command, ...args] = serverCommand(cfg.get<string[]>('server.path'), cfg.get<string>('server.pythonPath'), python);
  output?.info(`starting: ${[command, ...args].join(' ')}`);
  const serverOptions: ServerOptions = { command, args, transport: TransportKind.stdio };
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

async function restart(): Promise<void> {
  if (client) {
    await client.stop().catch(() => undefined);
  }
  client = createClient();
  try {
    await client.start();
  } catch (err) {
    void vscode.window.showErrorMessage(
      `NKI Assist: could not start the language server (${err}). Install nki-assist into the Python ` +
        'environment named by `nki-assist.server.pythonPath` (pip install nki-assist).',
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

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel('NKI Assist', { log: true });
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand('nki-assist.restartServer', restart),
    vscode.commands.registerCommand('nki-assist.reviewCurrentPort', reviewCurrentPort),
    vscode.workspace.onDidChangeConfiguration((e) => {
      // Other settings reach the server through workspace/configuration; these change the process.
      if (e.affectsConfiguration(`${SECTION}.server`)) {
        void restart();
      }
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void restart()),
  );
  await restart();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
