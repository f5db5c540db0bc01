// The argument grammar `profile` and `predict` share (src/cli/step-args.ts).
import * as assert from 'node:assert/strict';
import { scanArgs, UsageError } from '../../src/cli/step-args';

const RULES = { valued: new Set(['--steps', '--out', '--setup-arg', '--budget', '--timeout', '--format']), repeatable: new Set(['--setup-arg']), scriptArgs: true };

describe('cli: shared step arguments', () => {
  it('reads --name value and --name=value, repeatable options in order, and script arguments after --', () => {
    const args = scanArgs(['train.py::step', '--steps=4', '--out', 'r.json', '--setup-arg', 'a=1', '--setup-arg=b=2', '--', '--steps', '9'], RULES);
    assert.equal(args.target, 'train.py::step');
    assert.equal(args.int('--steps', 3, 1), 4);
    assert.equal(args.string('--out'), 'r.json');
    assert.deepEqual(args.repeated('--setup-arg'), ['a=1', 'b=2']);
    assert.deepEqual(args.scriptArgs, ['--steps', '9']);
    assert.deepEqual(args.stepTarget('missing'), { script: 'train.py', function: 'step', loopLine: null });
  });

  it('types values, with one wording of each mistake', () => {
    const args = scanArgs(['t.py', '--steps', '0', '--budget', '2GiB', '--timeout', 'soon', '--format', 'xml'], RULES);
    assert.equal(args.size('--budget'), 2 * 1024 ** 3);
    assert.throws(() => args.int('--steps', 3, 1), /^Error: --steps must be an integer >= 1$/);
    assert.throws(() => args.seconds('--timeout'), /--timeout must be a positive number of seconds, not "soon"/);
    assert.throws(() => args.choice('--format', ['text', 'json'], 'text'), /--format must be text or json/);
    assert.equal(scanArgs(['t.py'], RULES).choice('--format', ['text', 'json'], 'text'), 'text');
  });

  it('refuses unknown options, a missing value, a second target and a missing one as usage errors', () => {
    for (const [argv, message] of [
      [['t.py', '--nope'], /unknown option --nope/],
      [['t.py', '--steps'], /--steps needs a value/],
      [['t.py', 'u.py'], /unexpected argument u\.py \(script arguments go after --\)/],
    ] as const) {
      assert.throws(() => scanArgs(argv, RULES), (error: unknown) => error instanceof UsageError && message.test(error.message));
    }
    assert.throws(() => scanArgs([], RULES).stepTarget('missing target'), /missing target/);
  });
});
