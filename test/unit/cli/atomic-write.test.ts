// The writer behind `lint --fix`, `lint --output` and `profile --out`: all or nothing, never over an edit.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ChangedOnDiskError, removeStaleOutput, writeFileAtomic } from '../../../src/cli/atomic-write';

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-atomic-'));
}

const leftovers = (dir: string): string[] => fs.readdirSync(dir).filter((n) => n.includes('.memhint-'));

describe('writeFileAtomic', () => {
  it('replaces the content and keeps the mode, leaving no temp file', () => {
    const dir = tempDir();
    const file = path.join(dir, 'train.py');
    fs.writeFileSync(file, 'old\n');
    fs.chmodSync(file, 0o751);
    writeFileAtomic(file, 'new\n', { expected: Buffer.from('old\n') });
    assert.equal(fs.readFileSync(file, 'utf8'), 'new\n');
    assert.equal(fs.statSync(file).mode & 0o7777, 0o751);
    assert.deepEqual(leftovers(dir), []);
  });

  it('keeps the owner (root only: changing owners needs it)', function () {
    if (process.getuid?.() !== 0) this.skip(); // only root can create a file owned by someone else
    const dir = tempDir();
    const file = path.join(dir, 'train.py');
    fs.writeFileSync(file, 'old\n');
    fs.chownSync(file, 4321, 4322);
    writeFileAtomic(file, 'new\n', { expected: Buffer.from('old\n') });
    const st = fs.statSync(file);
    assert.deepEqual([st.uid, st.gid], [4321, 4322]);
  });

  it('does not overwrite an edit made since the file was read', () => {
    const dir = tempDir();
    const file = path.join(dir, 'train.py');
    fs.writeFileSync(file, 'as read\n');
    const read = fs.readFileSync(file);
    fs.writeFileSync(file, 'edited meanwhile\n'); // e.g. saved from the editor during the run
    assert.throws(() => writeFileAtomic(file, 'fixed\n', { expected: read }), ChangedOnDiskError);
    assert.equal(fs.readFileSync(file, 'utf8'), 'edited meanwhile\n');
    // Same size, different bytes: still refused.
    fs.writeFileSync(file, 'as reaD\n');
    assert.throws(() => writeFileAtomic(file, 'fixed\n', { expected: read }), ChangedOnDiskError);
    fs.rmSync(file);
    assert.throws(() => writeFileAtomic(file, 'fixed\n', { expected: read }), ChangedOnDiskError);
    assert.equal(fs.existsSync(file), false);
    assert.deepEqual(leftovers(dir), []);
  });

  it('writes through a symlink to its target and keeps the link', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'real.py'), 'old\n');
    fs.symlinkSync('real.py', path.join(dir, 'link.py'));
    writeFileAtomic(path.join(dir, 'link.py'), 'new\n');
    assert.ok(fs.lstatSync(path.join(dir, 'link.py')).isSymbolicLink());
    assert.equal(fs.readFileSync(path.join(dir, 'real.py'), 'utf8'), 'new\n');
  });

  it('leaves the old file whole when the disk refuses the write (real EFBIG from RLIMIT_FSIZE)', () => {
    const dir = tempDir();
    const file = path.join(dir, 'report.json');
    const old = 'x'.repeat(3000);
    fs.writeFileSync(file, old);
    const writer = path.join(__dirname, '..', '..', '..', 'src', 'cli', 'atomic-write.js');
    // bash's `ulimit -f 1` caps any file this process writes at 1 KiB; Node ignores SIGXFSZ, so write() fails with EFBIG.
    const script = `require(${JSON.stringify(writer)}).writeFileAtomic(${JSON.stringify(file)}, 'y'.repeat(5000))`;
    let failed = false;
    try {
      execFileSync('bash', ['-c', 'ulimit -f 1 && exec "$0" -e "$1"', process.execPath, script], { stdio: 'pipe' });
    } catch (err) {
      failed = true;
      assert.match(String((err as { stderr: Buffer }).stderr), /EFBIG|file too large/i);
    }
    assert.ok(failed, 'the write should have failed under ulimit -f 1');
    assert.equal(fs.readFileSync(file, 'utf8'), old);
    assert.deepEqual(leftovers(dir), []);
  });
});

describe('removeStaleOutput', () => {
  it('removes a previous regular file but never a FIFO or device', () => {
    const dir = tempDir();
    const report = path.join(dir, 'report.json');
    fs.writeFileSync(report, '{"old": true}');
    removeStaleOutput(report);
    assert.equal(fs.existsSync(report), false);
    removeStaleOutput(report); // nothing there: fine
    const fifo = path.join(dir, 'pipe');
    execFileSync('mkfifo', [fifo]);
    removeStaleOutput(fifo);
    assert.ok(fs.lstatSync(fifo).isFIFO());
    removeStaleOutput('/dev/null');
    assert.ok(fs.statSync('/dev/null').isCharacterDevice());
  });
});
