// Does an interpreter have nki-assist? Node only (no `vscode`), so it is unit-tested with node.
import { execFile } from 'node:child_process';
import { Candidate } from './command';

export interface Found {
  candidate: Candidate;
  /** nki-assist's version, when the candidate was probed. */
  version?: string;
}

export type Probe = (python: string) => Promise<string | undefined>;

const PROBE = 'import nki_assist, lsp_server; print(nki_assist.__version__)';

/** The nki-assist version importable by `python`, or undefined (missing interpreter or package). */
export function probePython(python: string, timeoutMs = 15000): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(python, ['-c', PROBE], { timeout: timeoutMs, windowsHide: true }, (error, stdout) => {
      const version = stdout?.toString().trim();
      resolve(error || !version ? undefined : version.split(/\r?\n/).pop());
    });
  });
}

/** The first candidate that can run the server: `server.path` is trusted as given, interpreters
 *  are probed in order. Undefined when none has nki-assist. */
export async function findServer(candidates: Candidate[], probe: Probe = probePython): Promise<Found | undefined> {
  for (const candidate of candidates) {
    if (!candidate.python) {
      return { candidate };
    }
    const version = await probe(candidate.python);
    if (version) {
      return { candidate, version };
    }
  }
  return undefined;
}
