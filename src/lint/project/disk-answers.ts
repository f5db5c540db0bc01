// What a one-shot project index (the CLI) asks the disk again and again: folder listings, real paths,
// whether a path is a regular file in the project, and the bytes of the files the importer search reads.
// A one-shot run sees one state of the disk (its index is invalidated as a whole after `--fix` writes), so
// each answer is kept until `clear`; the editor's index asks the disk each time, as before.
import * as fs from 'node:fs';
import { readRegularFile } from '../regular-file';

/** Bytes of file text kept at most (the importer search reads each file of a tree once instead of per name). */
const MAX_BYTES_KEPT = 64 * 1024 * 1024;

export class DiskAnswers {
  private readonly listings = new Map<string, readonly string[]>();
  private readonly reals = new Map<string, string | null>();
  private readonly stats = new Map<string, fs.Stats | null>();
  private readonly files = new Map<string, Buffer | null>();
  private bytesKept = 0;

  clear(): void {
    this.listings.clear();
    this.reals.clear();
    this.stats.clear();
    this.files.clear();
    this.bytesKept = 0;
  }

  /** `fs.readdirSync(dir)`, or [] when it throws. */
  listing(dir: string): readonly string[] {
    let names = this.listings.get(dir);
    if (names === undefined) {
      try {
        names = fs.readdirSync(dir);
      } catch {
        names = [];
      }
      this.listings.set(dir, names);
    }
    return names;
  }

  /** `fs.realpathSync(p)`, or null when it throws. */
  realpath(p: string): string | null {
    let real = this.reals.get(p);
    if (real === undefined) {
      try {
        real = fs.realpathSync(p);
      } catch {
        real = null;
      }
      this.reals.set(p, real);
    }
    return real;
  }

  /** `fs.statSync(p)`, or null when it throws. */
  stat(p: string): fs.Stats | null {
    let stat = this.stats.get(p);
    if (stat === undefined) {
      try {
        stat = fs.statSync(p);
      } catch {
        stat = null;
      }
      this.stats.set(p, stat);
    }
    return stat;
  }

  /** `readRegularFile(p, maxFileSize).bytes`, or null when it throws. */
  bytes(p: string, maxFileSize: number): Buffer | null {
    const kept = this.files.get(p);
    if (kept !== undefined) return kept;
    let bytes: Buffer | null;
    try {
      bytes = readRegularFile(p, maxFileSize).bytes;
    } catch {
      bytes = null;
    }
    // Past the budget a file is read again when asked again, as the editor's index does.
    if (bytes === null || this.bytesKept + bytes.length <= MAX_BYTES_KEPT) {
      this.files.set(p, bytes);
      this.bytesKept += bytes?.length ?? 0;
    }
    return bytes;
  }
}
