// Builds ProfileReport objects for the editor's pure modules: every field explicit, figures chosen so
// expected outputs can be worked out by hand.
import type { PredictedReport } from '../../../src/predict/schema';
import type { BytesByKind, LineStats, MemoryCounters, ProfileReport } from '../../../src/profiler/report';

export const FILE = '/work/project/train.py';

export function kinds(partial: Partial<BytesByKind> = {}): BytesByKind {
  return { parameter: 0, gradient: 0, optimizer_state: 0, activation: 0, input: 0, temporary: 0, ...partial };
}

export function counters(allocated: number, freed: number, peak: number, allocations = 1): MemoryCounters {
  return { allocated, freed, net: allocated - freed, peak, allocations };
}

export function line(lineNo: number, code: string, partial: Partial<LineStats> = {}): LineStats {
  return {
    file: FILE,
    line: lineNo,
    function: 'train_step',
    code,
    calls: 3,
    self: counters(0, 0, 0, 0),
    inclusive: counters(0, 0, 0, 0),
    savedForBackward: 0,
    savedMadeHere: 0,
    backward: counters(0, 0, 0, 0),
    ...partial,
  };
}

export function report(partial: Partial<ProfileReport> = {}): ProfileReport {
  return {
    version: 1,
    harnessVersion: '0.1.0',
    target: { kind: 'function', script: FILE, function: 'train_step', loopLine: null, setup: null, warmup: 1, steps: 3, maxSeconds: null, scriptArgs: [] },
    environment: {
      python: '/usr/bin/python3',
      pythonVersion: '3.11.2',
      torchVersion: '1.13.1',
      backend: 'cpu',
      device: 'cpu',
      pid: 1234,
      capabilities: {
        torchDispatchMode: true,
        untypedStorage: false,
        savedTensorsHooks: true,
        currentAutogradNode: false,
        cudaAvailable: false,
        cudaMemoryHistory: false,
        outOfMemoryError: false,
      },
    },
    notes: [],
    partial: false,
    files: [FILE],
    lines: [],
    steps: [0, 1, 2].map((i) => ({ index: i, startMs: 100 + i * 100, endMs: 180 + i * 100, allocated: 0, freed: 0, liveAtStart: 0, liveAtEnd: 0, peakLive: 1000 + i, peakAtMs: 150 + i * 100 })),
    peak: null,
    leaks: [],
    timeline: { originEpochMs: 1_700_000_000_000, allocator: [], steps: [] },
    ...partial,
  };
}

/** A predicted report (mode "predicted"): one line, a three-level module tree, a device it does not fit. */
export function predictedReport(partial: Partial<PredictedReport['prediction']> = {}): PredictedReport {
  const base = report({
    environment: { ...report().environment, backend: 'cuda', device: 'cuda (predicted)', torchVersion: '2.13.0' },
    steps: [{ index: 0, startMs: 0, endMs: 5, allocated: 0, freed: 0, liveAtStart: 0, liveAtEnd: 0, peakLive: 3 * 1024 ** 2, peakAtMs: 2 }],
    lines: [line(20, 'out = model(x)', { calls: 1, inclusive: counters(2 * 1024 ** 2, 0, 2 * 1024 ** 2) })],
  });
  return {
    ...base,
    mode: 'predicted',
    modules: [
      { root: 'MLP', path: '', type: 'MLP', calls: 1, params: 4096, grads: 4096, optimizer: 8192, saved: 1024, forward_alloc: 2560, backward_alloc: 4096, live_at_peak: 3000 },
      { root: 'MLP', path: 'net', type: 'Sequential', calls: 1, params: 4096, grads: 4096, optimizer: 8192, saved: 1024, forward_alloc: 2560, backward_alloc: 4096, live_at_peak: 3000 },
      { root: 'MLP', path: 'net.0', type: 'Linear', calls: 1, params: 3072, grads: 3072, optimizer: 6144, saved: 512, forward_alloc: 1024, backward_alloc: 3072, live_at_peak: 2000 },
      { root: 'MLP', path: 'net.2', type: 'Linear', calls: 1, params: 1024, grads: 1024, optimizer: 2048, saved: 512, forward_alloc: 1536, backward_alloc: 1024, live_at_peak: 1000 },
    ],
    prediction: {
      allocator: { allocatedBytes: 0, reservedBytes: 0, maxAllocatedBytes: 3 * 1024 ** 2, maxReservedBytes: 20 * 1024 ** 2, requestedBytes: 0, segments: 1, allocRetries: 0, ooms: 0, model: 'x', maxSplitSize: null },
      rawPeakBytes: 3 * 1024 ** 2,
      deviceMemoryBytes: 16 * 1024 ** 2,
      fits: false,
      firstExceeded: { file: FILE, line: 20, function: 'train_step', code: 'out = model(x)', reservedBytes: 20 * 1024 ** 2, allocatedBytes: 1, step: 0, phase: 'forward' },
      amp: 'bf16',
      checkpoint: null,
      setupArgs: { batch: 64 },
      seconds: 0.5,
      ...partial,
    },
  };
}


