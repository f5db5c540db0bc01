// Text rendering of a prediction: the profile's per-line table (same report schema), then the allocator
// model, the device-memory verdict, the per-module breakdown, what-ifs, advice and the max-batch curve.
import { formatReport } from '../profiler/format';
import { collectiveErrors, collectiveSites, formatCollectives } from '../profiler/collectives';
import { formatFsdp, shortFile } from '../profiler/distributed-report';
import { formatBytes } from '../profiler/units';
import type { MaxBatchResult, VariantResult } from './run';
import type { ModuleStats, PredictedReport, RankFigures, RanksPrediction, WorldSizePrediction } from './schema';

export interface PredictionView {
  readonly report: PredictedReport;
  /** --amp / --checkpoint against the same step without them. */
  readonly whatIf: VariantResult | null;
  readonly advice: readonly VariantResult[];
  readonly snapshotAdvice: readonly string[];
  readonly maxBatch: MaxBatchResult | null;
}

const MODULE_ROWS = 40;

export function formatPrediction(view: PredictionView): string {
  const { report } = view;
  const p = report.prediction;
  const out: string[] = [formatReport(report).replace(/^memhint profile/, 'memhint predict').trimEnd(), ''];
  out.push('Predicted CUDA memory (caching-allocator model, docs/predict.md)');
  out.push(`  raw tensor peak      ${formatBytes(p.rawPeakBytes)}`);
  out.push(`  max allocated        ${formatBytes(p.allocator.maxAllocatedBytes)}   (torch.cuda.max_memory_allocated)`);
  out.push(`  max reserved         ${formatBytes(p.allocator.maxReservedBytes)}   (torch.cuda.max_memory_reserved, ${p.allocator.segments} segments)`);
  out.push('  + CUDA context       ~300-500 MiB per process, not included (nvidia-smi shows it)');
  const args = Object.entries(p.setupArgs).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(' ');
  if (args) out.push(`  setup arguments      ${args}`);
  if (p.amp) out.push(`  autocast             ${p.amp} (emulated CUDA autocast rules)`);
  if (p.checkpoint) out.push(`  checkpointed         ${p.checkpoint}`);
  out.push(`  prediction time      ${p.seconds.toFixed(2)} s`);
  if (p.deviceMemoryBytes !== null) {
    out.push('');
    if (p.fits) {
      out.push(`FITS in ${formatBytes(p.deviceMemoryBytes)}: ${formatBytes(p.deviceMemoryBytes - p.allocator.maxReservedBytes)} left before the CUDA context.`);
    } else {
      out.push(`DOES NOT FIT in ${formatBytes(p.deviceMemoryBytes)} (max reserved ${formatBytes(p.allocator.maxReservedBytes)}).`);
      const first = p.firstExceeded;
      if (first) {
        out.push(`  first exceeded at ${first.file}:${first.line} (${first.function}, ${first.phase}, reserved ${formatBytes(first.reservedBytes)})`);
        if (first.code) out.push(`    ${first.code}`);
      }
    }
  }
  if (p.world?.fsdp?.length) {
    out.push('', `FSDP (rank ${p.world.rank} of ${p.world.worldSize}, predicted):`, ...formatFsdp(p.world.fsdp.map((u) => ({ ...u, rank: p.world?.rank ?? 0 }))));
  }
  if (p.world) out.push(...predictedCollectives(report));
  if (p.ranks) out.push('', ...formatRanks(p.ranks, p.deviceMemoryBytes));
  if (view.whatIf) {
    const w = view.whatIf;
    out.push('', `What-if ${w.label}: ${w.error ? `baseline failed: ${w.error}` : `saves ${formatBytes(w.savingBytes ?? 0)} of max reserved against the baseline (${formatBytes(w.maxReservedBytes ?? 0)})`}`);
  }
  if (view.advice.length > 0 || view.snapshotAdvice.length > 0) {
    out.push('', 'Advice (ranked by predicted saving of max reserved):');
    for (const a of view.advice) {
      out.push(a.error ? `  - ${a.label}: could not be predicted (${a.error})` : `  - ${a.label}: ${formatBytes(a.savingBytes ?? 0, { signed: true }).replace(/^\+/, '-')} → ${formatBytes(a.maxReservedBytes ?? 0)}; ${a.advice}`);
    }
    for (const a of view.snapshotAdvice) out.push(`  - ${a.replace(/(\d+) bytes/g, (_m, n: string) => formatBytes(Number(n)))}`);
  }
  if (view.maxBatch) out.push('', ...formatMaxBatch(view.maxBatch, p.deviceMemoryBytes));
  if (report.modules.length > 0) out.push('', ...formatModules(report.modules));
  return `${out.join('\n')}\n`;
}

/** FSDP's all-gathers and reduce-scatters of the predicted rank, grouped and worded as the profile's merged
 *  report words them (profiler/collectives.ts), so a prediction and a measured job read alike. */
function predictedCollectives(report: PredictedReport): string[] {
  const world = report.prediction.world;
  if (!world) return [];
  const rank = [{ rank: world.rank, collectives: world.collectives ?? [], report }];
  const sites = collectiveSites(rank);
  const errors = collectiveErrors(rank);
  if (sites.length === 0 && errors.length === 0) return [];
  return [
    '',
    `FSDP collectives (rank ${world.rank} of ${world.worldSize}, predicted; buffer per call; calls per profiled step, and in the whole run with warmup):`,
    ...formatCollectives(sites, shortFile),
    ...errors.map((e) => `  ${e}`),
  ];
}

