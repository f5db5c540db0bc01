// `memhint profile --nproc-per-node N ...`: runs the profile on N ranks and prints the merged report.
// Exit codes: 0 every rank profiled, 1 any rank failed, hung or crashed (reported by rank), 130 cancelled.
import * as fs from 'node:fs';
import { runDistributedProfile, type DistributedOptions } from '../profiler/distributed';
import { formatDistributed, mergeDistributed } from '../profiler/distributed-report';

export async function runDistributedCommand(options: DistributedOptions, format: 'text' | 'json', out: string | null): Promise<number> {
  // Ranks run in process groups of their own, so Ctrl-C must be passed on explicitly.
  const abort = new AbortController();
  const onSignal = (): void => abort.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const outcome = await runDistributedProfile(options, {
    // The ranks' prints go to stderr so that stdout carries only the report.
    onOutput: (chunk) => process.stderr.write(chunk),
    signal: abort.signal,
  }).finally(() => {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  });
  if (outcome.cancelled) {
    process.stderr.write('memhint profile: cancelled; every rank was stopped\n');
    return 130;
  }
  if (outcome.launchError) {
    const tail = outcome.outputTail.trim() ? `last output:\n${outcome.outputTail.trimEnd()}\n` : '';
    process.stderr.write(`memhint profile: ${outcome.launchError}\n${tail}  hint: --python PATH must be an interpreter with torch; --launcher direct starts the ranks without torchrun\n`);
    return 1;
  }
  const merged = mergeDistributed(outcome);
  const rendered = format === 'json' ? `${JSON.stringify(merged, null, 2)}\n` : formatDistributed(merged);
  if (out) fs.writeFileSync(out, rendered);
  else process.stdout.write(rendered);
  const bad = merged.ranks.filter((r) => r.status !== 'ok');
  if (bad.length === 0) return 0;
  const lines = bad.map((r) => `  rank ${r.rank}: ${r.status}${r.error ? ` — ${r.error.kind.replace(/_/g, ' ')}: ${r.error.message}` : ''}`);
  process.stderr.write(`memhint profile: ${bad.length} of ${merged.worldSize} rank(s) did not finish:\n${lines.join('\n')}\n`);
  if (merged.ranks.every((r) => r.status !== 'ok' && r.status !== 'failed') && outcome.outputTail.trim()) {
    process.stderr.write(`last output of the ranks:\n${outcome.outputTail.trimEnd()}\n`);
  }
  return 1;
}
