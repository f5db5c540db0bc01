// Pure unit tests of the profiler's TypeScript side: protocol parsing, targets, sizes, text formatting.
import * as assert from 'node:assert/strict';
import fc from 'fast-check';
import { formatReport } from '../../src/profiler/format';
import { LineDecoder, ProtocolError, parseMessage } from '../../src/profiler/protocol';
import { MEMORY_KINDS, isProfileReport, type BytesByKind, type LineStats, type ProfileReport } from '../../src/profiler/report';
import { parseTarget } from '../../src/profiler/target';
import { formatBytes, parseByteSize } from '../../src/profiler/units';

const zeroKinds = (): BytesByKind => Object.fromEntries(MEMORY_KINDS.map((k) => [k, 0])) as BytesByKind;
const counters = (allocated: number, freed = 0, peak = 0, allocations = 0) => ({
  allocated,
  freed,
  net: allocated - freed,
  peak,
  allocations,
});

function sampleReport(): ProfileReport {
  const file = '/work/train.py';
  const line = (n: number, code: string, extra: Partial<LineStats>): LineStats => ({
    file,
    line: n,
    function: 'train_step',
    code,
    calls: 2,
    self: counters(0),
    inclusive: counters(0),
    savedForBackward: 0,
    savedMadeHere: 0,
    backward: counters(0),
    ...extra,
  });
  return {
    version: 1,
    harnessVersion: '0.1.0',
    target: { kind: 'function', script: file, function: 'train_step', loopLine: null, setup: null, warmup: 1, steps: 2, maxSeconds: null, scriptArgs: [] },
    environment: {
      python: '/usr/bin/python3',
      pythonVersion: '3.11.2',
      torchVersion: '2.3.0',
      backend: 'cpu',
      device: 'cpu',
      pid: 1,
      capabilities: {
        torchDispatchMode: true,
        untypedStorage: true,
        savedTensorsHooks: true,
        currentAutogradNode: true,
        cudaAvailable: false,
        cudaMemoryHistory: false,
        outOfMemoryError: true,
      },
    },
    notes: ['a note'],
    partial: false,
    files: [file],
    lines: [
      line(3, 'out = model(x)', { self: counters(2 * 1024 * 1024, 0, 1024 * 1024, 2), inclusive: counters(2 * 1024 * 1024), backward: counters(8 * 1024 * 1024) }),
      line(4, 'loss = out.sum()', { self: counters(8, 0, 4, 2), savedForBackward: 0 }),
    ],
    steps: [
      { index: 0, startMs: 0, endMs: 10, allocated: 100, freed: 100, liveAtStart: 0, liveAtEnd: 0, peakLive: 100, peakAtMs: 5 },
      { index: 1, startMs: 10, endMs: 20, allocated: 100, freed: 100, liveAtStart: 0, liveAtEnd: 0, peakLive: 100, peakAtMs: 15 },
    ],
    peak: {
      bytes: 3 * 1024 * 1024,
      step: 1,
      atMs: 15,
      location: { file, line: 3 },
      phase: 'forward',
      byKind: { ...zeroKinds(), parameter: 2 * 1024 * 1024, temporary: 1024 * 1024 },
      byLine: [{ file, line: 3, bytes: 1024 * 1024, byKind: { ...zeroKinds(), temporary: 1024 * 1024 } }],
    },
    leaks: [
      { file, line: 9, function: 'main', code: 'total += loss', bytesPerStep: 0, bytesByStep: [], graphNodesPerStep: 7, reason: 'autograd_graph', heldBy: null },
      { file, line: 10, function: 'main', code: 'keep.append(g)', bytesPerStep: 4096, bytesByStep: [4096, 4096], graphNodesPerStep: 0, reason: 'storage', heldBy: '`keep` in main() (list)' },
    ],
    timeline: { originEpochMs: 0, allocator: [{ t: 0, live: 0 }], steps: [] },
    budget: { budgetBytes: 1024, exceeded: true, firstExceeded: { file, line: 3, code: 'out = model(x)', liveBytes: 2048, step: 0 } },
  };
}

