// The profiler against scripts that fight it (test/fixtures/profiler/hostile.py): background children that
// hold stdout/stderr and escape with setsid(), the CLI stopped by signals or killed, scripts that close the
// protocol descriptor or forge protocol lines, recursive/async/generator steps, a removed tracer, tensors
// made on other threads, absurd timeouts, and `--format json` errors. Real processes throughout.
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { runProfile, type ProfileOptions } from '../../src/profiler/launcher';
import { startTimer } from '../../src/profiler/processTree';
import type { ProfileReport } from '../../src/profiler/report';

const PYTHON = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';
const ROOT = path.resolve(__dirname, '../../..');
const FIXTURES = path.join(ROOT, 'test/fixtures/profiler');
const HOSTILE = path.join(FIXTURES, 'hostile.py');
const ERRORS = path.join(FIXTURES, 'errors.py');
const COMMAND = path.join(ROOT, 'out/src/cli/profile-command.js');

/** A tag in the environment of everything a test run starts, to find survivors in /proc. */
function newTag(): string {
  return `t${randomBytes(8).toString('hex')}`;
}

function tagged(tag: string): number[] {
  const needle = `MEMHINT_TEST_TAG=${tag}`;
  const found: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(needle)) found.push(Number(name));
    } catch {
      // gone or not ours
    }
  }
  return found;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, test: () => boolean, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!test()) {
    if (Date.now() > until) assert.fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Asserts no process of the run is left (a dying process may take a moment to leave /proc). */
async function noSurvivors(tag: string): Promise<void> {
  const until = Date.now() + 3000;
  let left = tagged(tag);
  while (left.length > 0 && Date.now() < until) {
    await sleep(100);
    left = tagged(tag);
  }
  for (const pid of left) process.kill(pid, 'SIGKILL'); // never leave them to the next test
  assert.deepEqual(left, [], `processes of the run still alive: ${left.join(', ')}`);
}

function options(tag: string, overrides: Partial<ProfileOptions>): ProfileOptions {
  return {
    script: HOSTILE,
    function: 'train_step',
    setup: null,
    warmup: 1,
    steps: 2,
    maxSeconds: null,
    backend: 'cpu',
    python: PYTHON,
    budgetBytes: null,
    memoryLimitBytes: null,
    timeoutMs: 120_000,
    scriptArgs: [],
    env: { ...process.env, MEMHINT_TEST_TAG: tag },
    ...overrides,
  };
}

interface CliRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** The CLI in a child node process; `during` may signal it while it runs. */
function cli(args: string[], tag: string, during?: (pid: number) => void): Promise<CliRun> {
  const script = `require(${JSON.stringify(COMMAND)}).runProfileCommand(process.argv.slice(1)).then((c) => { process.exitCode = c; })`;
  const started = Date.now();
  const child = spawn(process.execPath, ['-e', script, ...args], { env: { ...process.env, MEMHINT_TEST_TAG: tag } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  if (child.pid !== undefined) during?.(child.pid);
  // 'exit', not 'close': the CLI's own exit is what is measured (its pipes may be held by a survivor).
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr, ms: Date.now() - started })));
}

function reportOf(outcome: Awaited<ReturnType<typeof runProfile>>): ProfileReport {
  assert.equal(outcome.failure, null, outcome.failure ? `${outcome.failure.kind}: ${outcome.failure.message}\n${outcome.failure.stderrTail}` : '');
  assert.ok(outcome.report);
  return outcome.report;
}

