// How the server is launched; kept free of the `vscode` module so it can be unit-tested with node.

/** The server command: `server.path` if set, else `<python> -m nki_assist lsp`. */
export function serverCommand(serverPath?: string[], pythonPath?: string, defaultInterpreter?: string): string[] {
  const explicit = (serverPath ?? []).filter((part) => part.trim() !== '');
  if (explicit.length > 0) {
    return explicit;
  }
  const python = [pythonPath, defaultInterpreter].find((p) => p && p.trim() !== '' && !p.includes('${')) ?? 'python3';
  return [python, '-m', 'nki_assist', 'lsp'];
}