function formatRanks(ranks: RanksPrediction, capacity: number | null): string[] {
  const shown = ranks.worldSizes.find((e) => e.worldSize === ranks.reportWorldSize);
  const out = [
    `Per rank (the worst of rank 0 and the last rank of each world size, torch's fake process group; the report above is rank ${shown?.rank ?? 0} of world size ${ranks.reportWorldSize}):`,
    `  ${'ranks'.padStart(6)}  ${'max reserved'.padStart(12)}  ${'max allocated'.padStart(13)}  ${'raw peak'.padStart(10)}  gradient buckets (DDP) / parameters (FSDP)`,
  ];
  for (const e of ranks.worldSizes) {
    if (e.error !== null) {
      out.push(`  ${String(e.worldSize).padStart(6)}  error: ${e.error}`);
      continue;
    }
    const buckets = e.fsdpShardBytes !== undefined
      ? `FSDP shards ${formatBytes(e.fsdpShardBytes)}, largest unit gathered ${formatBytes(e.fsdpLargestGatheredBytes ?? 0)}`
      : e.gradientBuckets.length === 0 ? '-' : `${e.gradientBuckets.length} (${e.gradientBuckets.map((b) => formatBytes(b)).join(', ')})`;
    out.push(
      `  ${String(e.worldSize).padStart(6)}  ${formatBytes(e.maxReservedBytes ?? 0).padStart(12)}  ${formatBytes(e.maxAllocatedBytes ?? 0).padStart(13)}  ` +
        `${formatBytes(e.rawPeakBytes ?? 0).padStart(10)}  ${buckets}${e.fits === false ? '  ✗' : ''}${rankNote(e)}`,
    );
  }
  if (capacity !== null) {
    out.push(
      ranks.smallestFitting !== null
        ? `Smallest world size that fits in ${formatBytes(capacity)} per rank: ${ranks.smallestFitting}`
        : `No world size listed fits in ${formatBytes(capacity)} per rank.`,
    );
  }
  return out;
}

/** Which rank is worst and by how much, or that the ranks predicted are alike. */
function rankNote(e: WorldSizePrediction): string {
  const others = (e.ranksPredicted ?? []).filter((r) => r.rank !== e.rank && r.error === null);
  if (others.length === 0) return '';
  const alike = others.every((r) => r.maxReservedBytes === e.maxReservedBytes && r.maxAllocatedBytes === e.maxAllocatedBytes);
  if (alike) return `  (ranks ${[e.rank, ...others.map((r) => r.rank)].sort((a, b) => a - b).join(', ')} alike)`;
  const gap = (f: (r: RankFigures) => number | null): string =>
    formatBytes(Math.min(...others.map((r) => (f(e) ?? 0) - (f(r) ?? 0))), { signed: true });
  return `  (rank ${e.rank} worst: ${gap((r) => r.maxReservedBytes)} reserved, ${gap((r) => r.maxAllocatedBytes)} allocated vs rank ${others.map((r) => r.rank).join(', ')})`;
}

function formatMaxBatch(result: MaxBatchResult, capacity: number | null): string[] {
  const out = [
    result.best !== null
      ? `Largest ${result.arg} that fits${capacity !== null ? ` in ${formatBytes(capacity)}` : ''}: ${result.best}`
      : `No ${result.arg} tried fits${capacity !== null ? ` in ${formatBytes(capacity)}` : ''}.`,
    `  ${result.arg.padStart(8)}  max reserved  max allocated`,
  ];
  for (const point of result.curve) {
    const reserved = point.maxReservedBytes === null ? `error: ${point.error ?? ''}` : formatBytes(point.maxReservedBytes).padStart(12);
    const allocated = point.maxAllocatedBytes === null ? '' : formatBytes(point.maxAllocatedBytes).padStart(13);
    out.push(`  ${String(point.value).padStart(8)}  ${reserved}  ${allocated}${point.fits ? '' : '  ✗'}`);
  }
  return out;
}

function formatModules(modules: readonly ModuleStats[]): string[] {
  const cols = ['params', 'grads', 'optimizer', 'saved', 'fwd alloc', 'bwd alloc', 'at peak'];
  const out = ['Per module (inclusive of submodules; per step):', `  ${'module'.padEnd(36)}${cols.map((c) => c.padStart(11)).join('')}`];
  const depth = (m: ModuleStats): number => (m.path === '' ? 0 : m.path.split('.').length);
  const shown = modules.filter((m) => depth(m) <= 3).slice(0, MODULE_ROWS);
  for (const m of shown) {
    const name = `${'  '.repeat(Math.min(depth(m), 6))}${m.path === '' ? `(${m.type})` : `${m.path.split('.').pop() ?? m.path} (${m.type})`}`;
    const values = [m.params, m.grads, m.optimizer, m.saved, m.forward_alloc, m.backward_alloc, m.live_at_peak];
    out.push(`  ${name.slice(0, 35).padEnd(36)}${values.map((v) => (v ? formatBytes(v) : '').padStart(11)).join('')}`);
  }
  const hidden = modules.length - shown.length;
  if (hidden > 0) out.push(`  … ${hidden} more (--format json lists every module)`);
  return out;
}
