// The CLI's worker threads: files linted on other threads give the same results, in the same order,
// as on this one.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Linter, defaultSettings } from '../../../src/lint';
import { lintInParallel, workerCount, type LintJob } from '../../../src/cli/lint-pool';
import { lintJob } from '../../../src/cli/lint-worker';

const repo = path.join(__dirname, '..', '..', '..', '..');

function pyFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((e) => (e.isDirectory() ? pyFiles(path.join(dir, e.name)) : e.name.endsWith('.py') ? [path.join(dir, e.name)] : []));
}

describe('lint worker threads (lint-pool)', function () {
  this.timeout(300_000);
  let linter: Linter;
  let jobs: LintJob[];
  before(async () => {
    linter = await Linter.create();
    // From each rule's folder one file with expected findings and one clean one (the first N files of the
    // tree would depend on how many clean fixtures sort first).
    const all = pyFiles(path.join(repo, 'test', 'fixtures', 'lint'));
    const files = [...new Set(all.map((f) => path.dirname(f)))].flatMap((dir) => {
      const here = all.filter((f) => path.dirname(f) === dir);
      const expects = (f: string) => fs.readFileSync(f, 'utf8').includes('# expect');
      return [here.find(expects), here.find((f) => !expects(f))].filter((f): f is string => f !== undefined);
    });
    // A file that cannot be read (a directory named .py) and one over the size limit: warnings, no result.
    const odd = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-pool-'));
    fs.mkdirSync(path.join(odd, 'folder.py'));
    fs.writeFileSync(path.join(odd, 'big.py'), 'x = 1\n'.repeat(100));
    files.splice(3, 0, path.join(odd, 'folder.py'));
    files.splice(7, 0, path.join(odd, 'big.py'));
    jobs = files.map((filename, index) => ({ index, filename, settings: defaultSettings, maxFileSize: filename.endsWith('big.py') ? 10 : 1 << 24 }));
  });

  it('workers alone give the results and warnings of one thread, in file order', async () => {
    const sequential = jobs.map((job) => lintJob(linter, job));
    assert.ok(sequential.some((r) => r.result !== null && r.result.findings.length > 0), 'the fixtures have findings');
    assert.ok(sequential.some((r) => r.warnings.length > 0 && r.result === null), 'the odd files warn');
    let here = 0;
    const threaded = await lintInParallel(jobs, 2, (job) => (here++, lintJob(linter, job)), false);
    assert.equal(here, 0, 'every file was linted on a worker thread');
    assert.deepEqual(threaded, sequential);
  });

  it('with the main thread linting too, the same results', async () => {
    const sequential = jobs.map((job) => lintJob(linter, job));
    assert.deepEqual(await lintInParallel(jobs, 1, (job) => lintJob(linter, job)), sequential);
  });

  it('MEMHINT_LINT_WORKERS sets the count (0: none), never more than the files', () => {
    const saved = process.env.MEMHINT_LINT_WORKERS;
    try {
      process.env.MEMHINT_LINT_WORKERS = '0';
      assert.equal(workerCount(100), 0);
      process.env.MEMHINT_LINT_WORKERS = '3';
      assert.equal(workerCount(100), 3);
      assert.equal(workerCount(2), 2);
      delete process.env.MEMHINT_LINT_WORKERS;
      assert.equal(workerCount(1), 0, 'one file: no thread');
    } finally {
      if (saved === undefined) delete process.env.MEMHINT_LINT_WORKERS;
      else process.env.MEMHINT_LINT_WORKERS = saved;
    }
  });
});
