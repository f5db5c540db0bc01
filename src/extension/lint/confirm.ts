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

/** Below this, kept bytes are the kept tensor itself (a 4-byte scalar loss), not what it costs. */
const NOTABLE_BYTES = 1024;

/**
 * The sentence appended to the diagnostic's message, in the terms a user weighs: the autograd graph kept
 * alive (each node holds the activations it saved for backward) before the bytes of the tensor itself,
 * which for a scalar loss are 4 B and say nothing of the cost.
 */
export function retentionSentence(r: Retention, findingLine: number): string {
  const parts: string[] = [];
  if (r.graphNodesPerStep > 0) parts.push(`keeps ${r.graphNodesPerStep} autograd graph node${r.graphNodesPerStep === 1 ? '' : 's'} per step alive (with the activations they saved for backward)`);
  if (r.bytesPerStep >= NOTABLE_BYTES || (r.bytesPerStep > 0 && r.graphNodesPerStep === 0)) parts.push(`keeps ${formatBytes(r.bytesPerStep)} per step`);
  if (r.liveAtPeak >= NOTABLE_BYTES || (r.liveAtPeak > 0 && parts.length === 0)) parts.push(`${formatBytes(r.liveAtPeak)} live at the peak`);
  const where = r.line === findingLine ? '' : ` (allocated on line ${r.line})`;
  return `Measured by memhint profile: ${parts.join(', ')}${where}.`;
}

/** Identifiers in a finding's source text: `losses.append(loss)` -> ['losses', 'append', 'loss']. */
export function identifiersIn(text: string): string[] {
  return [...new Set(text.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? [])];
}

/** A measurement worth a diagnostic where no lint rule fired: memory that outlives the step. */
export interface MeasuredFinding {
  /** 1-based line the diagnostic goes on: the line that stores the value when it can be found, else where it was made. */
  readonly line: number;
  /** 1-based line that allocated the kept memory. */
  readonly allocatedAt: number;
  readonly message: string;
}

/** `history` from the harness's "`history` in <module>() (list)". */
function holderName(heldBy: string | null | undefined): string | null {
  const m = /`([A-Za-z_][A-Za-z0-9_.]*)`/.exec(heldBy ?? '');
  return m === null ? null : m[1];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The line that puts a value into `name`: `name.append(...)`, `name += ...`, `name[k] = ...`; the first
 * at or after the allocating line, else the first anywhere. `lines` are the document's lines (0-based).
 */
export function storingLine(lines: readonly string[], name: string, after: number): number | null {
  const store = new RegExp(`(^|[^A-Za-z0-9_.])${escapeRegExp(name)}\\s*(\\.(append|extend|insert|add|update|setdefault|put)\\s*\\(|\\+=|\\[[^\\]]*\\]\\s*=[^=])`);
  let first: number | null = null;
  for (let i = 0; i < lines.length; i++) {
    const code = lines[i].replace(/#.*$/, '');
    if (!store.test(code)) continue;
    if (i + 1 >= after) return i + 1;
    first ??= i + 1;
  }
  return first;
}

/**
 * Leaks the profiler measured in this file that no lint finding covers (`covered`: 1-based lines with a
 * finding or a finding's confirmed figures), as diagnostics on the line that holds the memory.
 */
export function measuredFindings(report: ProfileReport, filePaths: readonly string[], lines: readonly string[], covered: ReadonlySet<number>): MeasuredFinding[] {
  const out: MeasuredFinding[] = [];
  for (const leak of report.leaks) {
    if (!filePaths.some((p) => samePath(p, leak.file)) || covered.has(leak.line)) continue;
    if (leak.bytesPerStep < NOTABLE_BYTES && leak.graphNodesPerStep === 0) continue;
    const name = holderName(leak.heldBy);
    const line = (name !== null ? storingLine(lines, name, leak.line) : null) ?? leak.line;
    if (covered.has(line) || line > lines.length) continue;
    const what = leak.line === line ? 'What this line allocates' : `What line ${leak.line} allocates (\`${leak.code.trim()}\`)`;
    const cost =
      leak.graphNodesPerStep > 0
        ? `keeps ${leak.graphNodesPerStep} autograd graph node${leak.graphNodesPerStep === 1 ? '' : 's'} per step alive (with the activations they saved for backward)${leak.bytesPerStep >= NOTABLE_BYTES ? ` and ${formatBytes(leak.bytesPerStep)} per step` : ''}`
        : `outlives each step: ${formatBytes(leak.bytesPerStep)} more per step`;
    const held = leak.heldBy ? `, held by ${leak.heldBy}` : '';
    out.push({ line, allocatedAt: leak.line, message: `${what} ${cost}${held}. Measured by memhint profile; store a detached copy (\`.detach()\`, \`.item()\`) or drop the reference.` });
  }
  return out;
}
