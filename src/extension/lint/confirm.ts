// Lint findings confirmed by measurement: what the profiler saw a retained-graph (MH002) line keep alive.
// No `vscode` here.
import type { Leak, LiveByLine, ProfileReport } from '../../profiler/report';
import { formatBytes } from '../format';
import { samePath } from '../paths';

export interface Retention {
  /** 1-based line the figures belong to: the finding's own line, or where the kept value was made. */
  readonly line: number;
  readonly bytesPerStep: number;
  readonly graphNodesPerStep: number;
  /** Bytes allocated at that line still live at the step's peak. */
  readonly liveAtPeak: number;
}

/** Codes whose findings gain measured figures. */
export const CONFIRMABLE_CODES: ReadonlySet<string> = new Set(['MH002']);

/**
 * Measured retention for a finding on `line` (1-based): the leak the profiler reports on that line, or
 * the leaks whose holder (`heldBy`) is a name the finding mentions: the storage `losses.append(loss)`
 * keeps was allocated where `loss` was computed, and the harness names `losses` as what holds it.
 * Nothing looser (such as "a line that assigns `loss`"): a figure pinned on the wrong finding misleads.
 */
export function measuredRetention(report: ProfileReport, filePaths: readonly string[], line: number, names: readonly string[]): Retention | null {
  const inFile = (file: string): boolean => filePaths.some((p) => samePath(p, file));
  const leaks = report.leaks.filter((l) => inFile(l.file));
  const live = (report.peak?.byLine ?? []).filter((l) => inFile(l.file));
  const own = retentionAt(line, leaks, live);
  if (own !== null && own.bytesPerStep + own.graphNodesPerStep > 0) return own;
  // The harness names what holds a leak ("`grad_snapshots` in main() (list)"): the finding that appends
  // to that container is the one keeping it.
  const held = leaks.filter((l) => l.heldBy !== null && l.heldBy !== undefined && names.some((n) => l.heldBy!.includes(`\`${n}\``)));
  if (held.length > 0) {
    const first = held.reduce((a, b) => (b.bytesPerStep > a.bytesPerStep ? b : a));
    const atPeak = live.filter((l) => held.some((h) => h.line === l.line)).reduce((sum, l) => sum + l.bytes, 0);
    return {
      line: first.line,
      bytesPerStep: held.reduce((s, l) => s + l.bytesPerStep, 0),
      graphNodesPerStep: held.reduce((s, l) => s + l.graphNodesPerStep, 0),
      liveAtPeak: atPeak,
    };
  }
  return own;
}

function retentionAt(line: number, leaks: readonly Leak[], live: readonly LiveByLine[]): Retention | null {
  const leak = leaks.find((l) => l.line === line);
  const atPeak = live.filter((l) => l.line === line).reduce((sum, l) => sum + l.bytes, 0);
  if (leak === undefined && atPeak === 0) return null;
  return { line, bytesPerStep: leak?.bytesPerStep ?? 0, graphNodesPerStep: leak?.graphNodesPerStep ?? 0, liveAtPeak: atPeak };
}

/** The sentence appended to the diagnostic's message. */
export function retentionSentence(r: Retention, findingLine: number): string {
  const parts: string[] = [];
  if (r.bytesPerStep > 0) parts.push(`keeps ${formatBytes(r.bytesPerStep)} per step`);
  if (r.graphNodesPerStep > 0) parts.push(`${r.graphNodesPerStep} autograd graph node${r.graphNodesPerStep === 1 ? '' : 's'} per step`);
  if (r.liveAtPeak > 0) parts.push(`${formatBytes(r.liveAtPeak)} live at the peak`);
  const where = r.line === findingLine ? '' : ` (allocated on line ${r.line})`;
  return `Measured by memhint profile: ${parts.join(', ')}${where}.`;
}

/** Identifiers in a finding's source text: `losses.append(loss)` -> ['losses', 'append', 'loss']. */
export function identifiersIn(text: string): string[] {
  return [...new Set(text.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? [])];
}
