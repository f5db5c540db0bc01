// Lints many files on several threads: worker threads (src/cli/lint-worker.ts, each with its own
// parser and linter) take files one at a time from a shared queue while the main thread lints too.
// Results and warnings come back in the files' order, so the report is the same as a one-thread run.
import * as os from 'node:os';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { LintSettings } from '../lint';
import type { FileFindings } from './report';

export interface LintJob {
  readonly index: number;
  readonly filename: string;
  readonly settings: LintSettings;
  readonly maxFileSize: number;
}

export interface LintJobResult {
  readonly index: number;
  readonly result: FileFindings | null;
  /** One-line problems, in the order they were met (the caller reports and counts them). */
  readonly warnings: readonly string[];
}

/** Files per extra thread below which threads cost more than they save (each loads its own parser). */
const FILES_PER_WORKER = 8;

/**
 * Worker threads to start for `files` files: one per core beyond the main thread's, none for a few
 * files. MEMHINT_LINT_WORKERS (a count; 0 turns threads off) overrides it.
 */
export function workerCount(files: number): number {
  const forced = process.env.MEMHINT_LINT_WORKERS;
  if (forced !== undefined && /^\d+$/.test(forced)) return Math.min(Number(forced), files);
  const cores = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  return Math.max(0, Math.min(cores - 1, Math.floor(files / FILES_PER_WORKER)));
}

/** The worker's script: next to this module (out/src/cli) or next to the bundle (dist). */
function workerScript(): string {
  return path.join(__dirname, 'lint-worker.js');
}

/**
 * Runs every job, on `workers` worker threads and on this thread (`lintHere`), and returns the results
 * in job order. A worker that fails to start or dies hands its file back to this thread, so no file
 * is lost to a thread's failure.
 */
export async function lintInParallel(
  jobs: readonly LintJob[],
  workers: number,
  lintHere: (job: LintJob) => LintJobResult,
  /** False: this thread only hands out files (and lints those a failed worker gave back). */
  mainThreadLints = true,
): Promise<LintJobResult[]> {
  const results = new Array<LintJobResult | undefined>(jobs.length);
  let next = 0;
  const take = (): LintJob | undefined => (next < jobs.length ? jobs[next++] : undefined);
  const retry: LintJob[] = [];
  const running = new Set<Promise<void>>();

  const startWorker = (): Promise<void> =>
    new Promise<void>((resolve) => {
      let current: LintJob | undefined;
      let worker: Worker;
      try {
        worker = new Worker(workerScript());
      } catch {
        resolve();
        return;
      }
      const feed = (): void => {
        current = take();
        if (current === undefined) void worker.terminate();
        else worker.postMessage(current);
      };
      worker.on('message', (message: LintJobResult) => {
        results[message.index] = message;
        feed();
      });
      worker.on('error', () => {
        if (current !== undefined) retry.push(current);
        current = undefined;
      });
      worker.on('exit', () => {
        if (current !== undefined) retry.push(current);
        resolve();
      });
      feed();
    });

  for (let i = 0; i < workers; i++) {
    const p = startWorker().finally(() => running.delete(p));
    running.add(p);
  }
  // This thread lints too; between files it yields so that workers' messages are handled.
  for (let job = mainThreadLints ? take() : undefined; job !== undefined; job = take()) {
    results[job.index] = lintHere(job);
    await new Promise((resolve) => setImmediate(resolve));
  }
  while (running.size > 0) await Promise.race(running);
  for (const job of retry) if (results[job.index] === undefined) results[job.index] = lintHere(job);
  return results.map((r, i) => r ?? lintHere(jobs[i]));
}
