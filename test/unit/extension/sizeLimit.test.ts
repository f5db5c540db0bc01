import * as assert from 'node:assert/strict';
import { emptyConfig } from '../../../src/lint/config';
import { DEFAULT_MAX_FILE_SIZE } from '../../../src/lint';
import { oversizeReason, sizeLimitOf } from '../../../src/extension/lint/sizeLimit';

describe('extension/sizeLimit', () => {
  it("takes [tool.memhint] max-file-size, else the CLI's default of 10 MiB", () => {
    assert.equal(DEFAULT_MAX_FILE_SIZE, 10 * 1024 * 1024);
    assert.equal(sizeLimitOf(null), DEFAULT_MAX_FILE_SIZE);
    assert.equal(sizeLimitOf(emptyConfig), DEFAULT_MAX_FILE_SIZE);
    assert.equal(sizeLimitOf({ ...emptyConfig, maxFileSize: 2048 }), 2048);
    assert.equal(sizeLimitOf({ ...emptyConfig, maxFileSize: 0 }), 0);
  });

  it('lints a document up to the limit and names the setting beyond it, in the CLI’s words', () => {
    assert.equal(oversizeReason(1024, 1024), null);
    assert.equal(oversizeReason(10 * 1000 * 1000, DEFAULT_MAX_FILE_SIZE), null); // the bench's 10 MB file
    assert.equal(oversizeReason(1025, 1024), '1 KiB, over the 1 KiB size limit; skipped (see [tool.memhint] max-file-size)');
    assert.equal(oversizeReason(50 * 1000 * 1000, DEFAULT_MAX_FILE_SIZE), '47.7 MiB, over the 10 MiB size limit; skipped (see [tool.memhint] max-file-size)');
  });

  it('0 lifts the limit', () => {
    assert.equal(oversizeReason(1e9, 0), null);
  });
});
