// Launches the bundled Python harness in a child process and turns its protocol messages into an outcome.
// The protocol travels on fd 3 (stdio ['ignore', 'pipe', 'pipe', 'pipe']), so the user's own prints on
// stdout/stderr never mix with it; they are forwarded through hooks.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import {
  ForgedMessageError,
  LineDecoder,
  ProtocolError,
  parseMessage,
  type HarnessErrorKind,
  type HarnessMessage,
  type HelloMessage,
} from './protocol';
import type { OsTimeline, ProfileReport, SourceLocation } from './report';
import { startOsTimelineSampler } from './os-timeline';
import { RUN_ID_ENV, killRunTree, startTimer } from './processTree';

/** Set by the launcher, removed from os.environ by the harness before user code runs (protocol.py). */
const NONCE_ENV = 'MEMHINT_PROTOCOL_NONCE';
const LAUNCHER_PID_ENV = 'MEMHINT_LAUNCHER_PID';
/** The harness's exit status when user code closed or replaced its protocol descriptor (protocol.py). */
const EXIT_CHANNEL_LOST = 87;
const LOST_PREFIX = 'memhint-harness: protocol channel lost: ';

export type BackendChoice = 'auto' | 'cpu' | 'cuda';
export type CudaPathChoice = 'auto' | 'trace' | 'dispatch';

export interface ProfileOptions {
  readonly script: string;
  /** Step function (`train_step`, `Trainer.step`); null profiles the whole script. */
  readonly function: string | null;
  readonly setup: string | null;
  /** Without a function: the header line of the loop whose iterations are the steps; null or absent:
   *  the harness finds the training loop, else profiles the whole script. */
  readonly loopLine?: number | null;
  /** With loopLine: the loop is in this file, a module of the user's that `script` imports and runs
   *  (`memhint profile run.py --loop trainlib/trainer.py:19`); null/absent: the loop is in the script. */
  readonly loopFile?: string | null;
  readonly warmup: number;
  readonly steps: number;
  readonly maxSeconds: number | null;
  readonly backend: BackendChoice;
  /** cuda backend: the allocator's own history (trace) or the Python dispatch mode; absent: auto. */
  readonly cudaPath?: CudaPathChoice;
  readonly python: string;
  readonly budgetBytes: number | null;
  /** Address-space headroom for the child (RLIMIT_AS above its size after importing torch). */
  readonly memoryLimitBytes: number | null;
  readonly timeoutMs: number;
  readonly scriptArgs: readonly string[];
  readonly cwd?: string;
  readonly cudaSnapshotPath?: string | null;
  readonly env?: NodeJS.ProcessEnv;
  /** Keyword arguments for the --setup function (JSON values). */
  readonly setupArgs?: Readonly<Record<string, unknown>> | null;
  /** More harness options, placed before the script arguments (`memhint predict` passes `--predict ...`). */
  readonly extraArgs?: readonly string[];
}

/** A process-memory sampler started on the child (see src/sampler); its series becomes `timeline.os`. */
export interface ProcessSampler {
  stop(): Promise<OsTimeline | undefined> | OsTimeline | undefined;
}

export interface RunnerHooks {
  /** Hook point for the native sampler: called once, right after spawn, with the child's pid. */
  readonly onSpawn?: (pid: number) => ProcessSampler | undefined;
  readonly onMessage?: (message: HarnessMessage) => void;
  /** The user's stdout / stderr, as the script wrote them. */
  readonly onStdout?: (chunk: Buffer) => void;
  readonly onStderr?: (chunk: Buffer) => void;
  /** Aborting ends the child and every process of the run (Ctrl-C in the CLI); the outcome is `cancelled`. */
  readonly signal?: AbortSignal;
}

export type FailureKind = HarnessErrorKind | 'spawn' | 'crash' | 'timeout' | 'protocol' | 'cancelled';

export interface ProfileFailure {
  readonly kind: FailureKind;
  readonly message: string;
  readonly traceback: string | null;
  readonly location: SourceLocation | null;
  readonly exitCode: number | null;
  readonly signal: string | null;
  /** Last lines the child wrote to stderr (the user's or the interpreter's). */
  readonly stderrTail: string;
}

export interface ProfileOutcome {
  readonly hello: HelloMessage | null;
  /** Present on success, and on failures that still measured something (OOM, partial runs). */
  readonly report: ProfileReport | null;
  readonly failure: ProfileFailure | null;
}

const STDERR_TAIL_BYTES = 8192;

type SamplerFactory = (pid: number) => ProcessSampler | undefined;
let defaultSamplerFactory: SamplerFactory | undefined = (pid) => startOsTimelineSampler(pid);

/**
 * SAMPLER HOOK POINT. src/sampler registers its factory here; every run whose hooks give no `onSpawn`
 * then starts it on the child's pid right after spawn and attaches its series as `report.timeline.os`.
 */