describe('profiler protocol', () => {
  it('parses each message type', () => {
    const hello = parseMessage('{"v":1,"type":"hello","torchVersion":"1.13.0","backend":"cpu","pid":42}');
    assert.equal(hello.type, 'hello');
    const progress = parseMessage('{"v":1,"type":"progress","step":0,"warmup":true,"ms":3,"liveBytes":0,"of":3}');
    assert.equal(progress.type, 'progress');
    const error = parseMessage('{"v":1,"type":"error","kind":"oom","message":"out of memory"}');
    assert.deepEqual(error, { type: 'error', v: 1, kind: 'oom', message: 'out of memory', traceback: null, location: null });
    const result = parseMessage(JSON.stringify({ v: 1, type: 'result', report: sampleReport() }));
    assert.equal(result.type, 'result');
  });

  it('rejects malformed lines, other versions, unknown types and incomplete messages', () => {
    for (const bad of [
      'not json',
      '[1,2]',
      '{"type":"hello"}',
      '{"v":2,"type":"hello","torchVersion":"x","backend":"cpu","pid":1}',
      '{"v":1,"type":"bye"}',
      '{"v":1,"type":"hello"}',
      '{"v":1,"type":"result","report":{"version":2}}',
      '{"v":1,"type":"error","kind":"oom"}',
    ]) {
      assert.throws(() => parseMessage(bad), ProtocolError, bad);
    }
  });

  it('decodes lines across arbitrary chunk boundaries and reports the unterminated tail', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ minLength: 1, maxLength: 20 }).map((s) => s.replace(/\n/g, '')), { maxLength: 8 }), fc.array(fc.nat(40)), (lines, cuts) => {
        const text = lines.filter((l) => l.length > 0).map((l) => `${l}\n`).join('') + 'tail';
        const bytes = Buffer.from(text, 'utf-8');
        const decoder = new LineDecoder();
        const got: string[] = [];
        let at = 0;
        for (const cut of [...cuts, bytes.length]) {
          const end = Math.min(bytes.length, at + cut);
          got.push(...decoder.push(bytes.subarray(at, end)));
          at = end;
        }
        got.push(...decoder.push(bytes.subarray(at)));
        assert.deepEqual(got, lines.filter((l) => l.length > 0));
        assert.equal(decoder.end(), 'tail');
      }),
    );
  });

  it('keeps multi-byte characters split between chunks intact', () => {
    const decoder = new LineDecoder();
    const bytes = Buffer.from('{"a":"é"}\n', 'utf-8');
    assert.deepEqual(decoder.push(bytes.subarray(0, 7)), []);
    assert.deepEqual(decoder.push(bytes.subarray(7)), ['{"a":"é"}']);
    assert.equal(decoder.end(), '');
  });

  it('recognises version-1 reports only', () => {
    assert.ok(isProfileReport(sampleReport()));
    assert.ok(!isProfileReport({ ...sampleReport(), version: 2 }));
    assert.ok(!isProfileReport(null));
  });
});

describe('profiler targets and sizes', () => {
  it('splits SCRIPT::FUNCTION and SCRIPT:LINE, keeping dotted names and Windows paths', () => {
    assert.deepEqual(parseTarget('train.py::train_step'), { script: 'train.py', function: 'train_step', loopLine: null });
    assert.deepEqual(parseTarget('C:\\w\\train.py::Trainer.step'), { script: 'C:\\w\\train.py', function: 'Trainer.step', loopLine: null });
    assert.deepEqual(parseTarget('train.py'), { script: 'train.py', function: null, loopLine: null });
    assert.deepEqual(parseTarget('train.py:120'), { script: 'train.py', function: null, loopLine: 120 });
    assert.deepEqual(parseTarget('C:\\w\\train.py:7'), { script: 'C:\\w\\train.py', function: null, loopLine: 7 });
    assert.throws(() => parseTarget('train.py:0'));
    assert.throws(() => parseTarget('train.py::'));
    assert.throws(() => parseTarget('train.py::1bad'));
    assert.throws(() => parseTarget('::f'));
  });

  it('parses byte sizes with binary and decimal units', () => {
    assert.equal(parseByteSize('24GiB'), 24 * 1024 ** 3);
    assert.equal(parseByteSize('512 MB'), 512 * 1000 ** 2);
    assert.equal(parseByteSize('1.5g'), 1.5 * 1024 ** 3);
    assert.equal(parseByteSize('4096'), 4096);
    assert.equal(parseByteSize('lots'), null);
    assert.equal(parseByteSize('5 parsecs'), null);
  });

  it('formats bytes', () => {
    assert.equal(formatBytes(512), '512 B');
    assert.equal(formatBytes(4 * 1024 * 1024), '4 MiB');
    assert.equal(formatBytes(-1536), '-1.5 KiB');
  });
});

describe('profiler text report', () => {
  const source = ['import torch', '', 'out = model(x)', 'loss = out.sum()', '', '', '', '', 'total += loss', 'keep.append(g)'].join('\n');
  const text = formatReport(sampleReport(), () => source);

  it('prints the source with per-step columns', () => {
    const row = text.split('\n').find((l) => l.includes('out = model(x)') && l.trimStart().startsWith('3'));
    assert.ok(row, text);
    assert.match(row, /1 MiB.*4 MiB/, 'alloc per step (2 MiB / 2 steps) and backward per step');
  });

  it('summarises the peak, leaks, budget and notes', () => {
    assert.match(text, /Live at peak: 3 MiB \(forward at \/work\/train\.py:3\)/);
    assert.match(text, /parameter 2 MiB, temporary 1 MiB/);
    assert.match(text, /train\.py:9 +keeps the autograd graph alive \(\+7 nodes per step\)/);
    assert.match(text, /train\.py:10 +4 KiB per step, held by `keep` in main\(\) \(list\)/);
    assert.match(text, /Budget 1 KiB EXCEEDED first at \/work\/train\.py:3/);
    assert.match(text, /- a note/);
  });
});
