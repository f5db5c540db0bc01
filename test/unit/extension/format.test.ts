import * as assert from 'node:assert/strict';
import { formatBytes, formatDuration, parseBytes } from '../../../src/extension/format';

describe('extension/format', () => {
  it('formats bytes in binary units with two or three significant digits', () => {
    assert.equal(formatBytes(0), '0 B');
    assert.equal(formatBytes(512), '512 B');
    assert.equal(formatBytes(1024), '1 KiB');
    assert.equal(formatBytes(1536), '1.5 KiB');
    assert.equal(formatBytes(1.2 * 1024 ** 3), '1.2 GiB');
    assert.equal(formatBytes(3.4 * 1024 ** 3), '3.4 GiB');
    assert.equal(formatBytes(123.4 * 1024 ** 2), '123 MiB');
    assert.equal(formatBytes(12.34 * 1024 ** 2), '12.3 MiB');
  });

  it('never prints 1024 of a unit', () => {
    assert.equal(formatBytes(1024 * 1024 - 1), '1 MiB');
    assert.equal(formatBytes(1023), '1023 B');
  });

  it('signs deltas', () => {
    assert.equal(formatBytes(1.2 * 1024 ** 3, { signed: true }), '+1.2 GiB');
    assert.equal(formatBytes(-2048, { signed: true }), '-2 KiB');
    assert.equal(formatBytes(-2048), '-2 KiB');
    assert.equal(formatBytes(0, { signed: true }), '0 B');
  });

  it('parses sizes as users write them', () => {
    assert.equal(parseBytes('64 MiB'), 64 * 1024 ** 2);
    assert.equal(parseBytes('64MB'), 64 * 1000 ** 2, 'MB is decimal, as for the CLI --budget');
    assert.equal(parseBytes('1.5 GiB'), 1.5 * 1024 ** 3);
    assert.equal(parseBytes('512k'), 512 * 1024);
    assert.equal(parseBytes('100'), 100);
    assert.equal(parseBytes(4096), 4096);
    assert.equal(parseBytes('lots'), null);
    assert.equal(parseBytes(-1), null);
    assert.equal(parseBytes('5 XB'), null);
  });

  it('formats durations', () => {
    assert.equal(formatDuration(850.4), '850 ms');
    assert.equal(formatDuration(2300), '2.3 s');
    assert.equal(formatDuration(12_345), '12.3 s');
  });
});
