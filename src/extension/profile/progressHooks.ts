// The side-car's output and progress as profiling and prediction show them: the script's lines in the log,
// protocol progress in the notification (prefixed with the interpreter, increments never going back).
// No `vscode` here: the notification is anything with `report`.
import type { Logger } from '../logger';
import type { RunHooks } from './run';

export interface ProgressSink {
  report(value: { message?: string; increment?: number }): void;
}

export function progressHooks(signal: AbortSignal, progress: ProgressSink, prefix: string, log: Pick<Logger, 'info'>): RunHooks {
  let reported = 0;
  return {
    signal,
    onOutput: (text) => {
      for (const line of text.split(/\r?\n/)) if (line.trim() !== '') log.info(`[script] ${line}`);
    },
    onProgress: (message, fraction) => {
      const increment = fraction === null ? undefined : Math.max(0, fraction * 100 - reported);
      if (increment !== undefined) reported += increment;
      progress.report({ message: `${prefix} · ${message}`, increment });
    },
  };
}
