// The JSON report of one profiling run: what `memhint profile --format json` prints and what the editor
// (decorations, hovers, summary webview) consumes. Plain data, no behaviour, no `vscode`.
//
// Conventions:
// - Every size is in bytes (integer). Every count is an integer.
// - Per-line counters are totals over the profiled steps (warmup excluded); divide by `steps.length`
//   for a per-step figure. `peak` figures are maxima, never summed.
// - `file` is an absolute, normalised path of a user file (the harness skips torch, site-packages,
//   the standard library and itself). `line` is 1-based.
// - Times are milliseconds relative to `timeline.originEpochMs` unless a field says otherwise.

import { reportProblem } from './schema';

export { reportProblem };

/** Bumped on any incompatible change of this shape. Readers must reject other versions. */
export const REPORT_VERSION = 1;

export type Bytes = number;

export type Backend = 'cpu' | 'cuda';

/** What owns a live storage. `activation` means "saved by autograd for backward". */
export type MemoryKind = 'parameter' | 'gradient' | 'optimizer_state' | 'activation' | 'input' | 'temporary';

export const MEMORY_KINDS: readonly MemoryKind[] = [
  'parameter',
  'gradient',
  'optimizer_state',
  'activation',
  'input',
  'temporary',
];

export type BytesByKind = Record<MemoryKind, Bytes>;

export interface SourceLocation {
  readonly file: string;
  readonly line: number;
  /** Name of the enclosing function (`<module>` at top level), when known. */
  readonly function?: string;
}

/** How the step was selected, as given on the command line. */
export interface ProfileTarget {
  /** function: run the script as __main__ and count calls of `function`; setup: import the file and
   *  call `setup()` for the arguments; loop: run the script, each iteration of the loop on `loopLine` is
   *  a step; script: profile the whole script for `maxSeconds` (no training loop found). */
  readonly kind: 'function' | 'setup' | 'loop' | 'script';
  readonly script: string;
  readonly function: string | null;
  /** kind loop: the 1-based line of the loop's `for`/`while` header; else null. */
  readonly loopLine: number | null;
  /** kind loop: the loop's file when it is not `script` (a module of the user's that the script imports
   *  and runs, e.g. minGPT's trainer); null or absent otherwise (reports before this field). */
  readonly loopFile?: string | null;
  readonly setup: string | null;
  readonly warmup: number;
  readonly steps: number;
  readonly maxSeconds: number | null;
  /** Extra argv given to the script (after `--`). */
  readonly scriptArgs: readonly string[];
}

/** Features the harness found in the user's torch; the editor shows the notes for missing ones. */
export interface Capabilities {
  readonly torchDispatchMode: boolean;
  /** `Tensor.untyped_storage()` (2.x) rather than `Tensor.storage()` (1.13). */
  readonly untypedStorage: boolean;
  readonly savedTensorsHooks: boolean;
  /** `torch._C._current_autograd_node()`: attributes backward allocations to forward lines. */
  readonly currentAutogradNode: boolean;
  readonly cudaAvailable: boolean;
  /** `torch.cuda.memory._record_memory_history` (snapshot for pytorch.org/memory_viz). */
  readonly cudaMemoryHistory: boolean;
  readonly outOfMemoryError: boolean;
}

export interface Environment {
  readonly python: string;
  readonly pythonVersion: string;
  readonly torchVersion: string;
  readonly backend: Backend;
  /** e.g. `cpu`, `cuda:0 (NVIDIA H200)`. */
  readonly device: string;
  /** cuda backend: the allocator's own history (`trace`) or a Python dispatch mode on every op (`dispatch`). */
  readonly cudaPath?: 'trace' | 'dispatch';
  /** The line tracer's global trace function: built in C (`c`) or the pure-Python fallback (`python`). */
  readonly tracer?: 'c' | 'python';
  readonly pid: number;
  readonly capabilities: Capabilities;
}

/** Allocation counters of one line (or of a phase of a line). */
export interface MemoryCounters {
  readonly allocated: Bytes;
  readonly freed: Bytes;
  /** allocated - freed. */
  readonly net: Bytes;
  /** Highest rise of live memory above its level when the line started, over all executions. */
  readonly peak: Bytes;
  /** Number of storage allocations. */
  readonly allocations: number;
}

/** Caching-allocator figures measured at the boundaries of a line (cuda backend only). */
export interface CudaLineCounters {
  /** Sum over executions of (memory_allocated after - before). */
  readonly allocatedDelta: Bytes;
  readonly reservedDelta: Bytes;
  /** Highest max_memory_allocated reached while the line ran, minus the allocated level at its start. */
  readonly maxAllocatedRise: Bytes;
}