describe('profiler under hostile scripts', function () {
  this.timeout(120_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-hostile-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  describe('nothing is left running, nothing hangs', () => {
    it('the CLI exits when the report is written, though setsid() children hold its stdout/stderr', async () => {
      const tag = newTag();
      const run = await cli([`${HOSTILE}::train_step`, '--python', PYTHON, '--backend', 'cpu', '--steps', '2', '--', 'daemon'], tag);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stderr, /escaped/);
      assert.match(run.stdout, /memhint profile — /);
      assert.ok(run.ms < 60_000, `${run.ms} ms`);
      await noSurvivors(tag);
    });

    it('a timeout ends the whole tree, setsid() escapees included', async () => {
      const tag = newTag();
      const outcome = await runProfile(options(tag, { scriptArgs: ['hang-daemon'], timeoutMs: 6000 }));
      assert.equal(outcome.failure?.kind, 'timeout');
      await noSurvivors(tag);
    });

    it('cancel ends the whole tree', async () => {
      const tag = newTag();
      const abort = new AbortController();
      const outcome = await runProfile(options(tag, { scriptArgs: ['hang-daemon'] }), {
        signal: abort.signal,
        onStdout: (c) => {
          if (c.toString().includes('escaped')) setTimeout(() => abort.abort(), 300);
        },
      });
      assert.equal(outcome.failure?.kind, 'cancelled');
      await noSurvivors(tag);
    });

    for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]] as const) {
      it(`${signal} to the CLI ends the whole tree (exit ${code})`, async () => {
        const tag = newTag();
        const run = await cli([`${HOSTILE}::train_step`, '--python', PYTHON, '--backend', 'cpu', '--', 'hang-daemon'], tag, (pid) => {
          // Harness, guardian and the two escapees all carry the tag once the script has escaped.
          void waitFor('the escapees', () => tagged(tag).filter((p) => p !== pid).length >= 4, 60_000).then(() =>
            process.kill(pid, signal),
          );
        });
        assert.equal(run.code, code, run.stderr);
        assert.match(run.stderr, new RegExp(`cancelled \\(${signal}\\)`));
        await noSurvivors(tag);
      });
    }

    it('SIGKILL of the CLI: the harness dies with it and the guardian ends the escapees', async () => {
      const tag = newTag();
      const run = await cli([`${HOSTILE}::train_step`, '--python', PYTHON, '--backend', 'cpu', '--', 'hang-daemon'], tag, (pid) => {
        void waitFor('the escapees', () => tagged(tag).filter((p) => p !== pid).length >= 4, 60_000).then(() =>
          process.kill(pid, 'SIGKILL'),
        );
      });
      assert.equal(run.signal, 'SIGKILL');
      await noSurvivors(tag);
    });

    it('a script that waits for all its children (os.wait() until ECHILD) does not wait for memhint\'s guardian', async () => {
      const outcome = await runProfile(options(newTag(), { scriptArgs: ['wait-all'], timeoutMs: 60_000 }));
      const report = reportOf(outcome);
      assert.equal(report.steps.length, 2);
    });

    it('a --timeout above 2^31-1 ms does not fire at once', async () => {
      const tag = newTag();
      const run = await cli([`${HOSTILE}::train_step`, '--python', PYTHON, '--backend', 'cpu', '--timeout', '2147484', '--', 'plain'], tag);
      assert.equal(run.code, 0, run.stderr);
      let fired = false;
      const cancel = startTimer(2 ** 31 + 1000, () => (fired = true));
      await sleep(50);
      cancel();
      assert.equal(fired, false);
      let soon = false;
      startTimer(20, () => (soon = true));
      await sleep(100);
      assert.equal(soon, true);
    });

    it('nonsense --timeout / --max-seconds is a one-line usage error', async () => {
      for (const value of ['-1', '0', 'abc', '', 'Infinity', '1e400']) {
        const run = await cli(['x.py', '--timeout', value], newTag());
        assert.equal(run.code, 2, value);
        assert.match(run.stderr.split('\n')[0], /^memhint profile: --timeout must be a positive number of seconds/, value);
      }
      const run = await cli(['x.py', '--max-seconds', 'NaN'], newTag());
      assert.equal(run.code, 2);
    });
  });

  describe('the protocol never lands in a user file, and is not forged', () => {
    it('a script that closes fds 3..1023 and opens a log: the log holds only its own line', async () => {
      const log = path.join(dir, 'close-fds.log');
      const report = reportOf(await runProfile(options(newTag(), { scriptArgs: ['close-fds', log] })));
      assert.equal(fs.readFileSync(log, 'utf-8'), 'user log line\n');
      assert.equal(report.steps.length, 2);
    });

    it('a script that closes every fd: measuring stops with a clear error, the log stays clean', async () => {
      const log = path.join(dir, 'close-all.log');
      const outcome = await runProfile(options(newTag(), { scriptArgs: ['close-all-fds', log] }));
      assert.equal(fs.readFileSync(log, 'utf-8'), 'user log line\n');
      assert.equal(outcome.failure?.kind, 'protocol');
      assert.match(outcome.failure?.message ?? '', /took over the profiler's protocol channel: descriptor \d+ was closed/);
    });

    it('forged protocol lines (on every fd and on stdout) are not believed', async () => {
      const outcome = await runProfile(options(newTag(), { scriptArgs: ['forge'] }));
      const report = reportOf(outcome);
      assert.equal(report.steps.length, 2);
      assert.ok(report.notes.some((n) => /protocol line\(s\) without this run's nonce were ignored/.test(n)), report.notes.join('\n'));
    });
  });

  describe('steps that are not plain functions are reported as such', () => {
    const ROW = 64 * 1000 * 4;

    it('a recursive step: the outermost call is the step', async () => {
      const report = reportOf(await runProfile(options(newTag(), { function: 'recursive_step', scriptArgs: ['recursive'] })));
      assert.equal(report.steps.length, 2);
      for (const step of report.steps) assert.equal(step.allocated, 4 * ROW + 4 * 4, 'four levels of ones(64, 1000) + four sums');
      assert.ok(report.notes.some((n) => /recursive_step is recursive/.test(n)), report.notes.join('\n'));
    });

    it('an async def step is measured across its awaits', async () => {
      const report = reportOf(await runProfile(options(newTag(), { function: 'async_step', scriptArgs: ['async'] })));
      for (const step of report.steps) assert.equal(step.allocated, ROW + 4);
      assert.ok(report.notes.some((n) => /async_step is async def/.test(n)), report.notes.join('\n'));
    });

    it('a generator step is an error, not a report of zeros', async () => {
      const outcome = await runProfile(options(newTag(), { function: 'generator_step', scriptArgs: ['generator'] }));
      assert.equal(outcome.failure?.kind, 'unsupported_target');
      assert.match(outcome.failure?.message ?? '', /generator_step is a generator function/);
      assert.equal(outcome.report, null);
    });

    it('a script that removes the tracer gets a note', async () => {
      const report = reportOf(await runProfile(options(newTag(), { scriptArgs: ['untrace'] })));
      assert.ok(report.notes.some((n) => /removed memhint's line tracer/.test(n)), report.notes.join('\n'));
      for (const step of report.steps) assert.equal(step.allocated, ROW + 2 * ROW, 'totals still measured');
    });

    it('tensors made on another thread are counted in a note', async () => {
      const report = reportOf(await runProfile(options(newTag(), { function: 'thread_step', scriptArgs: ['thread'] })));
      const note = report.notes.find((n) => /created on other threads/.test(n));
      assert.ok(note, report.notes.join('\n'));
      assert.match(note, new RegExp(`^2 tensor\\(s\\), ${2 * 64 * 3000 * 4} bytes`));
    });
  });

  describe('--format json: every failure is a JSON error object on stdout', () => {
    const json = (run: CliRun): { error: { kind: string; reason: string; message: string } } => {
      try {
        return JSON.parse(run.stdout) as { error: { kind: string; reason: string; message: string } };
      } catch {
        return assert.fail(`stdout is not JSON: ${run.stdout}\nstderr: ${run.stderr}`);
      }
    };
    let noTorch: string;
    before(() => {
      noTorch = path.join(dir, 'python-without-torch');
      // -S: no site-packages, so no torch.
      fs.writeFileSync(noTorch, `#!/bin/sh\nexec ${PYTHON} -S "$@"\n`, { mode: 0o755 });
    });

    const cases: [string, string[], string, string | null][] = [
      ['usage', ['x.py', '--steps', '0', '--format', 'json'], 'usage', null],
      ['missing script', ['/nonexistent/x.py', '--format=json'], 'usage', null],
      ['interpreter', [`${ERRORS}::train_step`, '--python', '/nonexistent/python3', '--format', 'json'], 'interpreter', 'spawn'],
      ['user code', [`${ERRORS}::train_step`, '--backend', 'cpu', '--format', 'json', '--', 'raise'], 'user-code', 'user_exception'],
      ['syntax error', [`${FIXTURES}/syntax_error.py::train_step`, '--backend', 'cpu', '--format', 'json'], 'user-code', 'syntax_error'],
      ['crash', [`${ERRORS}::train_step`, '--backend', 'cpu', '--format', 'json', '--', 'crash'], 'crash', 'crash'],
      ['timeout', [`${ERRORS}::train_step`, '--backend', 'cpu', '--format', 'json', '--timeout', '5', '--', 'hang'], 'timeout', 'timeout'],
      ['oom', [`${ERRORS}::train_step`, '--backend', 'cpu', '--format', 'json', '--memory-limit', '1GiB', '--', 'oom'], 'oom', 'oom'],
    ];
    for (const [name, args, kind, reason] of cases) {
      it(name, async () => {
        const withPython = args.includes('--python') ? args : [...args.slice(0, 1), '--python', PYTHON, ...args.slice(1)];
        const run = await cli(withPython, newTag());
        assert.notEqual(run.code, 0);
        const { error } = json(run);
        assert.equal(error.kind, kind, JSON.stringify(error));
        if (reason) assert.equal(error.reason, reason);
        assert.ok(error.message.length > 0);
      });
    }

    it('torch missing', async () => {
      const run = await cli([`${ERRORS}::train_step`, '--python', noTorch, '--format', 'json'], newTag());
      assert.equal(run.code, 1);
      assert.equal(json(run).error.kind, 'torch-missing');
    });

    it('cancelled (SIGTERM)', async () => {
      const tag = newTag();
      const run = await cli([`${ERRORS}::train_step`, '--python', PYTHON, '--backend', 'cpu', '--format', 'json', '--', 'hang'], tag, (pid) => {
        void waitFor('the harness', () => tagged(tag).filter((p) => p !== pid).length >= 1, 60_000).then(() => setTimeout(() => process.kill(pid, 'SIGTERM'), 1500));
      });
      assert.equal(run.code, 143);
      assert.equal(json(run).error.kind, 'cancelled');
    });
  });
});
