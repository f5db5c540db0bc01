// `memhint predict` beside a measured profile of the same step: per line, per module and the step peak,
// each figure both ways with the difference. Pure; no `vscode` here.
import * as path from 'node:path';
import type { PredictionInfo } from '../../predict/schema';
import { MEMORY_KINDS, type ProfileReport } from '../../profiler/report';
import { stepPeak } from '../hints/model';
import { lineKey, lineRows } from './lineRows';
import type { ComparedFigure, ComparedLine, ComparedModule, CompareLineKey, CompareModuleKey, ComparisonView, LineRow, ModuleRow } from './messages';
import { moduleRows } from './moduleRows';
import { predictionOf, whatIfText } from './predictionView';

export const COMPARE_LINE_KEYS: readonly CompareLineKey[] = ['allocated', 'peak', 'savedForBackward', 'backward', 'liveAtPeak'];
export const COMPARE_MODULE_KEYS: readonly CompareModuleKey[] = ['liveAtPeak', 'params', 'grads', 'optimizer', 'saved', 'forwardAlloc', 'backwardAlloc'];

/**
 * Which step a report measured or predicted: the script and the function (or the loop's header line).
 * Two reports compare only when this is equal; setup arguments and what-ifs may differ and are shown.
 */
export function stepKey(report: ProfileReport): string {
  const t = report.target;
  const what = t.function ?? (t.loopLine !== null ? `loop@${t.loopLine}` : t.kind);
  return `${path.resolve(t.script)}::${what}`;
}

export function isPredicted(report: ProfileReport): boolean {
  return predictionOf(report) !== null;
}

export function figure(predicted: number | null, measured: number | null): ComparedFigure {
  return { predicted, measured, difference: predicted !== null && measured !== null ? predicted - measured : null };
}

function joined<Row, Key extends string>(
  predicted: readonly Row[],
  measured: readonly Row[],
  id: (row: Row) => string,
  keys: readonly Key[],
): { first: Row; figures: Record<Key, ComparedFigure> }[] {
  const byId = new Map<string, { p?: Row; m?: Row }>();
  for (const row of predicted) byId.set(id(row), { ...byId.get(id(row)), p: row });
  for (const row of measured) byId.set(id(row), { ...byId.get(id(row)), m: row });
  const out: { first: Row; figures: Record<Key, ComparedFigure> }[] = [];
  for (const { p, m } of byId.values()) {
    const value = (row: Row | undefined, k: Key): number | null => (row === undefined ? null : ((row as Record<Key, number>)[k] ?? 0));
    const figures = Object.fromEntries(keys.map((k) => [k, figure(value(p, k), value(m, k))])) as Record<Key, ComparedFigure>;
    // A row zero (or absent) on both sides says nothing about the prediction.
    if (keys.every((k) => !figures[k].predicted && !figures[k].measured)) continue;
    out.push({ first: (p ?? m) as Row, figures });
  }
  return out;
}

function peaks(predicted: ProfileReport, prediction: PredictionInfo, measured: ProfileReport): ComparisonView['peaks'] {
  const rows: ({ label: string } & ComparedFigure)[] = [{ label: 'peak live tensors', ...figure(prediction.rawPeakBytes, stepPeak(measured)) }];
  for (const kind of MEMORY_KINDS) {
    const p = predicted.peak?.byKind[kind] ?? null;
    const m = measured.peak?.byKind[kind] ?? null;
    if (p || m) rows.push({ label: `${kind.replace('_', ' ')} at the peak`, ...figure(p, m) });
  }
  // The allocator's maxima exist on the measured side only for a CUDA run.
  const cuda = measured.cuda ?? null;
  rows.push({ label: 'CUDA max allocated', ...figure(prediction.allocator.maxAllocatedBytes, cuda?.maxAllocatedBytes ?? null) });
  rows.push({ label: 'CUDA max reserved', ...figure(prediction.allocator.maxReservedBytes, cuda?.maxReservedBytes ?? null) });
  return rows;
}

/**
 * `shown` and `other` are a predicted and a measured report, in either order; null when they are not of
 * the same step or not one of each kind.
 */
export function comparisonView(shown: ProfileReport, other: ProfileReport, roots: readonly string[]): ComparisonView | null {
  if (isPredicted(shown) === isPredicted(other) || stepKey(shown) !== stepKey(other)) return null;
  const [predicted, measured] = isPredicted(shown) ? [shown, other] : [other, shown];
  const prediction = predictionOf(predicted) as PredictionInfo;
  const lines: ComparedLine[] = joined<LineRow, CompareLineKey>(lineRows(predicted, roots), lineRows(measured, roots), (r) => lineKey(r.file, r.line), COMPARE_LINE_KEYS)
    .map(({ first, figures }) => ({ file: first.file, displayFile: first.displayFile, line: first.line, code: first.code, figures }))
    .sort((a, b) => a.displayFile.localeCompare(b.displayFile) || a.line - b.line);
  const modules: ComparedModule[] = joined<ModuleRow, CompareModuleKey>(moduleRows(predicted.modules ?? []), moduleRows(measured.modules ?? []), (r) => r.id, COMPARE_MODULE_KEYS).map(
    ({ first, figures }) => ({ id: first.id, type: first.type, figures }),
  );
  const t = measured.target;
  const env = measured.environment;
  return {
    step: t.function ? `${path.basename(t.script)}::${t.function}` : t.loopLine !== null ? `${path.basename(t.script)}:${t.loopLine} (loop)` : path.basename(t.script),
    shown: shown === predicted ? 'predicted' : 'measured',
    measuredOn: `${env.backend} backend, ${env.device}, torch ${env.torchVersion}`,
    whatIf: whatIfText(prediction),
    peaks: peaks(predicted, prediction, measured),
    lines,
    modules,
  };
}
