// Launches a step profile on N ranks of a torch.distributed job and collects one outcome per rank.
// Every rank runs the harness (python -m memhint_harness.distributed) and writes its protocol messages to
// its own file in a private temporary directory (rank-R.jsonl), plus its pid (rank-R.pid) as soon as it
// starts, so that memhint can end every rank's process group whoever started it.
//
// Launchers: torch 2.x goes through `python -m torch.distributed.run --standalone` (torchrun). Torch 1.x's
// elastic agent crashes on Python 3.11 (Debian 12's torch 1.13), so there memhint starts the N ranks
// itself with the env:// variables torchrun would set (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE,
// LOCAL_RANK, ...). Either way, when one rank fails the others are stopped: a peer blocked in a collective
// would otherwise wait for the backend's timeout (30 minutes by default).
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { findHarnessRoot, harnessArgs, type ProfileOptions } from './launcher';
import { ProtocolError, parseMessage, type ErrorMessage, type HelloMessage, type ProgressMessage } from './protocol';
import type { ProfileReport, SourceLocation } from './report';

export type LauncherChoice = 'auto' | 'torchrun' | 'direct';

export interface DistributedOptions extends ProfileOptions {
  readonly nprocPerNode: number;
  readonly launcher: LauncherChoice;
}

export interface DistributedHooks {
  /** Output of the ranks (and of torchrun), as written. */
  readonly onOutput?: (chunk: Buffer) => void;
  /** Aborting ends every rank (Ctrl-C in the CLI); the outcome is `cancelled`. */
  readonly signal?: AbortSignal;
}

/** What memhint knows about one DistributedDataParallel the rank built (python/memhint_harness/distributed.py). */
export interface DdpInfo {
  readonly location: SourceLocation | null;
  readonly parameters?: number;
  /** Gradient bucket bytes the reducer holds (all trainable parameters' gradients, flat). */
  readonly bucketBytes?: number;
  readonly bucketCapBytes?: number;
  readonly gradientAsBucketView?: boolean;
  readonly error?: string;
}

/** One FSDP unit the rank built (python/memhint_harness/distributed.py): a FullyShardedDataParallel instance
 * holding parameters, or one `fully_shard(module)` call. */
export interface FsdpUnitInfo {
  readonly api: 'FullyShardedDataParallel' | 'fully_shard';
  /** The user's line that wrapped the model (the outermost FSDP(...) or this fully_shard(...) call). */
  readonly location: SourceLocation | null;
  readonly module?: string;
  /** FSDP1: the unit's qualified name in the model (as the collectives name it). */
  readonly name?: string | null;
  readonly strategy?: string | null;
  readonly parameters?: number;
  /** The unit's parameters, unsharded: what FSDP all-gathers for its forward and backward. */
  readonly fullBytes?: number;
  /** The all-gathered buffer (the flat parameter padded to a multiple of the world size, FSDP1). */
  readonly gatheredBytes?: number;
  /** This rank's shard of the unit's parameters (between forward and backward, what stays). */
  readonly shardBytes?: number;
  readonly error?: string;
}

/** One all-gather or reduce-scatter the rank issued (python/memhint_harness/collectives.py). */
export interface CollectiveCall {
  readonly op: 'all_gather' | 'reduce_scatter';
  /** The full-size buffer: the gathered output of an all-gather, the unsharded input of a reduce-scatter. */
  readonly bytes?: number;
  /** This rank's side of it: the shard sent (all-gather) or received (reduce-scatter). */
  readonly shardBytes?: number;
  readonly phase?: 'forward' | 'backward';
  /** The user's line that ran the collective's unit (`out = model(x)`, `loss.backward()`). */
  readonly location?: SourceLocation | null;
  /** The FSDP unit it served: its module's class and qualified name in the model. */
  readonly unit?: { readonly module: string; readonly name: string | null } | null;
  /** The profiled step that issued it (its index); null in a warmup step or outside the steps. */
  readonly step?: number | null;
  /** Issued by a warmup step. */
  readonly warmup?: boolean;
  readonly error?: string;
}

