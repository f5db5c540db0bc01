// `memhint profile TARGET [options] [-- script args]`: runs the step profiler and prints the report.
// Exit codes: 0 profiled, 1 the profile failed (user error, OOM, crash, timeout), 2 bad usage,
// 128+N stopped by signal N (SIGINT 130, SIGTERM 143, SIGHUP 129). With --format json, stdout on every
// failure is a JSON object with `error: {kind, reason, message, ...}` (see jsonError).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { formatReport } from '../profiler/format';
import { describeFailure } from '../profiler/failure';
import { runDistributedCommand } from './profile-distributed';
import type { LauncherChoice } from '../profiler/distributed';
import { runProfile, type BackendChoice, type CudaPathChoice, type ProfileFailure, type ProfileOptions } from '../profiler/launcher';
import { removeStaleOutput, writeFileAtomic } from './atomic-write';
import { scanArgs, UsageError } from './step-args';

export const PROFILE_USAGE = `usage: memhint profile SCRIPT.py[::FUNCTION | :LINE] [options] [-- script args]

  SCRIPT.py::FUNCTION   run SCRIPT.py as __main__, each call of FUNCTION is one step
  SCRIPT.py:LINE        run SCRIPT.py, each iteration of the for/while loop on LINE is one step
  SCRIPT.py             each iteration of the training loop (the innermost loop reaching backward()
                        and .step()) is one step; without one, the whole script for --max-seconds
  SCRIPT.py --loop FILE:LINE
                        run SCRIPT.py, each iteration of the loop on LINE of FILE, a module of yours
                        that SCRIPT.py imports and runs, is one step

options:
  --setup NAME          import SCRIPT.py and call NAME() for FUNCTION's arguments instead of running it
  --warmup N            calls/iterations before measuring (default 1)
  --steps N             measured calls/iterations (default 3)
  --max-seconds S       whole-script mode (no loop found): stop after S seconds (default 30)
  --python PATH         interpreter with torch (default python3)
  --backend B           auto | cuda | cpu (default auto)
  --cuda-path P         cuda backend: auto | trace | dispatch (default auto: the allocator's own history
                        where torch has it, no Python per op; dispatch: exact per-storage figures)
  --format F            text | json (default text)
  --out FILE            write the report to FILE instead of stdout
  --budget SIZE         report the first line where live memory exceeds SIZE (e.g. 24GiB)
  --memory-limit SIZE   cap the child's address space SIZE above its size after importing torch
  --cuda-snapshot FILE  where to write the CUDA memory_viz snapshot (default: next to --out)
  --timeout S           stop the child after S seconds (default 600)
  --nproc-per-node N    run N ranks of a torch.distributed job, the harness in each (docs/distributed.md);
                        --warmup defaults to 2 there (DDP rebuilds its buckets in its second iteration)
  --launcher L          with --nproc-per-node: auto | torchrun | direct (default auto: torchrun on torch 2.x)
`;

/** Coarse error kinds of `--format json` output; `reason` keeps the launcher's finer one. */
export type JsonErrorKind =
  | 'usage'
  | 'torch-missing'
  | 'interpreter'
  | 'user-code'
  | 'timeout'
  | 'oom'
  | 'cancelled'
  | 'crash'
  | 'protocol'
  | 'output'
  | 'internal';

export function jsonErrorKind(kind: ProfileFailure['kind']): JsonErrorKind {
  switch (kind) {
    case 'bad_arguments':
      return 'usage';
    case 'torch_missing':
    case 'unsupported_torch':
      return 'torch-missing';
    case 'spawn':
      return 'interpreter';
    case 'missing_target':
    case 'target_not_called':
    case 'syntax_error':
    case 'script_exit':
    case 'user_exception':
    case 'unsupported_target':
      return 'user-code';
    case 'timeout':
    case 'oom':
    case 'cancelled':
    case 'crash':
    case 'protocol':
      return kind;
    default:
      return 'internal';
  }
}

function jsonError(kind: JsonErrorKind, message: string, failure?: ProfileFailure): Record<string, unknown> {
  return {
    kind,
    reason: failure?.kind ?? kind,
    message,
    location: failure?.location ?? null,
    traceback: failure?.traceback ?? null,
    exitCode: failure?.exitCode ?? null,
    signal: failure?.signal ?? null,
  };
}

