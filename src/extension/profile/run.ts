// Adapts the profiler's launcher (src/profiler/launcher.ts) to the editor: progress from protocol
// messages, Cancel as SIGKILL to the child's process group, the native sampler's series attached as
// the report's OS timeline (the launcher moves it onto the harness clock). No `vscode` here.
import { failureHeadline, failureTail } from '../../profiler/failure';
import { runProfile as launch, type ProfileFailure } from '../../profiler/launcher';
import { startOsTimelineSampler } from '../../profiler/os-timeline';
import type { HarnessMessage } from '../../profiler/protocol';
import type { ProfileReport } from '../../profiler/report';
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
}

export async function runProfileRequest(request: ProfileRequest, hooks: RunHooks): Promise<RunResult> {
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
  hooks.signal.addEventListener('abort', kill, { once: true });
  try {
    const outcome = await launch(
      {
        script: request.script,
        function: request.function,
        loopLine: request.function === null ? (request.loopLine ?? null) : null,
        setup: null,
        warmup: request.warmup,
        steps: request.steps,
        maxSeconds: request.function === null ? request.maxSeconds : null,
        backend: request.backend,
        python: request.python,
        budgetBytes: null,
        memoryLimitBytes: null,
        timeoutMs: request.timeoutSeconds * 1000,
        scriptArgs: [],
        cwd: request.cwd,
      },
      {
        onSpawn: (pid) => {
          childPid = pid;
          if (hooks.signal.aborted) kill();
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
    hooks.signal.removeEventListener('abort', kill);
  }
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
function failureText(failure: ProfileFailure): string {
  const tail = failure.kind === 'crash' ? failureTail(failure) : null;
  return tail === null ? failureHeadline(failure) : `${failureHeadline(failure)}\n${tail}`;
}