export type RankStatus =
  | 'ok'
  /** The harness reported an error (kind in `error`): the user's exception, an OOM, a bad target. */
  | 'failed'
  /** Stopped by memhint or torchrun because another rank failed. */
  | 'stopped'
  | 'timeout'
  | 'cancelled'
  /** Exited without a report or an error (killed by a signal, crashed in native code). */
  | 'crash'
  /** Its protocol file is not valid (see `protocolError`). */
  | 'protocol';

export interface RankOutcome {
  readonly rank: number;
  readonly status: RankStatus;
  readonly hello: HelloMessage | null;
  readonly report: ProfileReport | null;
  readonly error: ErrorMessage | null;
  /** Last progress message: how far a rank that failed or hung had got. */
  readonly lastProgress: ProgressMessage | null;
  readonly protocolError: string | null;
  readonly ddp: readonly DdpInfo[];
  readonly fsdp?: readonly FsdpUnitInfo[];
  /** Every all-gather and reduce-scatter of the run (warmup included), in order. */
  readonly collectives?: readonly CollectiveCall[];
  /** When the rank last wrote to its channel (epoch ms): orders failures, the first is the likely cause. */
  readonly lastWriteEpochMs: number | null;
}

export interface DistributedOutcome {
  readonly launcher: 'torchrun' | 'direct';
  readonly worldSize: number;
  readonly torchVersion: string | null;
  readonly ranks: readonly RankOutcome[];
  /** Set when the job as a whole did not run: interpreter missing, launcher failed before any rank. */
  readonly launchError: string | null;
  readonly timedOut: boolean;
  readonly cancelled: boolean;
  /** Last output of the launcher and ranks, for failures that left no rank report. */
  readonly outputTail: string;
}

const OUTPUT_TAIL_BYTES = 8192;

/** The harness options of one rank: the ordinary ones without the module and the inherited-fd channel. */
export function rankHarnessArgs(options: ProfileOptions, reportDir: string): string[] {
  const args = harnessArgs(options);
  const out: string[] = ['-m', 'memhint_harness.distributed', '--report-dir', reportDir];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '-m' && args[i + 1] === 'memhint_harness') i++;
    else if (args[i] === '--protocol-fd') i++;
    else out.push(args[i]);
  }
  return out;
}

