// Adapts the predictor (src/predict/run.ts, the harness with --predict) to the editor: progress from the
// protocol, Cancel as SIGKILL to the child's process group, the same result shape as a profile run.
// No `vscode` here.
import type { PredictOptions } from '../../predict/run';
import { childPredictor } from '../../predict/run';
import { failureHeadline, failureTail } from '../../profiler/failure';
import type { RunHooks, RunResult } from '../profile/run';

export type RunPrediction = (options: PredictOptions, hooks: RunHooks) => Promise<RunResult>;

export const runPrediction: RunPrediction = async (options, hooks) => {
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
    const predict = childPredictor({
      onSpawn: (pid) => {
        childPid = pid;
        if (hooks.signal.aborted) kill();
        return undefined; // nothing of a prediction runs on a device: no process sampler
      },
      onMessage: (m) => {
        if (m.type === 'hello') hooks.onProgress(`torch ${m.torchVersion}, predicting on meta tensors`, 0.1);
        else if (m.type === 'progress') hooks.onProgress(`${m.warmup ? 'warmup call' : 'predicted call'} ${m.step + 1} took ${Math.round(m.ms)} ms`, m.warmup ? 0.5 : 0.9);
      },
      onStdout: (chunk) => hooks.onOutput(chunk.toString('utf-8')),
      onStderr: (chunk) => hooks.onOutput(chunk.toString('utf-8')),
      signal: hooks.signal,
    });
    const outcome = await predict(options);
    if (hooks.signal.aborted) return { report: null, error: null, failure: null, cancelled: true };
    const failure = outcome.failure;
    if (failure === null) return { report: outcome.report, error: null, failure: null, cancelled: false };
    const tail = failure.kind === 'crash' ? failureTail(failure) : null;
    const error = tail === null ? failureHeadline(failure) : `${failureHeadline(failure)}\n${tail}`;
    return { report: outcome.report, error, failure, cancelled: false };
  } finally {
    hooks.signal.removeEventListener('abort', kill);
  }
};
