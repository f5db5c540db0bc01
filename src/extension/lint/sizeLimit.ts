// The CLI's size limit in the editor: a document longer than [tool.memhint] max-file-size (default
// 10 MiB, 0: none) is not linted, with one line in the log, rather than parsed and linted on every
// keystroke until the extension host (every extension's process) runs out of heap.
import { DEFAULT_MAX_FILE_SIZE, oversizeMessage, type ProjectConfig } from '../../lint';

/** The limit that applies to a document of `project` (null: none found, or not a file on disk). */
export function sizeLimitOf(project: ProjectConfig | null): number {
  return project?.maxFileSize ?? DEFAULT_MAX_FILE_SIZE;
}

/**
 * Why a document of `length` characters is not linted, or null when it is within `limit` (0 lifts it).
 * The editor measures characters (UTF-16 units, VS Code's own measure, the same as bytes for ASCII),
 * which costs nothing per keystroke; the CLI measures bytes on disk before reading them.
 */
export function oversizeReason(length: number, limit: number): string | null {
  if (limit <= 0 || length <= limit) return null;
  return `${oversizeMessage(length, limit)} (see [tool.memhint] max-file-size)`;
}