/** torch's version from its package metadata, without importing torch (fast); null when not installed. */
export function probeTorchVersion(python: string, env: NodeJS.ProcessEnv): Promise<string | null> {
  const code = "import importlib.metadata as m\ntry:\n print(m.version('torch'))\nexcept Exception:\n print('')";
  return new Promise((resolve) => {
    const child = spawn(python, ['-c', code], { env, stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf-8')));
    child.on('error', () => resolve(null));
    child.on('exit', () => resolve(out.trim() || null));
  });
}

export function chooseLauncher(choice: LauncherChoice, torchVersion: string | null): 'torchrun' | 'direct' {
  if (choice !== 'auto') return choice;
  const major = torchVersion ? Number.parseInt(torchVersion, 10) : NaN;
  return Number.isFinite(major) && major >= 2 ? 'torchrun' : 'direct';
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function runDistributedProfile(options: DistributedOptions, hooks: DistributedHooks = {}): Promise<DistributedOutcome> {
  const world = options.nprocPerNode;
  const root = findHarnessRoot();
  const baseEnv = options.env ?? process.env;
  const env: NodeJS.ProcessEnv = {
    ...baseEnv,
    PYTHONPATH: baseEnv.PYTHONPATH ? `${root}${path.delimiter}${baseEnv.PYTHONPATH}` : root,
    PYTHONUNBUFFERED: '1',
  };
  const torchVersion = await probeTorchVersion(options.python, env);
  const launcher = chooseLauncher(options.launcher, torchVersion);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-ranks-'));
  let outputTail = '';
  const onOutput = (chunk: Buffer): void => {
    outputTail = (outputTail + chunk.toString('utf-8')).slice(-OUTPUT_TAIL_BYTES);
    hooks.onOutput?.(chunk);
  };
  const children: ChildProcess[] = [];
  const exits: Promise<number | null>[] = [];
  let launchError: string | null = null;
  const spawnOne = (args: string[], childEnv: NodeJS.ProcessEnv): ChildProcess => {
    const child = spawn(options.python, args, { cwd: options.cwd, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    child.stdout?.on('data', onOutput);
    child.stderr?.on('data', onOutput);
    children.push(child);
    exits.push(
      new Promise((resolve) => {
        child.on('error', (error) => {
          launchError ??= `cannot start ${options.python}: ${error.message}`;
          resolve(null);
        });
        child.on('exit', (code) => resolve(code));
      }),
    );
    return child;
  };

  const rankArgs = rankHarnessArgs(options, dir);
  if (launcher === 'torchrun') {
    spawnOne(
      // The underscore spellings: torch 1.x knows only these, torch 2.x both.
      ['-m', 'torch.distributed.run', '--standalone', '--nproc_per_node', String(world), '--monitor_interval', '0.5', ...rankArgs],
      env,
    );
  } else {
    const port = await freePort();
    for (let rank = 0; rank < world; rank++) {
      spawnOne(rankArgs, {
        ...env,
        MASTER_ADDR: '127.0.0.1',
        MASTER_PORT: String(port),
        RANK: String(rank),
        LOCAL_RANK: String(rank),
        WORLD_SIZE: String(world),
        LOCAL_WORLD_SIZE: String(world),
        GROUP_RANK: '0',
        // torchrun's default for CPU jobs: N ranks each using every core would slow each other down.
        OMP_NUM_THREADS: env.OMP_NUM_THREADS ?? '1',
      });
    }
  }

  let stopping: 'failure' | 'timeout' | 'cancelled' | null = null;
  const stopAll = (why: 'failure' | 'timeout' | 'cancelled'): void => {
    stopping ??= why;
    killRanks(dir, world, children);
  };
  // A rank that exits non-zero (direct launch) means its peers may block in a collective: stop them.
  if (launcher === 'direct') {
    exits.forEach((exit) => void exit.then((code) => code !== 0 && stopAll('failure')));
  }
  const timer = setTimeout(() => stopAll('timeout'), options.timeoutMs);
  const cancel = (): void => stopAll('cancelled');
  if (hooks.signal?.aborted) cancel();
  else hooks.signal?.addEventListener('abort', cancel, { once: true });
  const codes = await Promise.all(exits);
  clearTimeout(timer);
  hooks.signal?.removeEventListener('abort', cancel);
  // torchrun's workers run in sessions of their own: whatever outlived the launcher is ended here, and once
  // more a moment later for a rank that was starting (not yet with its pid file) when the launcher died.
  killRanks(dir, world, []);
  if (stopping !== null) {
    await new Promise((resolve) => setTimeout(resolve, 1500));
    killRanks(dir, world, []);
  }

  const started = Array.from({ length: world }, (_, rank) => fs.existsSync(path.join(dir, `rank-${rank}.pid`)));
  if (launchError === null && stopping === null && !started.some(Boolean) && codes.some((c) => c !== 0)) {
    launchError = `${launcher === 'torchrun' ? 'torch.distributed.run' : 'the ranks'} exited with code ${codes.find((c) => c !== 0)} before any rank started`;
  }
  const ranks: RankOutcome[] = [];
  for (let rank = 0; rank < world; rank++) ranks.push(readRank(dir, rank));
  const finalRanks = settleStatuses(ranks, stopping);
  fs.rmSync(dir, { recursive: true, force: true });
  return {
    launcher,
    worldSize: world,
    torchVersion,
    ranks: finalRanks,
    launchError,
    timedOut: stopping === 'timeout',
    cancelled: stopping === 'cancelled',
    outputTail,
  };
}

/**
 * Each rank's status once the job is over: a rank that left no report and no error was stopped (another
 * rank failed), hung (timeout) or cancelled; a rank whose report is partial and that sent no error while
 * another rank failed was killed mid-run (it did not finish: stopped, not ok). Pure.
 */
export function settleStatuses(ranks: readonly RankOutcome[], stopping: 'failure' | 'timeout' | 'cancelled' | null): RankOutcome[] {
  const anyFailed = ranks.some((r) => r.status !== 'ok');
  return ranks.map((r): RankOutcome => {
    const otherFailed = ranks.some((o) => o.rank !== r.rank && (o.status === 'failed' || o.status === 'protocol'));
    if (r.status === 'ok' && r.report?.partial === true && otherFailed) return { ...r, status: 'stopped' };
    if (r.status !== 'crash') return r;
    if (stopping === 'timeout') return { ...r, status: 'timeout' };
    if (stopping === 'cancelled') return { ...r, status: 'cancelled' };
    return otherFailed && anyFailed ? { ...r, status: 'stopped' } : r;
  });
}

function readRank(dir: string, rank: number): RankOutcome {
  let hello: HelloMessage | null = null;
  let report: ProfileReport | null = null;
  let error: ErrorMessage | null = null;
  let lastProgress: ProgressMessage | null = null;
  let protocolError: string | null = null;
  let text: string | null;
  let lastWriteEpochMs: number | null = null;
  try {
    const file = path.join(dir, `rank-${rank}.jsonl`);
    lastWriteEpochMs = fs.statSync(file).mtimeMs;
    text = fs.readFileSync(file, 'utf-8');
  } catch {
    text = null;
  }
  if (text !== null) {
    const lines = text.split('\n');
    const tail = lines.pop() ?? '';
    if (tail.trim()) protocolError = `truncated protocol output: rank ${rank} stopped in the middle of a message`;
    for (const line of lines) {
      if (!line) continue;
      try {
        const message = parseMessage(line);
        if (message.type === 'hello') hello = message;
        else if (message.type === 'progress') lastProgress = message;
        else if (message.type === 'result') report = message.report;
        else error = message;
      } catch (e) {
        protocolError ??= e instanceof ProtocolError ? e.message : String(e);
      }
    }
  }
  const ddp = readRecords<DdpInfo>(path.join(dir, `rank-${rank}.ddp.jsonl`));
  const fsdp = readRecords<FsdpUnitInfo>(path.join(dir, `rank-${rank}.fsdp.jsonl`));
  const collectives = readRecords<CollectiveCall>(path.join(dir, `rank-${rank}.collectives.jsonl`));
  let status: RankStatus;
  if (error) status = 'failed';
  else if (protocolError && !report) status = 'protocol';
  else if (report) status = 'ok';
  else status = 'crash';
  return { rank, status, hello, report, error, lastProgress, protocolError, ddp, fsdp, collectives, lastWriteEpochMs };
}

/** The JSON lines the rank's harness appended (DDP/FSDP descriptions); none when the rank built none, or
 * what was complete when it died while writing. */
function readRecords<T>(file: string): T[] {
  const records: T[] = [];
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf-8');
  } catch {
    return records;
  }
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      records.push(JSON.parse(line) as T);
    } catch {
      break; // a line cut by the rank's death
    }
  }
  return records;
}

/** SIGKILLs the process group of every rank that wrote its pid, and the launcher processes' groups. Only
 * pids that still run memhint's rank entry are touched, so a recycled pid is never signalled. */
function killRanks(dir: string, world: number, launchers: readonly ChildProcess[]): void {
  for (let rank = 0; rank < world; rank++) {
    let pid: number;
    try {
      pid = Number.parseInt(fs.readFileSync(path.join(dir, `rank-${rank}.pid`), 'utf-8'), 10);
    } catch {
      continue;
    }
    if (!Number.isInteger(pid) || pid <= 1 || !isRankProcess(pid)) continue;
    killGroup(pid);
  }
  for (const child of launchers) {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) killGroup(child.pid);
  }
}

function isRankProcess(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf-8').includes('memhint_harness.distributed');
  } catch {
    // No /proc (macOS): a pid file is removed with its directory only after every rank has been waited for.
    return process.platform !== 'linux';
  }
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
