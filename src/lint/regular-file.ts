// Reads a file only when it is a regular file of bounded size.
//
// A cloned repository can hold a pyproject.toml or a .py that is a FIFO (readFileSync blocks
// forever), a symlink to /dev/zero (reads until the heap is gone), a directory (EISDIR) or a file of
// gigabytes. So: stat first and do not even open anything but a regular file (opening some devices
// has side effects), then open with O_NONBLOCK, check with fstat that the descriptor is the regular
// file that was stat'ed (it may have been swapped in between), and never read past the limit.
import * as fs from 'node:fs';

/** Why a path was not read; `message` is one line, without the path. */
export class UnreadableFile extends Error {
  constructor(
    message: string,
    /** 'not-regular' | 'too-large' | 'io' */
    readonly reason: 'not-regular' | 'too-large' | 'io',
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export function describeKind(stat: fs.Stats): string {
  if (stat.isDirectory()) return 'a directory';
  if (stat.isFIFO()) return 'a FIFO';
  if (stat.isCharacterDevice()) return 'a character device';
  if (stat.isBlockDevice()) return 'a block device';
  if (stat.isSocket()) return 'a socket';
  return 'not a regular file';
}

export function ioMessage(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  switch (e?.code) {
    case 'ENOENT':
      return 'no such file or directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'is a directory';
    case 'ELOOP':
      return 'too many levels of symbolic links';
    default:
      return e?.message ?? String(err);
  }
}

export function formatSize(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(1).replace(/\.0$/, '')} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1).replace(/\.0$/, '')} KiB`;
  return `${bytes} bytes`;
}

/**
 * Files above this are skipped: a 10 MB (10^7 bytes) file still lints, while one of 50 MB exhausted
 * V8's heap after minutes. `[tool.memhint] max-file-size` (CLI and editor) or `--max-file-size` change it.
 */
export const DEFAULT_MAX_FILE_SIZE = 10 * 1024 * 1024;

/** The one line for a file of `size` over `limit` (the CLI and the editor say the same). */
export function oversizeMessage(size: number, limit: number): string {
  return `${formatSize(size)}, over the ${formatSize(limit)} size limit; skipped`;
}

export interface ReadResult {
  readonly bytes: Buffer;
  readonly stat: fs.Stats;
}

/**
 * The bytes of `file` (symlinks followed) when it is a regular file of at most `maxBytes`
 * (0 or Infinity: no limit); throws UnreadableFile with a one-line reason otherwise.
 */
export function readRegularFile(file: string, maxBytes: number): ReadResult {
  const limit = maxBytes > 0 ? maxBytes : Infinity;
  let before: fs.Stats;
  try {
    before = fs.statSync(file);
  } catch (err) {
    throw new UnreadableFile(ioMessage(err), 'io', { cause: err });
  }
  check(before, limit);
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY);
  } catch (err) {
    throw new UnreadableFile(ioMessage(err), 'io', { cause: err });
  }
  try {
    // The descriptor may not be what was stat'ed (swapped in between): check what was opened.
    const stat = fs.fstatSync(fd);
    check(stat, limit);
    // Read to EOF but never past the limit: the file may grow while it is read.
    const chunk = Buffer.allocUnsafe(Math.max(1, Math.min(1 << 20, stat.size + 1)));
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const n = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      chunks.push(Buffer.from(chunk.subarray(0, n)));
      total += n;
      if (total > limit) throw new UnreadableFile(`grew past the ${formatSize(limit)} size limit while read; skipped`, 'too-large');
    }
    return { bytes: Buffer.concat(chunks, total), stat };
  } catch (err) {
    if (err instanceof UnreadableFile) throw err;
    throw new UnreadableFile(ioMessage(err), 'io', { cause: err });
  } finally {
    fs.closeSync(fd);
  }
}

function check(stat: fs.Stats, limit: number): void {
  if (!stat.isFile()) throw new UnreadableFile(`${describeKind(stat)}, not a regular file; skipped`, 'not-regular');
  if (stat.size > limit) throw new UnreadableFile(oversizeMessage(stat.size, limit), 'too-large');
}
