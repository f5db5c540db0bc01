// Asks an interpreter once what it has (Python and torch versions, CUDA), so the notification and the
// status bar can name it and a missing torch is said before the harness starts. No `vscode` here.
import { execFile, type ExecFileException } from 'node:child_process';

export interface InterpreterInfo {
  /** What was asked for (the setting's path, `python3` ...). */
  readonly requested: string;
  /** sys.executable, or null when the interpreter did not run. */
  readonly executable: string | null;
  readonly pythonVersion: string | null;
  /** torch.__version__, or null when torch cannot be imported. */
  readonly torchVersion: string | null;
  readonly cudaAvailable: boolean | null;
  /** Why it could not be used: the interpreter did not start, or torch does not import. */
  readonly problem: { readonly kind: 'spawn' | 'torch_missing' | 'probe'; readonly message: string } | null;
}

// Prints one JSON line; torch is imported inside try so a missing torch is data, not a crash.
const PROBE = [
  'import json, sys',
  'out = {"executable": sys.executable, "python": "%d.%d.%d" % tuple(sys.version_info[:3])}',
  'try:',
  '    import torch',
  '    out["torch"] = str(torch.__version__)',
  '    out["cuda"] = bool(torch.cuda.is_available())',
  'except BaseException as e:',
  '    out["torchError"] = "%s: %s" % (type(e).__name__, e)',
  'sys.stdout.write(json.dumps(out))',
].join('\n');

/** Importing torch cold can take seconds on a network file system. */
const PROBE_TIMEOUT_MS = 60_000;

export type ProbeRunner = (python: string, args: readonly string[], timeoutMs: number) => Promise<{ stdout: string; error: ExecFileException | null; stderr: string }>;

export const execProbe: ProbeRunner = (python, args, timeoutMs) =>
  new Promise((resolve) => {
    execFile(python, [...args], { timeout: timeoutMs, encoding: 'utf8', env: { ...process.env, PYTHONIOENCODING: 'utf-8' }, windowsHide: true }, (error, stdout, stderr) =>
      resolve({ stdout, stderr, error }),
    );
  });

/** Parses the probe's output; exported for tests. */
export function interpretProbe(requested: string, stdout: string, error: ExecFileException | null, stderr: string): InterpreterInfo {
  const none = { requested, executable: null, pythonVersion: null, torchVersion: null, cudaAvailable: null };
  if (error !== null && (error.code === 'ENOENT' || error.code === 'EACCES')) {
    return { ...none, problem: { kind: 'spawn', message: `cannot run ${requested}: ${error.code === 'ENOENT' ? 'no such file' : 'permission denied'}` } };
  }
  let parsed: Record<string, unknown> | null = null;
  try {
    const value: unknown = JSON.parse(stdout.trim());
    if (typeof value === 'object' && value !== null) parsed = value as Record<string, unknown>;
  } catch {
    parsed = null;
  }
  if (parsed === null) {
    const why = error !== null ? (error.killed ? 'timed out' : error.message.split('\n')[0]) : 'unreadable output';
    const tail = stderr.trim().split('\n').slice(-1)[0] ?? '';
    return { ...none, problem: { kind: 'probe', message: `could not query ${requested}: ${why}${tail ? ` (${tail})` : ''}` } };
  }
  const str = (k: string): string | null => (typeof parsed[k] === 'string' ? parsed[k] : null);
  const torchVersion = str('torch');
  return {
    requested,
    executable: str('executable'),
    pythonVersion: str('python'),
    torchVersion,
    cudaAvailable: typeof parsed.cuda === 'boolean' ? parsed.cuda : null,
    problem: torchVersion === null ? { kind: 'torch_missing', message: `torch is not installed for ${requested} (${str('torchError') ?? 'import failed'})` } : null,
  };
}

/**
 * Probes interpreters once each. Only usable answers are cached: after "torch is missing" the user
 * installs it or picks another interpreter, and the next run must see that without a reload.
 */
export class InterpreterProbe {
  private readonly cache = new Map<string, Promise<InterpreterInfo>>();

  constructor(private readonly run: ProbeRunner = execProbe) {}

  probe(python: string): Promise<InterpreterInfo> {
    let pending = this.cache.get(python);
    if (pending === undefined) {
      pending = this.run(python, ['-c', PROBE], PROBE_TIMEOUT_MS).then(({ stdout, error, stderr }) => interpretProbe(python, stdout, error, stderr));
      this.cache.set(python, pending);
      void pending.then((info) => {
        if (info.problem !== null) this.cache.delete(python);
      });
    }
    return pending;
  }
}

/** `/usr/bin/python3 · Python 3.11.2 · torch 2.13.0` for the notification and the tooltip. */
export function describeInterpreter(info: InterpreterInfo, display: string): string {
  const parts = [display];
  if (info.pythonVersion !== null) parts.push(`Python ${info.pythonVersion}`);
  if (info.torchVersion !== null) parts.push(`torch ${info.torchVersion}${info.cudaAvailable ? ' (CUDA)' : ''}`);
  return parts.join(' · ');
}