export interface LineStats extends SourceLocation {
  /** The source text of the line (trimmed), for hovers and the text report. */
  readonly code: string;
  /** Times the line ran during the profiled steps (0 when the line only allocated from another thread). */
  readonly calls: number;
  /** Allocations whose innermost user frame is this line. */
  readonly self: MemoryCounters;
  /** Allocations while this line was anywhere on the user call stack (includes callees). */
  readonly inclusive: MemoryCounters;
  /** Bytes autograd saved for backward by the ops this line ran (saved-tensor hooks), wherever the tensors
   *  were allocated: `out = self.fc2(h)` saves `h`. Total over steps. */
  readonly savedForBackward: Bytes;
  /** Bytes this line allocated that autograd saved for backward, by whichever op: the activations this
   *  line made (`h = F.gelu(self.fc1(x))` makes fc1's output, saved by gelu, and h, saved by fc2). */
  readonly savedMadeHere: Bytes;
  /** Allocations made during backward() by graph nodes this line created in forward. */
  readonly backward: MemoryCounters;
  readonly cuda?: CudaLineCounters;
}

export interface StepStats {
  /** 0-based index among profiled steps (warmup not included). */
  readonly index: number;
  readonly startMs: number;
  readonly endMs: number;
  readonly allocated: Bytes;
  readonly freed: Bytes;
  readonly liveAtStart: Bytes;
  readonly liveAtEnd: Bytes;
  /** Highest live bytes during the step (allocator view of tracked storages). */
  readonly peakLive: Bytes;
  readonly peakAtMs: number;
}

export interface LiveByLine extends SourceLocation {
  readonly bytes: Bytes;
  readonly byKind: BytesByKind;
}

/** Live memory at one instant, grouped by the allocating line and by kind. */
export interface LiveSnapshot {
  readonly bytes: Bytes;
  /** Step index, or null outside a profiled step. */
  readonly step: number | null;
  readonly atMs: number;
  /** The line running when the snapshot was taken (allocating line at a peak). */
  readonly location: SourceLocation | null;
  readonly phase: 'forward' | 'backward' | 'other';
  readonly byKind: BytesByKind;
  /** Sorted by bytes, descending. Storages allocated before tracking started have file `<untracked>`. */
  readonly byLine: readonly LiveByLine[];
}

/** Storage allocated in step k still alive at the end of step k+1 and not model/optimizer state. */
export interface Leak extends SourceLocation {
  readonly code: string;
  /** Mean leaked bytes per step (bytesByStep averaged). */
  readonly bytesPerStep: Bytes;
  /** Bytes allocated at this line in step k that survived step k+1, for each k checked. */
  readonly bytesByStep: readonly Bytes[];
  /** Autograd graph nodes kept alive per step by tensors created at this line: a graph that grows
   *  (`total += loss`, reason autograd_graph), or the graphs behind leaked tensors (`losses.append(loss)`). */
  readonly graphNodesPerStep: number;
  readonly reason: 'storage' | 'autograd_graph';
  /** What keeps the leaked storages alive, when the harness could name it: "`grad_snapshots` (list) in main()". */
  readonly heldBy: string | null;
}

export interface TimelinePoint {
  readonly t: number;
  readonly live: Bytes;
}

export interface StepBoundary {
  readonly step: number;
  readonly warmup: boolean;
  readonly startMs: number;
  readonly endMs: number;
}

/** Series from the native (or JS fallback) process sampler: owned by src/sampler, attached by the runner. */
export interface OsTimeline {
  readonly source: string;
  readonly pid: number;
  readonly t: readonly number[];
  readonly rssBytes: readonly number[];
  readonly gpuUsedBytes?: readonly number[];
  readonly notes?: readonly string[];
  /** NVML's figure for this process (what nvidia-smi lists), summed over GPUs; null where withheld. */
  readonly gpuProcessBytes?: readonly (number | null)[];
  readonly gpuTotalBytes?: number;
  readonly gpuDevice?: string;
  readonly intervalMs?: number;
  /** Epoch ms of the sampler's t = 0; the launcher rebases t onto originEpochMs when present. */
  readonly startedAtEpochMs?: number;
  /** The process exited while sampled (the series ends there). */
  readonly exited?: boolean;
  readonly peakRssBytes?: Bytes;
}

