// One report contract on both sides: schema/report.schema.json, checked by TypeScript (src/profiler/schema.ts,
// used by the protocol and by every report loaded from a file) and by Python (memhint_harness.schema_check)
// on a report the harness made.
import * as assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { findHarnessRoot, runProfile } from '../../src/profiler/launcher';
import { isProfileReport, reportProblem, type ProfileReport } from '../../src/profiler/report';
import { report as sampleReport } from './extension/reportFixture';
import { TORCH1_PYTHON } from './torch2';

const ROOT = path.resolve(__dirname, '../../..');
const SCHEMA = path.join(ROOT, 'schema', 'report.schema.json');

function pythonCheck(report: unknown): Promise<string> {
  return new Promise((resolve) => {
    const child = execFile(
      TORCH1_PYTHON, ['-m', 'memhint_harness.schema_check', SCHEMA],
      { env: { ...process.env, PYTHONPATH: findHarnessRoot() } },
      (_error, stdout, stderr) => resolve((stdout || stderr).trim()),
    );
    child.stdin?.end(JSON.stringify(report));
  });
}

const broken = (report: ProfileReport, edit: (r: Record<string, unknown>) => void): unknown => {
  const copy = JSON.parse(JSON.stringify(report)) as Record<string, unknown>;
  edit(copy);
  return copy;
};

describe('profiler: the report schema, on both sides', function () {
  this.timeout(120_000);
  let real: ProfileReport;
  before(async () => {
    const outcome = await runProfile({
      script: path.join(ROOT, 'test/fixtures/profiler/linear_adam.py'), function: 'train_step', setup: null, warmup: 1,
      steps: 2, maxSeconds: null, backend: 'cpu', python: TORCH1_PYTHON, budgetBytes: 1, memoryLimitBytes: null,
      timeoutMs: 100_000, scriptArgs: [],
    });
    assert.ok(outcome.report, outcome.failure?.message);
    real = outcome.report;
  });

  it('accepts a report the harness made, in TypeScript and in Python', async () => {
    assert.equal(reportProblem(real), null);
    assert.ok(real.modules && real.budget, 'the optional parts are exercised too');
    assert.equal(await pythonCheck(real), 'ok');
  });

  it('accepts the typed report the editor tests use', () => {
    assert.equal(reportProblem(sampleReport()), null);
  });

  const cases: Array<[string, (r: Record<string, unknown>) => void, RegExp]> = [
    ['a nested wrong type', (r) => ((r.lines as Array<{ self: { net: unknown } }>)[0].self.net = '12'), /^lines\[0\]\.self\.net: expected integer, got string$/],
    ['a missing nested field', (r) => delete (r.peak as Record<string, unknown>).byKind, /^peak\.byKind: missing$/],
    ['an unknown field', (r) => (r.surprise = 1), /^surprise: not part of the report schema$/],
    ['a bad enum', (r) => ((r.leaks as Array<Record<string, unknown>>).push({ ...(r.leaks as object[])[0], reason: 'vibes' })), /reason: expected one of/],
    ['another version', (r) => (r.version = 2), /^version: expected 1$/],
    ['a negative size', (r) => ((r.steps as Array<Record<string, unknown>>)[0].allocated = -1), /^steps\[0\]\.allocated: -1 is below 0$/],
  ];
  for (const [name, edit, pattern] of cases) {
    it(`rejects ${name}, saying where, on both sides`, async () => {
      const value = broken(real, edit);
      assert.equal(isProfileReport(value), false);
      assert.match(reportProblem(value) ?? '', pattern);
      assert.match(await pythonCheck(value), pattern);
    });
  }
});
