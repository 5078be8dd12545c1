// The "Run program on the simulator" command's pure parts (no `vscode` module, so node can unit-test them).

/** The server's executeCommand for `nki-assist run` of the configured program. */
export const RUN_COMMAND = 'nki-assist.runCommand';

export interface RunResult {
  ok?: boolean;
  message?: string;
  findings?: number;
  files?: string[];
}

/**
 * What the client says after a run: the server's line and the diagnostics it published. Undefined when
 * the server refused or failed the run: it has shown its own warning (window/showMessage) already.
 */
export function runMessage(result: unknown): { level: 'info' | 'warning'; text: string } | undefined {
  if (!result || typeof result !== 'object') {
    return { level: 'warning', text: 'NKI Assist: the server gave no result for the run.' };
  }
  const r = result as RunResult;
  if (!r.ok) {
    return undefined;
  }
  const n = r.findings ?? 0;
  const files = r.files?.length ?? 0;
  return {
    level: 'info',
    text: `${r.message ?? 'NKI Assist: run finished.'} (${n} diagnostic${n === 1 ? '' : 's'} in ${files} file${files === 1 ? '' : 's'})`,
  };
}
