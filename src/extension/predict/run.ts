// Adapts the predictor (src/predict/run.ts, the harness with --predict) to the editor: progress from the
// protocol, Cancel as SIGKILL to the child's process group, the same result shape as a profile run.
// No `vscode` here.
import type { PredictOptions } from '../../predict/run';
import { childPredictor } from '../../predict/run';
import { childKiller, failureText, type RunHooks, type RunResult } from '../profile/run';

export type RunPrediction = (options: PredictOptions, hooks: RunHooks) => Promise<RunResult>;

export const runPrediction: RunPrediction = async (options, hooks) => {
  const child = childKiller(hooks.signal);
  try {
    const predict = childPredictor({
      onSpawn: (pid) => {
        child.spawned(pid);
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
    return { report: outcome.report, error: failure === null ? null : failureText(failure), failure, cancelled: false };
  } finally {
    child.dispose();
  }
};
