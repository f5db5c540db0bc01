// Messages between the extension and the memory summary webview (media/summary.js), and the view model
// it renders. Plain types shared by both sides; no `vscode` here.
import type { MemoryKind } from '../../profiler/report';
import type { RanksView } from '../ranks/ranksView';

export interface LineRow {
  readonly file: string;
  /** Path shown in the table: relative to the workspace when possible. */
  readonly displayFile: string;
  readonly line: number;
  readonly code: string;
  readonly function: string | null;
  /** All byte figures are per step (totals divided by the profiled steps); peaks are maxima. */
  readonly calls: number;
  readonly allocated: number;
  readonly freed: number;
  readonly net: number;
  readonly peak: number;
  readonly selfNet: number;
  readonly savedForBackward: number;
  readonly backward: number;
  readonly leakPerStep: number;
  readonly liveAtPeak: number;
}

export interface KindSlice {
  readonly kind: MemoryKind;
  readonly bytes: number;
}

export interface TimelineView {
  /** [ms, live bytes], downsampled keeping each bucket's extremes. */
  readonly allocator: readonly (readonly [number, number])[];
  readonly steps: readonly { readonly step: number; readonly warmup: boolean; readonly startMs: number; readonly endMs: number }[];
  /** Process RSS / GPU used from the sampler, aligned to the allocator's clock. */
  readonly os: { readonly source: string; readonly rss: readonly (readonly [number, number])[]; readonly gpu: readonly (readonly [number, number])[] } | null;
  readonly cuda: { readonly allocated: readonly (readonly [number, number])[]; readonly reserved: readonly (readonly [number, number])[] } | null;
  readonly peak: { readonly atMs: number; readonly bytes: number } | null;
  readonly endMs: number;
  readonly maxBytes: number;
}

/** One nn.Module of the per-module breakdown (report.modules), in tree order; per-step byte figures. */
export interface ModuleRow {
  /** `GPT/transformer.h.3.mlp`: unique across roots. */
  readonly id: string;
  /** The parent's id, or null for a root model. */
  readonly parent: string | null;
  readonly depth: number;
  /** Last path component (`mlp`), or the root's class name. */
  readonly name: string;
  readonly type: string;
  readonly calls: number;
  readonly params: number;
  readonly grads: number;
  readonly optimizer: number;
  readonly saved: number;
  readonly forwardAlloc: number;
  readonly backwardAlloc: number;
  readonly liveAtPeak: number;
}

/** What `memhint predict` adds: the allocator model's figures and the what-ifs it ran with. */
export interface PredictionView {
  readonly maxAllocated: number;
  readonly maxReserved: number;
  readonly rawPeak: number;
  readonly deviceMemory: number | null;
  readonly fits: boolean | null;
  readonly firstExceeded: string | null;
  readonly whatIf: string;
  readonly seconds: number;
}

export interface SummaryViewModel {
  readonly title: string;
  readonly environment: { readonly python: string; readonly pythonVersion: string; readonly torchVersion: string; readonly backend: string; readonly device: string };
  readonly notes: readonly string[];
  readonly partial: boolean;
  readonly headline: {
    readonly peakBytes: number | null;
    readonly steps: number;
    readonly medianStepMs: number | null;
    readonly leakBytesPerStep: number;
  };
  readonly timeline: TimelineView;
  readonly lines: readonly LineRow[];
  readonly peakByKind: readonly KindSlice[];
  readonly peakTopLines: readonly { readonly file: string; readonly displayFile: string; readonly line: number; readonly bytes: number; readonly byKind: readonly KindSlice[] }[];
  readonly leaks: readonly { readonly file: string; readonly displayFile: string; readonly line: number; readonly code: string; readonly bytesPerStep: number; readonly graphNodesPerStep: number; readonly reason: string; readonly heldBy: string | null }[];
  readonly cuda: {
    readonly allocated: number;
    readonly reserved: number;
    readonly maxAllocated: number;
    readonly maxReserved: number;
    readonly fragmentation: number;
    readonly stats: readonly (readonly [string, number])[];
    readonly summary: string;
  } | null;
  readonly oom: { readonly message: string; readonly where: string | null; readonly requestedBytes: number | null; readonly advice: readonly string[] } | null;
  readonly budget: { readonly budgetBytes: number; readonly exceeded: boolean; readonly where: string | null } | null;
  readonly hasSnapshot: boolean;
  /** Per-module breakdown; empty when the report has none. */
  readonly modules: readonly ModuleRow[];
  /** Set on predicted reports (mode "predicted"): the figures are not measured. */
  readonly prediction: PredictionView | null;
  /** A multi-rank run: every rank's peak and the imbalance; the other figures are rank `shownRank`'s. */
  readonly ranks: RanksView | null;
  /** Why these figures are outdated (a later run failed), or null. */
  readonly stale: string | null;
}

export type SortKey = 'location' | 'calls' | 'allocated' | 'net' | 'peak' | 'savedForBackward' | 'backward' | 'leakPerStep' | 'liveAtPeak';

/** What the webview keeps with vscode.setState, and what the serializer restores after a reload. */
export interface WebviewState {
  readonly model: SummaryViewModel | null;
  readonly sort: { readonly key: SortKey; readonly descending: boolean };
  /** The page's scroll offset, so a re-render (sort, export, a hidden panel shown again) keeps the place. */
  readonly scrollY?: number;
}

export type ToWebview =
  | { readonly type: 'show'; readonly model: SummaryViewModel | null }
  | { readonly type: 'exported'; readonly path: string }
  | { readonly type: 'error'; readonly message: string };

export type FromWebview =
  | { readonly type: 'ready' }
  | { readonly type: 'reveal'; readonly file: string; readonly line: number }
  | { readonly type: 'export'; readonly what: 'json' | 'snapshot' }
  /** Sent after each render: what is on screen, for the status line and the tests. */
  | { readonly type: 'rendered'; readonly rows: number; readonly sort: WebviewState['sort']; readonly sections: readonly string[] };

export function isFromWebview(value: unknown): value is FromWebview {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  switch (v.type) {
    case 'ready':
      return true;
    case 'reveal':
      return typeof v.file === 'string' && typeof v.line === 'number' && Number.isInteger(v.line) && v.line >= 1;
    case 'export':
      return v.what === 'json' || v.what === 'snapshot';
    case 'rendered':
      return typeof v.rows === 'number' && typeof v.sort === 'object' && v.sort !== null && Array.isArray(v.sections);
    default:
      return false;
  }
}
