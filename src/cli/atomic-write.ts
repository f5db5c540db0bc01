// Replaces a file's content all at once or not at all.
//
// fs.writeFileSync truncates first and writes after: a full disk (ENOSPC, EFBIG) leaves the user's
// file cut mid-statement. Here the new content goes to a temp file in the same folder (same file
// system, so the rename is atomic), is fsync'ed, takes the old file's mode and owner, and only then
// is renamed over the target. With `expected`, the target must still hold exactly the bytes that
// were read: an edit made while memhint ran is never overwritten.
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ioMessage } from '../lint/regular-file';

/** The target no longer holds the content it had when it was read. */
export class ChangedOnDiskError extends Error {}

export interface AtomicWriteOptions {
  /** Write only if the target still holds exactly these bytes (compared right before the rename). */
  readonly expected?: Buffer;
}

/**
 * Writes `data` to `target` atomically. A symlink is followed (its final target is replaced, the link
 * kept). A target that exists but is not a regular file (a FIFO, /dev/stdout) is written in place:
 * there is nothing to replace atomically. Throws ChangedOnDiskError or an Error with a one-line message.
 */
export function writeFileAtomic(target: string, data: string | Buffer, options: AtomicWriteOptions = {}): void {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  let real = target;
  let existing: fs.Stats | null = null;
  try {
    real = fs.realpathSync(target);
    existing = fs.statSync(real);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(ioMessage(err), { cause: err });
    if (options.expected !== undefined) throw new ChangedOnDiskError('deleted');
  }
  if (existing !== null && !existing.isFile()) {
    if (options.expected !== undefined) throw new ChangedOnDiskError('no longer a regular file');
    fs.writeFileSync(real, bytes);
    return;
  }
  const dir = path.dirname(real);
  const temp = path.join(dir, `.${path.basename(real)}.memhint-${process.pid}-${crypto.randomBytes(4).toString('hex')}.tmp`);
  // Private until it has the final mode; a new file gets the usual 0o666 less the umask.
  const fd = fs.openSync(temp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, existing === null ? 0o666 : 0o600);
  let renamed = false;
  try {
    try {
      for (let off = 0; off < bytes.length; ) off += fs.writeSync(fd, bytes, off, bytes.length - off);
      fs.fsyncSync(fd);
      if (existing !== null) {
        fs.fchmodSync(fd, existing.mode & 0o7777);
        if (existing.uid !== process.getuid?.() || existing.gid !== process.getgid?.()) {
          try {
            fs.fchownSync(fd, existing.uid, existing.gid);
          } catch (err) {
            throw new Error(`cannot keep the file's owner ${existing.uid}:${existing.gid} (${ioMessage(err)})`, { cause: err });
          }
        }
      }
    } finally {
      fs.closeSync(fd);
    }
    if (options.expected !== undefined && !holds(real, options.expected)) throw new ChangedOnDiskError('changed on disk');
    fs.renameSync(temp, real);
    renamed = true;
    syncDir(dir);
  } catch (err) {
    if (err instanceof ChangedOnDiskError) throw err;
    throw new Error(ioMessage(err), { cause: err });
  } finally {
    if (!renamed) fs.rmSync(temp, { force: true });
  }
}

/** Whether `file` is still a regular file holding exactly `expected` (never reads more than that plus one byte). */
function holds(file: string, expected: Buffer): boolean {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY);
  } catch {
    return false;
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile() || stat.size !== expected.length) return false;
    const buf = Buffer.alloc(expected.length + 1);
    let total = 0;
    for (;;) {
      const n = fs.readSync(fd, buf, total, buf.length - total, null);
      if (n === 0) break;
      total += n;
      if (total === buf.length) return false;
    }
    return total === expected.length && buf.subarray(0, total).equals(expected);
  } finally {
    fs.closeSync(fd);
  }
}

/** Makes the rename itself durable; some file systems refuse fsync on a folder, which is not an error. */
function syncDir(dir: string): void {
  try {
    const fd = fs.openSync(dir, fs.constants.O_RDONLY);
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // best effort
  }
}

/**
 * Removes a previous run's report at `target` (the final file when `target` is a symlink), so that a
 * failed or killed run never leaves an old report looking like the new one. Only a regular file is
 * removed: `--out /dev/stdout` or a FIFO is left alone.
 */
export function removeStaleOutput(target: string): void {
  let real: string;
  try {
    real = fs.realpathSync(target);
  } catch {
    return; // nothing there
  }
  try {
    if (fs.statSync(real).isFile()) fs.unlinkSync(real);
  } catch (err) {
    throw new Error(`cannot remove the previous ${target}: ${ioMessage(err)}`, { cause: err });
  }
}
