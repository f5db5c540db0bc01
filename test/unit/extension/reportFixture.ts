// Builds ProfileReport objects for the editor's pure modules: every field explicit, figures chosen so
// expected outputs can be worked out by hand.
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
