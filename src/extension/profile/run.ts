// Adapts the profiler's launcher (src/profiler/launcher.ts) to the editor: progress from protocol
// messages, Cancel as SIGKILL to the child's process group, the native sampler's series attached as
// the report's OS timeline (the launcher moves it onto the harness clock). No `vscode` here.
import { failureHeadline, failureTail } from '../../profiler/failure';
import { runDistributedProfile } from '../../profiler/distributed';
import { mergeDistributed } from '../../profiler/distributed-report';
import { runProfile as launch, type ProfileFailure, type ProfileOptions } from '../../profiler/launcher';
import { startOsTimelineSampler } from '../../profiler/os-timeline';
import type { HarnessMessage } from '../../profiler/protocol';
import type { ProfileReport } from '../../profiler/report';
import { ranksView, worstRank, type RanksView } from '../ranks/ranksView';
import type { ProfileRequest } from './request';

export interface RunHooks {
  readonly signal: AbortSignal;
  readonly onProgress: (message: string, fraction: number | null) => void;
  readonly onOutput: (text: string) => void;
}

export interface RunResult {
  /** Present on success and on failures that still measured something (OOM, partial runs). */
  readonly report: ProfileReport | null;
  /** Why the run failed (with the user's location when known), or null. */
  readonly error: string | null;
  /** The launcher's structured failure behind `error` (kind, the user's location), or null. */
  readonly failure: ProfileFailure | null;
  readonly cancelled: boolean;
  /** A multi-rank run: every rank's peak, and which rank's report `report` is. */
  readonly ranks?: RanksView;
}

function launcherOptions(request: ProfileRequest): ProfileOptions {
  return {
    script: request.script,
    function: request.function,
    loopLine: request.function === null ? (request.loopLine ?? null) : null,
    loopFile: request.function === null && request.loopLine ? (request.loopFile ?? null) : null,
    setup: null,
    warmup: request.warmup,
    steps: request.steps,
    maxSeconds: request.function === null ? request.maxSeconds : null,
    backend: request.backend,
    python: request.python,
    budgetBytes: null,
    memoryLimitBytes: null,
    timeoutMs: request.timeoutSeconds * 1000,
    scriptArgs: [...(request.scriptArgs ?? [])],
    cwd: request.cwd,
  };
}

/**
 * `nprocPerNode` ranks under torch.distributed (torchrun; ranks started directly on torch 1.x): the worst
 * rank's report for the hints, every rank's peak for the summary, failures named by rank.
 */
async function runRanks(request: ProfileRequest, hooks: RunHooks): Promise<RunResult> {
  const world = request.nprocPerNode ?? 1;
  hooks.onProgress(`starting ${world} ranks`, 0);
  const outcome = await runDistributedProfile(
    { ...launcherOptions(request), nprocPerNode: world, launcher: 'auto' },
    { onOutput: (chunk) => hooks.onOutput(chunk.toString('utf-8')), signal: hooks.signal },
  );
  if (outcome.cancelled || hooks.signal.aborted) return { report: null, error: null, failure: null, cancelled: true };
  if (outcome.launchError !== null) {
    const tail = outcome.outputTail.trim().split('\n').slice(-5).join('\n');
    return { report: null, error: `${outcome.launchError}${tail ? `\n${tail}` : ''}`, failure: null, cancelled: false };
  }
  const merged = mergeDistributed(outcome);
  const shown = worstRank(merged);
  const bad = merged.ranks.filter((r) => r.status !== 'ok');
  const first = merged.firstFailedRank !== null ? merged.ranks.find((r) => r.rank === merged.firstFailedRank) : bad[0];
  const error =
    bad.length === 0
      ? null
      : `${bad.length} of ${merged.worldSize} ranks did not finish; rank ${first?.rank ?? bad[0].rank}: ${first?.status ?? bad[0].status}${first?.error ? ` — ${first.error.message}` : ''}`;
  const location = first?.error?.location ?? null;
  const failure: ProfileFailure | null =
    error === null ? null : { kind: (first?.error?.kind ?? 'crash') as ProfileFailure['kind'], message: error, traceback: null, location, exitCode: null, signal: null, stderrTail: '' };
  return {
    report: shown?.report ?? null,
    error,
    failure,
    cancelled: false,
    ...(shown !== null ? { ranks: ranksView(merged, shown.rank, shown.why) } : {}),
  };
}

export async function runProfileRequest(request: ProfileRequest, hooks: RunHooks): Promise<RunResult> {
  if ((request.nprocPerNode ?? 1) > 1) return runRanks(request, hooks);
  const child = childKiller(hooks.signal);
  try {
    const outcome = await launch(
      launcherOptions(request),
      {
        onSpawn: (pid) => {
          child.spawned(pid);
          // The same OS sampler the launcher starts by default; onSpawn is taken only to learn the pid.
          return startOsTimelineSampler(pid);
        },
        onMessage: (m) => progressOf(m, request, hooks),
        onStdout: (chunk) => hooks.onOutput(chunk.toString('utf-8')),
        onStderr: (chunk) => hooks.onOutput(chunk.toString('utf-8')),
        // The launcher's cancel also ends processes the script started outside the group (setsid).
        signal: hooks.signal,
      },
    );
    if (hooks.signal.aborted) return { report: null, error: null, failure: null, cancelled: true };
    const report = outcome.report;
    const failure = outcome.failure;
    return { report, error: failure === null ? null : failureText(failure), failure, cancelled: false };
  } finally {
    child.dispose();
  }
}

/**
 * Cancel is SIGKILL to the child's process group (the harness leads its group), or to the child alone
 * where the group is gone; a cancel that came before the spawn kills the child as soon as it exists.
 */
export function childKiller(signal: AbortSignal): { spawned(pid: number): void; dispose(): void } {
  let childPid: number | undefined;
  const kill = (): void => {
    if (childPid === undefined) return;
    try {
      process.kill(process.platform === 'win32' ? childPid : -childPid, 'SIGKILL');
    } catch {
      try {
        process.kill(childPid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  signal.addEventListener('abort', kill, { once: true });
  return {
    spawned: (pid) => {
      childPid = pid;
      if (signal.aborted) kill();
    },
    dispose: () => signal.removeEventListener('abort', kill),
  };
}

function progressOf(m: HarnessMessage, request: ProfileRequest, hooks: RunHooks): void {
  if (m.type === 'hello') hooks.onProgress(`torch ${m.torchVersion} on ${m.device} (${m.backend} backend)`, 0);
  else if (m.type === 'progress') {
    const total = request.warmup + m.of;
    const done = (m.warmup ? m.step : request.warmup + m.step) + 1;
    hooks.onProgress(`${m.warmup ? 'warmup' : 'step'} ${m.step + 1}${m.warmup ? '' : `/${m.of}`} took ${Math.round(m.ms)} ms`, Math.min(1, done / Math.max(1, total)));
  }
}

/** The failure as the notification and the log show it: the headline, then a crash's last output lines. */
export function failureText(failure: ProfileFailure): string {
  const tail = failure.kind === 'crash' ? failureTail(failure) : null;
  return tail === null ? failureHeadline(failure) : `${failureHeadline(failure)}\n${tail}`;
}