function wantsJson(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  const own = end >= 0 ? args.slice(0, end) : args;
  return own.some((a, i) => a === '--format=json' || (a === '--format' && own[i + 1] === 'json'));
}

interface ParsedArgs {
  readonly options: ProfileOptions;
  readonly format: 'text' | 'json';
  readonly out: string | null;
  /** --nproc-per-node: null for the ordinary single-process profile. */
  readonly nproc: number | null;
  readonly launcher: LauncherChoice;
}

const RULES = {
  valued: new Set([
    '--setup', '--loop', '--warmup', '--steps', '--max-seconds', '--python', '--backend', '--cuda-path', '--format', '--out',
    '--budget', '--memory-limit', '--cuda-snapshot', '--timeout', '--nproc-per-node', '--launcher',
  ]),
  scriptArgs: true,
};

function parseArgs(args: readonly string[]): ParsedArgs {
  const scanned = scanArgs(args, RULES);
  const spec = scanned.stepTarget('missing target');
  const backend = scanned.choice<BackendChoice>('--backend', ['auto', 'cpu', 'cuda'], 'auto');
  const cudaPath = scanned.choice<CudaPathChoice>('--cuda-path', ['auto', 'trace', 'dispatch'], 'auto');
  const format = scanned.choice('--format', ['text', 'json'], 'text');
  const setup = scanned.string('--setup');
  if (setup !== null && spec.function === null) throw new UsageError('--setup needs a target SCRIPT.py::FUNCTION');
  const loop = loopInFile(scanned.string('--loop'), spec);
  const out = scanned.string('--out');
  const nproc = scanned.has('--nproc-per-node') ? scanned.int('--nproc-per-node', 1, 1) : null;
  const launcher = scanned.choice<LauncherChoice>('--launcher', ['auto', 'torchrun', 'direct'], 'auto');
  if (scanned.has('--launcher') && nproc === null) throw new UsageError('--launcher needs --nproc-per-node');
  const maxSeconds = scanned.seconds('--max-seconds');
  const timeout = scanned.seconds('--timeout') ?? Math.max(600, (maxSeconds ?? 0) + 120);
  const snapshot =
    scanned.string('--cuda-snapshot') ?? (out ? path.join(path.dirname(path.resolve(out)), 'memhint-cuda-snapshot.pickle') : null);
  return {
    format,
    out,
    nproc,
    launcher,
    options: {
      script: spec.script,
      function: spec.function,
      loopLine: loop?.line ?? spec.loopLine,
      loopFile: loop?.file ?? null,
      setup,
      warmup: scanned.int('--warmup', nproc === null ? 1 : 2, 0),
      steps: scanned.int('--steps', 3, 1),
      maxSeconds: spec.function === null ? (maxSeconds ?? 30) : maxSeconds,
      backend,
      cudaPath,
      python: scanned.string('--python') ?? 'python3',
      budgetBytes: scanned.size('--budget'),
      memoryLimitBytes: scanned.size('--memory-limit'),
      timeoutMs: timeout * 1000,
      scriptArgs: [...scanned.scriptArgs],
      cudaSnapshotPath: snapshot ? path.resolve(snapshot) : null,
    },
  };
}

/** `--loop FILE:LINE`: a loop in a module the script runs; only with a bare SCRIPT.py target. */
function loopInFile(value: string | null, spec: { readonly function: string | null; readonly loopLine: number | null }): { file: string; line: number } | null {
  if (value === null) return null;
  const match = /^(.+):([0-9]+)$/.exec(value);
  if (!match || Number(match[2]) < 1) throw new UsageError(`--loop expects FILE:LINE (got "${value}")`);
  if (spec.function !== null || spec.loopLine !== null) throw new UsageError('--loop FILE:LINE needs a bare SCRIPT.py target (not SCRIPT.py::FUNCTION or SCRIPT.py:LINE)');
  return { file: path.resolve(match[1]), line: Number(match[2]) };
}

