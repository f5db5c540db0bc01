import * as assert from 'node:assert/strict';
import { NoAnswerInTime, within } from '../../../src/extension/profile/timeLimit';

describe('within: a bound on waiting for another extension', () => {
  it('gives the answer that comes in time', async () => {
    assert.equal(await within(Promise.resolve(42), 1000, 'x'), 42);
  });

  it('passes on the error of an answer that fails in time', async () => {
    await assert.rejects(within(Promise.reject(new Error('boom')), 1000, 'x'), /boom/);
  });

  it('rejects with NoAnswerInTime, naming what was awaited, when no answer comes', async () => {
    const never = new Promise<number>(() => undefined);
    await assert.rejects(within(never, 20, 'the Python extension'), (err: unknown) => err instanceof NoAnswerInTime && /the Python extension did not answer within 0 s/.test(err.message));
  });

  it('drops a late failure instead of leaving an unhandled rejection', async () => {
    let rejectLate!: (e: Error) => void;
    const late = new Promise<number>((_, reject) => (rejectLate = reject));
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown): void => void unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      await assert.rejects(within(late, 10, 'x'), NoAnswerInTime);
      rejectLate(new Error('too late'));
      await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
