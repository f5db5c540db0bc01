// How a failed profile is described, in the CLI's stderr and the editor's notification alike.
import type { ProfileFailure } from './launcher';

/** Interpreter output kept with a crash: the last few lines say why (Segmentation fault, Killed ...). */
const TAIL_LINES = 5;

/** One line: the failure's message and, when known, the user's location (`file.py:12`). */
export function failureHeadline(failure: ProfileFailure): string {
  return `${failure.message}${failure.location ? ` (${failure.location.file}:${failure.location.line})` : ''}`;
}

/** The interpreter's last words for failures the harness could not describe itself; null otherwise. */
export function failureTail(failure: ProfileFailure, lines = TAIL_LINES): string | null {
  if (failure.kind !== 'crash' && failure.kind !== 'protocol') return null;
  const tail = failure.stderrTail.trim();
  return tail === '' ? null : tail.split('\n').slice(-lines).join('\n');
}

/** Whether a different interpreter is the fix (torch missing, or the interpreter could not start). */
export function needsOtherInterpreter(failure: ProfileFailure): boolean {
  return failure.kind === 'torch_missing' || failure.kind === 'spawn';
}

/** The CLI's multi-line description (stderr). */
export function describeFailure(failure: ProfileFailure): string {
  const lines = [`memhint profile: ${failure.kind.replace(/_/g, ' ')}: ${failure.message}`];
  if (failure.location) lines.push(`  at ${failure.location.file}:${failure.location.line}`);
  if (failure.traceback) lines.push(failure.traceback.trimEnd());
  if (needsOtherInterpreter(failure)) lines.push('  hint: pass --python PATH with an interpreter that has torch installed');
  if ((failure.kind === 'crash' || failure.kind === 'protocol') && failure.stderrTail.trim()) {
    lines.push('last output of the interpreter:', failure.stderrTail.trimEnd());
  }
  return `${lines.join('\n')}\n`;
}