export function registerDefaultSampler(factory: SamplerFactory | undefined): void {
  defaultSamplerFactory = factory;
}

/** Finds the directory that contains the `memhint_harness` package (bundled next to dist/ and out/). */
export function findHarnessRoot(start: string = __dirname): string {
  const fromEnv = process.env.MEMHINT_HARNESS_DIR;
  if (fromEnv && fs.existsSync(path.join(fromEnv, 'memhint_harness', '__main__.py'))) return fromEnv;
  let dir = start;
  for (;;) {
    const candidate = path.join(dir, 'python');
    if (fs.existsSync(path.join(candidate, 'memhint_harness', '__main__.py'))) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`cannot find the bundled python/memhint_harness above ${start}`);
    dir = parent;
  }
}

export function harnessArgs(options: ProfileOptions): string[] {
  const args = ['-m', 'memhint_harness', '--protocol-fd', '3', '--script', path.resolve(options.cwd ?? '.', options.script)];
  if (options.function) args.push('--function', options.function);
  else if (options.loopLine && options.loopFile) args.push('--loop', `${path.resolve(options.cwd ?? '.', options.loopFile)}:${options.loopLine}`);
  else args.push('--loop', options.loopLine ? String(options.loopLine) : 'auto');
  if (options.setup) args.push('--setup', options.setup);
  args.push('--warmup', String(options.warmup), '--steps', String(options.steps), '--backend', options.backend);
  if (options.cudaPath && options.cudaPath !== 'auto') args.push('--cuda-path', options.cudaPath);
  if (options.maxSeconds !== null) args.push('--max-seconds', String(options.maxSeconds));
  if (options.budgetBytes !== null) args.push('--budget', String(Math.floor(options.budgetBytes)));
  if (options.memoryLimitBytes !== null) args.push('--memory-limit', String(Math.floor(options.memoryLimitBytes)));
  if (options.cudaSnapshotPath) args.push('--cuda-snapshot', options.cudaSnapshotPath);
  if (options.setupArgs && Object.keys(options.setupArgs).length > 0) args.push('--setup-args', JSON.stringify(options.setupArgs));
  if (options.extraArgs) args.push(...options.extraArgs);
  if (options.scriptArgs.length > 0) args.push('--', ...options.scriptArgs);
  return args;
}

