// DataLoader workers: the harness attributes each worker process to the loader that started it (the line
// that built the DataLoader) and samples the workers' own memory (USS/PSS from smaps_rollup, never RSS).
// The fixture iterates two loaders over the same 20,000 x 32 samples: Python floats in a list (copy-on-read:
// each batch of 256 random rows copies about 256 pages of floats into the worker that reads it, ~1 MiB per
// step) and a numpy array (nothing copied). Linux only: /proc is where worker memory is read.
import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findHarnessRoot, runProfile } from '../../src/profiler/launcher';
import type { ProfileReport } from '../../src/profiler/report';
import { TORCH1_PYTHON, torch2Python } from './torch2';

const FIXTURE = path.resolve(__dirname, '../../../test/fixtures/profiler/workers/copy_on_read.py');
const lineOf = (text: string): number => fs.readFileSync(FIXTURE, 'utf-8').split('\n').findIndex((l) => l.includes(text)) + 1;
const KIB = 1024;
const SCHEMA = path.resolve(__dirname, '../../../schema/report.schema.json');

/** The Python side of the report contract (memhint_harness.schema_check): 'ok' or the first problem. */
function pythonSchemaCheck(report: unknown): Promise<string> {
  return new Promise((resolve) => {
    const child = execFile(TORCH1_PYTHON, ['-m', 'memhint_harness.schema_check', SCHEMA], { env: { ...process.env, PYTHONPATH: findHarnessRoot() } }, (_error, stdout, stderr) =>
      resolve((stdout || stderr).trim()),
    );
    child.stdin?.end(JSON.stringify(report));
  });
}

for (const [label, python] of [
  ['torch 1.13', (): string => TORCH1_PYTHON],
  ['torch 2.x', torch2Python],
] as const) {
  describe(`profiler: DataLoader workers (${label})`, function () {
    this.timeout(120_000);
    let report: ProfileReport;
    before(async function () {
      if (process.platform !== 'linux') this.skip();
      const outcome = await runProfile({
        script: FIXTURE, function: null, setup: null, warmup: 1, steps: 3, maxSeconds: null, backend: 'cpu',
        python: python(), budgetBytes: null, memoryLimitBytes: null, timeoutMs: 100_000, scriptArgs: [],
      });
      assert.equal(outcome.failure, null, outcome.failure?.message);
      assert.ok(outcome.report);
      report = outcome.report;
    });

    it('makes a report both sides of the schema accept (runProfile checked the TypeScript side)', async () => {
      assert.ok(report.dataLoaders && report.timeline.processes && report.noBackwardGraphs && report.kernelWorkspaces);
      assert.equal(await pythonSchemaCheck(report), 'ok');
    });

    it('attributes two workers to each loader, at the line that built it', () => {
      const loaders = report.dataLoaders ?? [];
      assert.deepEqual(loaders.map((l) => [l.line, l.datasetType, l.numWorkers, l.pids.length]), [
        [lineOf('objects = DataLoader('), 'FloatRows', 2, 2],
        [lineOf('arrays = DataLoader('), 'ArrayRows', 2, 2],
      ]);
      assert.equal(new Set(loaders.flatMap((l) => l.pids)).size, 4);
      assert.ok(!loaders.flatMap((l) => l.pids).includes(report.environment.pid));
    });

    it('reports USS and PSS per profiled step, private below proportional', () => {
      for (const loader of report.dataLoaders ?? []) {
        assert.equal(loader.ussByStep.length, 3);
        assert.equal(loader.pssByStep.length, 3);
        loader.ussByStep.forEach((uss, i) => assert.ok(uss > 0 && uss < loader.pssByStep[i], `${uss} < ${loader.pssByStep[i]}`));
      }
    });

    it('sees copy-on-read growth in the list-of-floats workers and none in the numpy ones', () => {
      const [objects, arrays] = report.dataLoaders ?? [];
      // ~256 pages of floats per batch (measured 1,090-1,100 KiB per step on both torches), against
      // allocator noise for numpy (measured 19-56 KiB).
      assert.ok(objects.ussGrowthPerStep >= 512 * KIB, `list of floats: ${objects.ussGrowthPerStep} B per step`);
      assert.ok(arrays.ussGrowthPerStep < 192 * KIB, `numpy: ${arrays.ussGrowthPerStep} B per step`);
      assert.deepEqual([objects.grows, arrays.grows], [true, false]);
      const notes = report.notes.filter((n) => n.includes('DataLoader workers'));
      assert.equal(notes.length, 1, notes.join('\n'));
      assert.match(notes[0], /built at copy_on_read\.py:\d+ \(FloatRows, 2 worker\(s\)\) grew by .* KiB per step/);
    });

    it('adds one memory series per worker to the timeline, on the harness clock', () => {
      const series = report.timeline.processes ?? [];
      assert.deepEqual(series.map((s) => [s.loader, s.worker]).sort(), [[0, 0], [0, 1], [1, 0], [1, 1]]);
      const end = Math.max(...report.timeline.steps.map((s) => s.endMs));
      for (const s of series) {
        assert.equal(s.role, 'dataloader_worker');
        assert.ok(s.t.length >= 4, `${s.t.length} samples`); // one per step boundary at least
        assert.deepEqual([s.ussBytes.length, s.pssBytes.length], [s.t.length, s.t.length]);
        assert.ok(s.t.every((t, i) => i === 0 || t >= s.t[i - 1]));
        assert.ok(s.t[0] >= 0 && s.t[0] <= end);
      }
    });
  });
}
