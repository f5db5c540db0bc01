// FSDP's all-gather and reduce-scatter buffers per rank, attributed to the user's line and the FSDP unit
// (module) they serve: the per-call records of python/memhint_harness/collectives.py, grouped. Pure: no I/O.
import type { CollectiveCall, RankOutcome } from './distributed';
import type { SourceLocation } from './report';
import { formatBytes } from './units';

/** Calls of one collective on one rank with the same line, unit, phase and buffer size. */
export interface CollectiveSite {
  readonly rank: number;
  readonly op: CollectiveCall['op'];
  readonly phase: CollectiveCall['phase'] | null;
  readonly location: SourceLocation | null;
  /** The FSDP unit's module class, and its qualified name in the model where known. */
  readonly module: string | null;
  readonly name: string | null;
  /** The full-size buffer each call used (gathered parameters, or the unsharded gradient). */
  readonly bytesPerCall: number;
  readonly shardBytesPerCall: number;
  /** Over the whole run: warmup and profiled steps, and any call outside the profiled function. */
  readonly calls: number;
  /** Calls made by the profiled steps, divided by the rank's profiled steps; null when the rank reported no
   * profiled step. */
  readonly callsPerStep: number | null;
}

/** What grouping needs of a rank: its number, its calls, and its profiled steps (a profiled rank's outcome, or
 *  a predicted rank: predict/format.ts). */
export type RankCollectives = Pick<RankOutcome, 'rank' | 'collectives'> & { readonly report: { readonly steps: readonly unknown[] } | null };

export function collectiveSites(ranks: readonly RankCollectives[]): CollectiveSite[] {
  const sites = new Map<string, CollectiveSite & { profiledCalls: number }>();
  const profiledSteps = new Map(ranks.map((r) => [r.rank, r.report?.steps.length ?? 0]));
  for (const rank of ranks) {
    for (const call of rank.collectives ?? []) {
      if (call.error || call.bytes === undefined) continue;
      const location = call.location ?? null;
      const key = [rank.rank, call.op, call.phase, location?.file, location?.line, call.unit?.name, call.unit?.module, call.bytes].join('\0');
      const known = sites.get(key);
      const profiled = typeof call.step === 'number' ? 1 : 0;
      sites.set(
        key,
        known
          ? { ...known, calls: known.calls + 1, profiledCalls: known.profiledCalls + profiled }
          : {
              rank: rank.rank,
              op: call.op,
              phase: call.phase ?? null,
              location,
              module: call.unit?.module ?? null,
              name: call.unit?.name ?? null,
              bytesPerCall: call.bytes,
              shardBytesPerCall: call.shardBytes ?? 0,
              calls: 1,
              callsPerStep: null,
              profiledCalls: profiled,
            },
      );
    }
  }
  // In the order the ranks ran them (a Map keeps first insertion): per rank, forward gathers first.
  return [...sites.values()]
    .map(({ profiledCalls, ...site }) => {
      const steps = profiledSteps.get(site.rank) ?? 0;
      return { ...site, callsPerStep: steps > 0 ? profiledCalls / steps : null };
    })
    .sort((a, b) => a.rank - b.rank);
}

/** Calls whose description failed (a torch whose FSDP frames changed), per rank: said, not hidden. */
export function collectiveErrors(ranks: readonly RankCollectives[]): string[] {
  return ranks.flatMap((r) => {
    const failed = (r.collectives ?? []).filter((c) => c.error);
    return failed.length ? [`rank ${r.rank}: ${failed.length} collective call(s) not described (${failed[0].error})`] : [];
  });
}

function perStep(calls: number | null): string {
  if (calls === null) return '—';
  return Number.isInteger(calls) ? String(calls) : calls.toFixed(2);
}

const OP_TEXT: Record<CollectiveCall['op'], string> = { all_gather: 'all-gather', reduce_scatter: 'reduce-scatter' };

export function formatCollectives(sites: readonly CollectiveSite[], shortFile: (file: string) => string): string[] {
  return sites.map((s) => {
    const unit = s.module ? ` for ${s.module}${s.name !== null ? ` '${s.name}'` : ''}` : '';
    const at = s.location ? ` at ${shortFile(s.location.file)}:${s.location.line}` : '';
    return `  rank ${s.rank}: ${OP_TEXT[s.op]}${s.phase ? ` (${s.phase})` : ''}${unit}${at}: ${formatBytes(s.bytesPerCall)} buffer (shard ${formatBytes(s.shardBytesPerCall)}) × ${perStep(s.callsPerStep)} per step, ${s.calls} call(s) in the run`;
  });
}
