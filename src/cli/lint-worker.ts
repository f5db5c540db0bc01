// A worker thread of src/cli/lint-pool.ts: lints the files it is sent (never fixes) with a linter of
// its own and posts each result back.
import { parentPort } from 'node:worker_threads';
import { Linter, ProjectIndex } from '../lint';
import { lintOneFile } from './lint-file';
import type { LintJob, LintJobResult } from './lint-pool';

const port = parentPort;
if (port !== null) {
  const linter = Linter.create();
  // Without a linter this thread can do nothing: exit, and the pool lints its file on the main thread.
  linter.catch(() => process.exit(1));
  // This thread's index of the project's modules (parsed once per thread, like its linter).
  let project: ProjectIndex | null = null;
  port.on('message', (job: LintJob) => {
    void linter.then((l) => {
      project ??= new ProjectIndex(l.parser, { maxFileSize: job.maxFileSize, oneShot: true });
      port.postMessage(lintJob(l, job, project));
    });
  });
}

export function lintJob(linter: Linter, job: LintJob, project: ProjectIndex | null = null): LintJobResult {
  const warnings: string[] = [];
  let result = null;
  try {
    result = lintOneFile(linter, job.filename, job.settings, job.maxFileSize, null, (m) => warnings.push(m), project);
  } catch (err) {
    warnings.push(`${job.filename}: internal error: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
  }
  return { index: job.index, result, warnings };
}
