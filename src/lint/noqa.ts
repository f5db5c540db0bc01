// `# noqa` and `# noqa: MH001,MH002` in real comment nodes (never inside strings).
import type { SourceFile } from './syntax';

const NOQA = /#\s*noqa(?::\s*(?<codes>[A-Za-z0-9_-]+(?:[\s,]+[A-Za-z0-9_-]+)*))?/i;

export interface NoqaDirective {
  /** 0-based line. */
  readonly line: number;
  /** null: every code. */
  readonly codes: readonly string[] | null;
  readonly start: number;
  readonly end: number;
}

export function parseNoqa(comment: string): readonly string[] | null | undefined {
  const m = NOQA.exec(comment);
  if (m === null) return undefined;
  const codes = m.groups?.codes;
  if (codes === undefined) return null;
  return codes
    .split(/[\s,]+/)
    .filter((c) => c !== '')
    .map((c) => (/^mh\d+$/i.test(c) ? c.toUpperCase() : c.toLowerCase()));
}

/** Offset just past the code list of a `# noqa: A, B` comment (where another code is appended); null without one. */
export function noqaCodesEnd(comment: string): number | null {
  const m = NOQA.exec(comment);
  return m === null || m.groups?.codes === undefined ? null : m.index + m[0].length;
}

export function noqaDirectives(file: SourceFile): NoqaDirective[] {
  const out: NoqaDirective[] = [];
  for (const c of file.nodesOfType('comment')) {
    const codes = parseNoqa(file.textOf(c));
    if (codes !== undefined) out.push({ line: file.lineOf(c.start), codes, start: c.start, end: c.end });
  }
  return out;
}

export function noqaByLine(file: SourceFile): Map<number, ReadonlySet<string> | 'all'> {
  const map = new Map<number, ReadonlySet<string> | 'all'>();
  for (const d of noqaDirectives(file)) {
    if (d.codes === null) {
      map.set(d.line, 'all');
      continue;
    }
    const prev = map.get(d.line);
    if (prev === 'all') continue;
    map.set(d.line, new Set([...(prev ?? []), ...d.codes]));
  }
  return map;
}
