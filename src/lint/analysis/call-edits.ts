// Text edits on calls and statements that keep the Python valid: adding an argument, removing a
// statement without leaving an empty block.
import { childByField, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import type { TextEdit } from '../types';

/** Argument nodes of an argument_list (positional, keyword and splats), without punctuation/comments. */
export function argumentNodes(call: SyntaxNode): SyntaxNode[] | null {
  const args = childByField(call, 'arguments');
  if (args === null || args.type !== 'argument_list') return null;
  return namedChildren(args);
}

/** True when the call passes `*args` or `**kwargs` (what they hold is unknown). */
export function hasSplat(call: SyntaxNode): boolean {
  const args = argumentNodes(call);
  return args === null || args.some((a) => a.type === 'list_splat' || a.type === 'dictionary_splat');
}

/** Appends `text` (e.g. "non_blocking=True") as the last argument; null for generator arguments or broken calls. */
export function appendArgument(call: SyntaxNode, text: string): TextEdit | null {
  const list = childByField(call, 'arguments');
  if (list === null || list.type !== 'argument_list') return null;
  const close = list.children[list.children.length - 1];
  if (close === undefined || close.type !== ')' || close.missing) return null;
  if (list.children.some((c) => c.type === 'ERROR' || c.missing)) return null;
  const args = argumentNodes(call) ?? [];
  if (args.length === 0) {
    const open = list.children[0];
    if (open === undefined || open.type !== '(') return null;
    return { start: open.end, end: open.end, newText: text };
  }
  const last = args[args.length - 1];
  return { start: last.end, end: last.end, newText: `, ${text}` };
}

/** Inserts `text` as the first argument (`"cuda", ` in front of the others). */
export function prependArgument(call: SyntaxNode, text: string): TextEdit | null {
  const list = childByField(call, 'arguments');
  if (list === null || list.type !== 'argument_list') return null;
  const open = list.children[0];
  const close = list.children[list.children.length - 1];
  if (open === undefined || open.type !== '(' || close === undefined || close.type !== ')' || close.missing) return null;
  if (list.children.some((c) => c.type === 'ERROR' || c.missing)) return null;
  const args = argumentNodes(call) ?? [];
  return { start: open.end, end: open.end, newText: args.length === 0 ? text : `${text}, ` };
}

/**
 * Removes a statement. A statement alone on its line(s) loses its whole lines (trailing comment too);
 * one sharing a line (`a(); b()`) or the only statement of its block becomes `pass`.
 */
export function removeStatement(file: SourceFile, stmt: SyntaxNode): TextEdit | null {
  const block = stmt.parent;
  if (block === null || block.type !== 'block') return null;
  const siblings = block.children.filter((c) => c.named && c.type !== 'comment');
  if (siblings.length === 1) return { start: stmt.start, end: stmt.end, newText: 'pass' };
  const text = file.text;
  let lineStart = stmt.start;
  while (lineStart > 0 && text[lineStart - 1] !== '\n' && text[lineStart - 1] !== '\r') lineStart--;
  if (text.slice(lineStart, stmt.start).trim() !== '') return { start: stmt.start, end: stmt.end, newText: 'pass' };
  let lineEnd = stmt.end;
  while (lineEnd < text.length && text[lineEnd] !== '\n' && text[lineEnd] !== '\r') lineEnd++;
  const rest = text.slice(stmt.end, lineEnd).trim();
  if (rest !== '' && !rest.startsWith('#')) return { start: stmt.start, end: stmt.end, newText: 'pass' };
  if (text[lineEnd] === '\r' && text[lineEnd + 1] === '\n') lineEnd += 2;
  else if (lineEnd < text.length) lineEnd += 1;
  return { start: lineStart, end: lineEnd, newText: '' };
}

/** The expression statement whose whole expression is `call`, or null. */
export function statementOfCall(call: SyntaxNode): SyntaxNode | null {
  const parent = call.parent;
  if (parent === null || parent.type !== 'expression_statement') return null;
  const named = parent.children.filter((c) => c.named && c.type !== 'comment');
  return named.length === 1 && named[0] === call ? parent : null;
}

/**
 * Sorts edits and merges those that touch (an insertion right after a replacement, two insertions at one
 * offset) into one, so the result does not depend on how a client orders equal offsets. Null on overlap.
 */
export function normalizeEdits(text: string, edits: readonly TextEdit[]): TextEdit[] | null {
  const sorted = edits.map((e, i) => ({ e, i })).sort((a, b) => a.e.start - b.e.start || a.e.end - b.e.end || a.i - b.i);
  const out: TextEdit[] = [];
  for (const { e } of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && e.start < last.end) return null;
    if (last !== undefined && e.start === last.end) {
      out[out.length - 1] = { start: last.start, end: e.end, newText: last.newText + text.slice(last.end, e.start) + e.newText };
    } else out.push(e);
  }
  return out;
}