const MiB = 1024 ** 2;

/**
 * The newer report sections: one DataLoader with two sampled workers (and one that left no samples), two
 * statements whose graphs no backward() used, and a convolution line with kernel workspaces.
 */
export function sectionsReport(): ProfileReport {
  return report({
    lines: [line(30, 'y = self.conv(x)', { inclusive: counters(9 * MiB, 9 * MiB, 3 * MiB) })],
    dataLoaders: [
      { file: FILE, line: 5, function: 'main', code: '  loader = DataLoader(ds, num_workers=2)  ', datasetType: 'PathsDataset', numWorkers: 2, pids: [101, 102, 103], ussByStep: [10 * MiB, 14 * MiB, 18 * MiB], pssByStep: [20 * MiB, 24 * MiB, 28 * MiB], ussGrowthPerStep: 4 * MiB, grows: true },
    ],
    timeline: {
      originEpochMs: 0,
      allocator: [],
      steps: [],
      processes: [
        { pid: 102, role: 'dataloader_worker', loader: 0, worker: 1, t: [0, 10, 20], ussBytes: [MiB, 3 * MiB, 6 * MiB], pssBytes: [2 * MiB, 4 * MiB, 7 * MiB] },
        { pid: 101, role: 'dataloader_worker', loader: 0, worker: 0, t: [0, 10], ussBytes: [2 * MiB, 2 * MiB], pssBytes: [5 * MiB, 5 * MiB] },
        { pid: 103, role: 'dataloader_worker', loader: 0, worker: 0, t: [], ussBytes: [], pssBytes: [] },
        { pid: 201, role: 'dataloader_worker', loader: 1, worker: 0, t: [0], ussBytes: [MiB], pssBytes: [MiB] },
      ],
    },
    noBackwardGraphs: [
      { file: FILE, line: 40, function: 'evaluate', code: '  out = model(x_val)', nodesPerStep: 12, bytesKeptPerStep: 8 * MiB, steps: 3 },
      { file: FILE, line: 9, function: 'evaluate', code: 'score = head(out)', nodesPerStep: 30, bytesKeptPerStep: MiB, steps: 3 },
    ],
    kernelWorkspaces: [
      { file: FILE, line: 30, function: 'forward', code: 'y = self.conv(x)', ops: ['aten.convolution.default'], calls: 6 },
      { file: FILE, line: 31, function: 'forward', code: 'h, _ = self.lstm(y)', ops: ['aten.lstm.input', 'aten.mkldnn_rnn_layer.default'], calls: 3 },
    ],
  });
}

/**
 * A measured profile of predictedReport()'s step (train.py::train_step, three steps): line 20 allocates
 * 2.5 MiB per step (predicted 2 MiB), line 21 only here; two of the four predicted modules ran.
 */
export function measuredOfPredicted(): ProfileReport {
  return report({
    lines: [
      line(20, 'out = model(x)', { inclusive: counters(7.5 * MiB, 7.5 * MiB, 2 * MiB) }),
      line(21, 'loss.backward()', { backward: counters(3 * MiB, 3 * MiB, MiB) }),
    ],
    peak: { bytes: 2.5 * MiB, step: 1, atMs: 150, location: { file: FILE, line: 20 }, phase: 'forward', byKind: kinds({ activation: 1.5 * MiB, parameter: MiB }), byLine: [] },
    modules: [
      { root: 'MLP', path: '', type: 'MLP', calls: 1, params: 4096, grads: 4096, optimizer: 8192, saved: 2048, forward_alloc: 2560, backward_alloc: 4096, live_at_peak: 2500 },
      { root: 'MLP', path: 'net.0', type: 'Linear', calls: 1, params: 3072, grads: 3072, optimizer: 6144, saved: 512, forward_alloc: 1024, backward_alloc: 3072, live_at_peak: 2000 },
    ],
  });
}