export interface Timeline {
  /** Epoch milliseconds of t = 0 (harness clock), so series from other processes can be aligned. */
  readonly originEpochMs: number;
  /** Live tracked bytes after allocation events, downsampled keeping every local extreme that matters. */
  readonly allocator: readonly TimelinePoint[];
  readonly steps: readonly StepBoundary[];
  /** cuda backend: torch.cuda.memory_allocated / memory_reserved sampled at line boundaries. */
  readonly cuda?: { readonly t: readonly number[]; readonly allocated: readonly Bytes[]; readonly reserved: readonly Bytes[] };
  readonly os?: OsTimeline;
  /** Processes other than the harness, sampled by the harness itself (DataLoader workers). */
  readonly processes?: readonly ProcessSeries[];
}

/** Memory of one DataLoader worker process over time (/proc/<pid>/smaps_rollup), on the harness clock. */
export interface ProcessSeries {
  readonly pid: number;
  readonly role: 'dataloader_worker';
  /** Index into `ProfileReport.dataLoaders`. */
  readonly loader: number;
  /** The worker's id within its loader's iterator (0 .. numWorkers - 1). */
  readonly worker: number;
  readonly t: readonly number[];
  /** Unique set size: the worker's private pages, what it would give back by exiting. */
  readonly ussBytes: readonly Bytes[];
  /** Proportional set size: private pages plus its share of the pages it shares (with the main process). */
  readonly pssBytes: readonly Bytes[];
}

export interface CudaAllocatorInfo {
  /** Subset of torch.cuda.memory_stats(): allocated_bytes.all.current/peak, reserved_bytes.all.*, num_ooms ... */
  readonly memoryStats: Readonly<Record<string, number>>;
  readonly memorySummary: string;
  readonly allocatedBytes: Bytes;
  readonly reservedBytes: Bytes;
  readonly maxAllocatedBytes: Bytes;
  readonly maxReservedBytes: Bytes;
  /** reserved - allocated at the end of the profile. */
  readonly fragmentationBytes: Bytes;
  /** Pickle for pytorch.org/memory_viz, or null when `_record_memory_history` is unavailable. */
  readonly snapshotPath: string | null;
}

export interface OomInfo {
  readonly message: string;
  /** The line whose allocation failed (innermost user frame), when known. */
  readonly location: SourceLocation | null;
  readonly code: string;
  /** Bytes the failing allocation asked for, parsed from the error or computed from the op; null if unknown. */
  readonly requestedBytes: Bytes | null;
  readonly step: number | null;
  readonly liveAtOom: LiveSnapshot;
  readonly advice: readonly string[];
}

export interface BudgetInfo {
  readonly budgetBytes: Bytes;
  readonly exceeded: boolean;
  /** First allocation that took live memory above the budget. */
  readonly firstExceeded: (SourceLocation & { readonly code: string; readonly liveBytes: Bytes; readonly step: number | null }) | null;
}

/**
 * Memory of one nn.Module of the profiled model, including its submodules'. Snake-case keys: the shape the
 * predictor's per-module data shares. Per-step figures are totals over the profiled steps / steps.
 */
export interface ModuleStats {
  /** Class name of the model the module belongs to (the outermost module that ran). */
  readonly root: string;
  /** Path under the root, as `named_modules()` gives it (`transformer.h.3.mlp`); "" for the root itself. */
  readonly path: string;
  /** Class name of the module. */
  readonly type: string;
  /** forward() calls per step (this module itself). */
  readonly calls: number;
  /** Parameter and buffer bytes (distinct storages: tied weights once). */
  readonly params: Bytes;
  /** Gradient bytes of its parameters, highest at the end of a profiled backward(). */
  readonly grads: Bytes;
  /** Optimizer state bytes of its parameters. */
  readonly optimizer: Bytes;
  /** Bytes saved for backward by ops that ran inside its forward, per step. */
  readonly saved: Bytes;
  /** Bytes allocated inside its forward, per step. */
  readonly forward_alloc: Bytes;
  /** Bytes allocated in backward by graph nodes its forward created, per step. */
  readonly backward_alloc: Bytes;
  /** Bytes allocated inside it (forward or backward) and live at the profile's peak. */
  readonly live_at_peak: Bytes;
}

/** A module's per-step figures in the editor's and the merged reports' camel case (ModuleStats keeps the harness's keys). */
export interface ModuleFigures {
  readonly calls: number;
  readonly params: Bytes;
  readonly grads: Bytes;
  readonly optimizer: Bytes;
  readonly saved: Bytes;
  readonly forwardAlloc: Bytes;
  readonly backwardAlloc: Bytes;
  readonly liveAtPeak: Bytes;
}

