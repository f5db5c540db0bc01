// Messages between the extension and the memory summary webview (media/summary.js), and the view model
// it renders. Plain types shared by both sides; no `vscode` here.
import type { MemoryKind, ModuleFigures } from '../../profiler/report';
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
export interface ModuleRow extends ModuleFigures {
  /** `GPT/transformer.h.3.mlp`: unique across roots. */
  readonly id: string;
  /** The parent's id, or null for a root model. */
  readonly parent: string | null;
  readonly depth: number;
  /** Last path component (`mlp`), or the root's class name. */
  readonly name: string;
  readonly type: string;
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

/** One multi-process DataLoader (report.dataLoaders) and its workers' own memory (USS/PSS, never RSS). */
export interface LoaderView {
  readonly file: string;
  readonly displayFile: string;
  readonly line: number;
  readonly code: string;
  readonly datasetType: string;
  readonly numWorkers: number;
  /** USS / PSS of all the loader's live workers at the end of each profiled step. */
  readonly ussByStep: readonly number[];
  readonly pssByStep: readonly number[];
  /** Mean USS growth per profiled step, all workers; `grows` when the harness judged it copy-on-read. */
  readonly ussGrowthPerStep: number;
  readonly grows: boolean;
  readonly workers: readonly WorkerRow[];
}

/** One worker process of a loader, from its sampled series (report.timeline.processes). */
export interface WorkerRow {
  readonly pid: number;
  /** The worker's id within its iterator (0 .. numWorkers - 1); a new epoch's iterator reuses ids. */
  readonly worker: number;
  readonly samples: number;
  readonly ussFirst: number;
  readonly ussLast: number;
  readonly ussMax: number;
  readonly pssLast: number;
  /** ussLast - ussFirst: what the worker took on while it lived. */
  readonly ussGrowth: number;
}

/** A statement whose forward built an autograd graph no backward() used (report.noBackwardGraphs). */
export interface NoGradRow {
  readonly file: string;
  readonly displayFile: string;
  readonly line: number;
  readonly code: string;
  readonly nodesPerStep: number;
  readonly bytesKeptPerStep: number;
  readonly steps: number;
}

/** A line whose ops allocate workspaces inside their kernels (report.kernelWorkspaces). */
export interface KernelRow {
  readonly file: string;
  readonly displayFile: string;
  readonly line: number;
  readonly code: string;
  readonly ops: readonly string[];
  /** Forward calls of those ops per step. */
  readonly callsPerStep: number;
  /** The line's tracked allocation per step (inclusive), the figure that leaves the workspaces out. */
  readonly trackedPerStep: number | null;
  /** The caching allocator's rise while the line ran (CUDA runs only), which includes them. */
  readonly cudaMaxRise: number | null;
}

export interface KernelsView {
  readonly backend: string;
  readonly lines: readonly KernelRow[];
}

/** A predicted figure beside the measured one; difference = predicted - measured when both exist. */
export interface ComparedFigure {
  readonly predicted: number | null;
  readonly measured: number | null;
  readonly difference: number | null;
}

export type CompareLineKey = 'allocated' | 'peak' | 'savedForBackward' | 'backward' | 'liveAtPeak';
export type CompareModuleKey = 'liveAtPeak' | 'params' | 'grads' | 'optimizer' | 'saved' | 'forwardAlloc' | 'backwardAlloc';

export interface ComparedLine {
  readonly file: string;
  readonly displayFile: string;
  readonly line: number;
  readonly code: string;
  readonly figures: Readonly<Record<CompareLineKey, ComparedFigure>>;
}

export interface ComparedModule {
  /** `GPT/transformer.h.3.mlp`, as in ModuleRow. */
  readonly id: string;
  readonly type: string;
  readonly figures: Readonly<Record<CompareModuleKey, ComparedFigure>>;
}

/** `memhint predict` and a measured profile of the same step, side by side (per step figures). */
export interface ComparisonView {
  /** `train.py::train_step`. */
  readonly step: string;
  /** Which of the two the rest of the panel shows. */
  readonly shown: 'measured' | 'predicted';
  /** How the measured run ran (`cpu backend, cpu`) and what the prediction assumed (`AMP bf16` or ''). */
  readonly measuredOn: string;
  readonly whatIf: string;
  /** Step peak both ways: live tensors, then by kind at the peak, then the CUDA allocator's maxima. */
  readonly peaks: readonly ({ readonly label: string } & ComparedFigure)[];
  readonly lines: readonly ComparedLine[];
  readonly modules: readonly ComparedModule[];
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
  /** DataLoader workers; empty when no multi-process loader ran. */
  readonly loaders: readonly LoaderView[];
  /** Forward graphs no backward() used (evaluation without no_grad). */
  readonly noGrad: readonly NoGradRow[];
  /** Lines whose kernels allocate memory the accounting cannot see; null when none. */
  readonly kernels: KernelsView | null;
  /** The other kind of report (predicted or measured) of the same step, side by side; null when none. */
  readonly comparison: ComparisonView | null;
}

export type SortKey = 'location' | 'calls' | 'allocated' | 'net' | 'peak' | 'savedForBackward' | 'backward' | 'leakPerStep' | 'liveAtPeak';

/** What the webview keeps with vscode.setState, and what the serializer restores after a reload. */
export interface WebviewState {
  readonly model: SummaryViewModel | null;
  readonly sort: { readonly key: SortKey; readonly descending: boolean };
  /** The page's scroll offset, so a re-render (sort, export, a hidden panel shown again) keeps the place. */
  readonly scrollY?: number;
  /** Collapsible sections the reader opened or closed (by section id); absent ones use their default. */
  readonly open?: Readonly<Record<string, boolean>>;
  /** Sort of each sortable table other than the per-line one, by table id. */
  readonly tableSort?: Readonly<Record<string, { readonly key: string; readonly descending: boolean }>>;
  /** The figure the predicted-vs-measured tables compare. */
  readonly compare?: { readonly line: CompareLineKey; readonly module: CompareModuleKey };
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