export async function runProfileCommand(args: string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(PROFILE_USAGE);
    return 0;
  }
  const json = wantsJson(args);
  const fail = (kind: JsonErrorKind, message: string, code: number, failure?: ProfileFailure): number => {
    if (json) process.stdout.write(`${JSON.stringify({ error: jsonError(kind, message, failure) }, null, 2)}\n`);
    return code;
  };
  let parsed: ParsedArgs;
  try {
    parsed = parseArgs(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`memhint profile: ${error.message}\n\n${PROFILE_USAGE}`);
    return fail('usage', error.message, 2);
  }
  // --out: the previous report goes when the run starts (a failed or killed run never leaves it
  // looking like this run's), the new one appears whole or not at all (atomic-write.ts).
  if (parsed.out) {
    try {
      removeStaleOutput(parsed.out);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      process.stderr.write(`memhint profile: ${message}\n`);
      return fail('output', message, 2);
    }
  }
  try {
    return await profileParsed(parsed, fail);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`memhint profile: internal error: ${message}\n`);
    return fail('internal', message, 1);
  }
}

type Fail = (kind: JsonErrorKind, message: string, code: number, failure?: ProfileFailure) => number;

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const SIGNAL_NUMBERS: Record<(typeof STOP_SIGNALS)[number], number> = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1 };

async function profileParsed(parsed: ParsedArgs, fail: Fail): Promise<number> {
  const script = path.resolve(parsed.options.script);
  if (!fs.existsSync(script)) {
    process.stderr.write(`memhint profile: script not found: ${script}\n`);
    return fail('usage', `script not found: ${script}`, 1);
  }
  if (parsed.nproc !== null) {
    return runDistributedCommand({ ...parsed.options, nprocPerNode: parsed.nproc, launcher: parsed.launcher }, parsed.format, parsed.out);
  }
  // The child runs in its own process group, so Ctrl-C, a terminal hang-up or a kill must be passed on:
  // the launcher then ends every process of the run before this one exits.
  const abort = new AbortController();
  let stoppedBy: (typeof STOP_SIGNALS)[number] | null = null;
  const handlers = STOP_SIGNALS.map((name) => {
    const handler = (): void => {
      stoppedBy ??= name;
      abort.abort();
    };
    process.on(name, handler);
    return [name, handler] as const;
  });
  const outcome = await runProfile(parsed.options, {
    // The user's prints go to stderr so that stdout carries only the report.
    onStdout: (chunk) => process.stderr.write(chunk),
    onStderr: (chunk) => process.stderr.write(chunk),
    signal: abort.signal,
  }).finally(() => {
    for (const [name, handler] of handlers) process.removeListener(name, handler);
  });
  if (outcome.failure?.kind === 'cancelled') {
    const by = stoppedBy ?? 'SIGINT';
    process.stderr.write(`memhint profile: cancelled (${by})\n`);
    return fail('cancelled', `the profile was stopped by ${by}`, 128 + SIGNAL_NUMBERS[by], outcome.failure);
  }
  const failure = outcome.failure;
  if (outcome.report) {
    // A partial report (OOM, a failure after measured steps) carries the error in the same object.
    const withError = failure && parsed.format === 'json' ? { ...outcome.report, error: jsonError(jsonErrorKind(failure.kind), failure.message, failure) } : outcome.report;
    const rendered = parsed.format === 'json' ? `${JSON.stringify(withError, null, 2)}\n` : formatReport(outcome.report);
    if (parsed.out) {
      try {
        writeFileAtomic(parsed.out, rendered);
      } catch (error) {
        const message = `cannot write ${parsed.out}: ${error instanceof Error ? error.message : String(error)}`;
        process.stderr.write(`memhint profile: ${message}\n`);
        return fail('output', message, 1);
      }
    } else process.stdout.write(rendered);
    if (failure) {
      process.stderr.write(describeFailure(failure));
      return parsed.out ? fail(jsonErrorKind(failure.kind), failure.message, 1, failure) : 1;
    }
    return 0;
  }
  if (failure) {
    process.stderr.write(describeFailure(failure));
    return fail(jsonErrorKind(failure.kind), failure.message, 1, failure);
  }
  return 0;
}