export async function runProfile(options: ProfileOptions, hooks: RunnerHooks = {}): Promise<ProfileOutcome> {
  const root = findHarnessRoot();
  const baseEnv = options.env ?? process.env;
  // The run marker finds every process of the run at the end, setsid() escapees too; the nonce marks
  // the harness's own protocol lines, so lines forged by the user's code are not believed.
  const runId = randomBytes(16).toString('hex');
  const nonce = randomBytes(16).toString('hex');
  const env: NodeJS.ProcessEnv = {
    ...baseEnv,
    PYTHONPATH: baseEnv.PYTHONPATH ? `${root}${path.delimiter}${baseEnv.PYTHONPATH}` : root,
    PYTHONUNBUFFERED: '1',
    [RUN_ID_ENV]: runId,
    [NONCE_ENV]: nonce,
    [LAUNCHER_PID_ENV]: String(process.pid),
  };
  const child = spawn(options.python, harnessArgs(options), {
    cwd: options.cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    // Own process group, so a timeout also ends the user's subprocesses (DataLoader workers).
    detached: process.platform !== 'win32',
  });

  let hello: HelloMessage | null = null;
  let report: ProfileReport | null = null;
  let harnessError: ProfileFailure | null = null;
  let protocolError: string | null = null;
  let forgedLines = 0;
  let spawnError: Error | null = null;
  let timedOut = false;
  let stderrTail = '';

  const startSampler = hooks.onSpawn ?? defaultSamplerFactory;
  let sampler: ProcessSampler | undefined;
  try {
    sampler = child.pid !== undefined ? startSampler?.(child.pid) : undefined;
  } catch {
    sampler = undefined; // a sampler that cannot start must not cost the profile
  }

  child.stdout?.on('data', (chunk: Buffer) => hooks.onStdout?.(chunk));
  child.stderr?.on('data', (chunk: Buffer) => {
    stderrTail = (stderrTail + chunk.toString('utf-8')).slice(-STDERR_TAIL_BYTES);
    hooks.onStderr?.(chunk);
  });

  const decoder = new LineDecoder();
  const protocolPipe = child.stdio[3] as Readable | null;
  const protocolDone = new Promise<void>((resolve) => {
    if (!protocolPipe) return resolve();
    protocolPipe.on('data', (chunk: Buffer) => {
      for (const line of decoder.push(chunk)) {
        if (protocolError) continue;
        let message: HarnessMessage;
        try {
          message = parseMessage(line, nonce);
        } catch (error) {
          if (error instanceof ForgedMessageError) {
            forgedLines++;
            continue;
          }
          protocolError = error instanceof ProtocolError ? error.message : String(error);
          continue;
        }
        if (message.type === 'hello') hello = message;
        else if (message.type === 'result') report = message.report;
        else if (message.type === 'error') {
          harnessError = { ...message, exitCode: null, signal: null, stderrTail: '' };
        }
        hooks.onMessage?.(message);
      }
    });
    protocolPipe.on('error', () => resolve());
    protocolPipe.on('close', () => resolve());
    protocolPipe.on('end', () => {
      const rest = decoder.end();
      if (rest.trim() && !protocolError) {
        protocolError = `truncated protocol output: the harness stopped in the middle of a message (${rest.length} bytes without a newline)`;
      }
      resolve();
    });
  });

  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('error', (error) => {
      spawnError = error;
      resolve({ code: null, signal: null });
    });
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });

  const stopTimer = startTimer(options.timeoutMs, () => {
    timedOut = true;
    killRunTree(child.pid, runId);
  });
  let cancelled = false;
  const cancel = (): void => {
    cancelled = true;
    killRunTree(child.pid, runId);
  };
  if (hooks.signal?.aborted) cancel();
  else hooks.signal?.addEventListener('abort', cancel, { once: true });
  const { code, signal } = await exited;
  stopTimer();
  hooks.signal?.removeEventListener('abort', cancel);
  // The run ends with the harness: what the user's script left running (background children, setsid()
  // daemons) is ended too, and the wait is for the harness's exit and its protocol, never for the
  // user's stdout/stderr, which such children may hold open forever.
  killRunTree(child.pid, runId);
  await Promise.race([protocolDone, new Promise((r) => setTimeout(r, 2000))]);
  await Promise.race([
    Promise.all([child.stdout, child.stderr].map((s) => (s && !s.closed ? new Promise((r) => s.once('close', r)) : Promise.resolve()))),
    new Promise((r) => setTimeout(r, 200)),
  ]);
  for (const stream of [child.stdout, child.stderr, protocolPipe]) stream?.destroy();

  let osSeries: OsTimeline | undefined;
  try {
    osSeries = sampler ? await sampler.stop() : undefined;
  } catch {
    osSeries = undefined;
  }
  const finalReport: ProfileReport | null =
    report !== null && osSeries ? withOsTimeline(report, osSeries) : report;

  const base = { exitCode: code, signal: signal ?? null, stderrTail, traceback: null, location: null };
  let failure: ProfileFailure | null = null;
  const se = spawnError as Error | null;
  if (se) {
    failure = { ...base, kind: 'spawn', message: `cannot start ${options.python}: ${se.message}` };
  } else if (cancelled) {
    failure = { ...base, kind: 'cancelled', message: 'the profile was cancelled' };
  } else if (timedOut) {
    failure = { ...base, kind: 'timeout', message: `the profile did not finish within ${Math.round(options.timeoutMs / 1000)} s and was stopped` };
  } else if (code === EXIT_CHANNEL_LOST && stderrTail.includes(LOST_PREFIX)) {
    const line = stderrTail.slice(stderrTail.lastIndexOf(LOST_PREFIX)).split('\n')[0];
    failure = { ...base, kind: 'protocol', message: `the profiled code took over the profiler's protocol channel: ${line.slice(LOST_PREFIX.length)}` };
  } else if (protocolError) {
    failure = { ...base, kind: 'protocol', message: protocolError };
  } else if (harnessError) {
    failure = { ...(harnessError as ProfileFailure), exitCode: code, signal: signal ?? null, stderrTail };
  } else if (code !== 0) {
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    failure = { ...base, kind: 'crash', message: `the Python interpreter ${how} without reporting an error` };
  } else if (report === null) {
    failure = { ...base, kind: 'protocol', message: 'the harness exited without sending a result' };
  }
  const trusted = forgedLines > 0 && finalReport !== null ? withNote(finalReport, `${forgedLines} protocol line(s) without this run's nonce were ignored (written by the profiled code, not by memhint)`) : finalReport;
  return { hello, report: failure?.kind === 'protocol' ? null : trusted, failure };
}

function withOsTimeline(report: ProfileReport, os: OsTimeline): ProfileReport {
  // The sampler's clock starts at spawn; move its times onto the harness clock (timeline.originEpochMs).
  const shift = os.startedAtEpochMs !== undefined ? os.startedAtEpochMs - report.timeline.originEpochMs : 0;
  const aligned = shift === 0 ? os : { ...os, t: os.t.map((t) => Math.round((t + shift) * 100) / 100) };
  return { ...report, timeline: { ...report.timeline, os: aligned } };
}

function withNote(report: ProfileReport, note: string): ProfileReport {
  return { ...report, notes: [...report.notes, note] };
}