/** The harness's figures of one module (already per step) under the TypeScript side's names. */
export function moduleFigures(m: ModuleStats): ModuleFigures {
  return {
    calls: m.calls,
    params: m.params,
    grads: m.grads,
    optimizer: m.optimizer,
    saved: m.saved,
    forwardAlloc: m.forward_alloc,
    backwardAlloc: m.backward_alloc,
    liveAtPeak: m.live_at_peak,
  };
}

/**
 * A multi-process DataLoader the script iterated, at the user line that built it. Worker memory is USS/PSS,
 * never RSS (which counts every page a worker shares with the main process once per worker).
 */
export interface DataLoaderStats extends SourceLocation {
  readonly code: string;
  /** Class name of the loader's dataset. */
  readonly datasetType: string;
  readonly numWorkers: number;
  /** Every worker process seen (a new iterator per epoch starts new ones). */
  readonly pids: readonly number[];
  /** USS / PSS summed over the loader's live workers at the end of each profiled step. */
  readonly ussByStep: readonly Bytes[];
  readonly pssByStep: readonly Bytes[];
  /** Mean USS growth per profiled step, all workers (negative when it shrank). */
  readonly ussGrowthPerStep: number;
  /** True when ussGrowthPerStep is large enough to be copy-on-read of the dataset (a note says so). */
  readonly grows: boolean;
}

/**
 * A statement of the step whose forward built an autograd graph that no backward() used (evaluation
 * without torch.no_grad()): the graph's nodes and the activations they saved stay alive for nothing.
 */
export interface NoBackwardGraph extends SourceLocation {
  readonly code: string;
  /** Autograd nodes the statement created per step (AccumulateGrad nodes of parameters excluded). */
  readonly nodesPerStep: number;
  /** Bytes allocated in the step and saved for backward by the statement's ops, per step: what the graph
   *  keeps alive while its output lives and what torch.no_grad() would free at once. */
  readonly bytesKeptPerStep: Bytes;
  /** Profiled steps in which the statement built such a graph. */
  readonly steps: number;
}

/** A line that ran ops whose kernels allocate memory internally (convolution, oneDNN, LSTM workspaces):
 *  that memory is invisible to the CPU accounting, so the line's allocation volume is under-counted. */
export interface KernelWorkspaceLine extends SourceLocation {
  readonly code: string;
  /** The forward aten ops, e.g. `aten.convolution.default`; their backward kernels (charged to this line
   *  too) have workspaces as well. */
  readonly ops: readonly string[];
  /** Forward calls of those ops during the profiled steps (totals, not per step). */
  readonly calls: number;
}

export interface ProfileReport {
  readonly version: typeof REPORT_VERSION;
  readonly harnessVersion: string;
  readonly target: ProfileTarget;
  readonly environment: Environment;
  /** Degradations and caveats (missing torch features, untracked memory, truncated steps). */
  readonly notes: readonly string[];
  /** True when the run stopped early (OOM, timeout) and the figures cover part of the requested steps. */
  readonly partial: boolean;
  /** User files seen, absolute paths. */
  readonly files: readonly string[];
  /** Sorted by file, then line. Only lines with any activity (allocation, free, saved tensor, call). */
  readonly lines: readonly LineStats[];
  readonly steps: readonly StepStats[];
  /** Snapshot at the highest live point of all profiled steps; null when no step completed. */
  readonly peak: LiveSnapshot | null;
  readonly leaks: readonly Leak[];
  readonly timeline: Timeline;
  /** Per-module breakdown in tree order (parents before children); absent when torch has no global
   *  module hooks, empty when no nn.Module ran. */
  readonly modules?: readonly ModuleStats[];
  readonly cuda?: CudaAllocatorInfo;
  readonly oom?: OomInfo;
  readonly budget?: BudgetInfo;
  /** Absent when no multi-process DataLoader ran (or not on Linux). */
  readonly dataLoaders?: readonly DataLoaderStats[];
  /** Absent when saved-tensor hooks are unavailable. */
  readonly noBackwardGraphs?: readonly NoBackwardGraph[];
  readonly kernelWorkspaces?: readonly KernelWorkspaceLine[];
}

/** Type guard used by readers (editor, CLI, protocol) before trusting a parsed report: a deep check
 *  against schema/report.schema.json (reportProblem() says what is wrong). */
export function isProfileReport(value: unknown): value is ProfileReport {
  return reportProblem(value) === null;
}
