// Output formats of `memhint lint`: text for people, JSON for scripts, SARIF for code-scanning UIs.
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { allRules, type Finding } from '../lint';
import { computeLineStarts, positionIn } from '../lint/syntax';
import { version as VERSION } from '../../package.json';

export interface FileFindings {
  readonly filename: string;
  readonly text: string;
  readonly findings: readonly Finding[];
}

export interface Location {
  readonly line: number;
  readonly column: number;
  readonly endLine: number;
  readonly endColumn: number;
}

export interface JsonEdit extends Location {
  readonly content: string;
}

export interface JsonFinding extends Location {
  readonly filename: string;
  readonly code: string;
  readonly name: string;
  readonly severity: string;
  readonly message: string;
  readonly fix: { readonly title: string; readonly edits: readonly JsonEdit[] } | null;
}

/** 1-based line and 1-based column counted in Unicode code points, as ruff and most editors show them. */
function locate(text: string, lineStarts: readonly number[], start: number, end: number): Location {
  const a = positionIn(lineStarts, start);
  const b = positionIn(lineStarts, end);
  const col = (line: number, character: number): number => {
    const lineStart = lineStarts[line];
    return [...text.slice(lineStart, lineStart + character)].length + 1;
  };
  return { line: a.line + 1, column: col(a.line, a.character), endLine: b.line + 1, endColumn: col(b.line, b.character) };
}

export function toJson(files: readonly FileFindings[]): JsonFinding[] {
  const out: JsonFinding[] = [];
  for (const file of files) {
    const starts = computeLineStarts(file.text);
    for (const f of file.findings) {
      out.push({
        filename: file.filename,
        ...locate(file.text, starts, f.start, f.end),
        code: f.code,
        name: f.name,
        severity: f.severity,
        message: f.message,
        fix:
          f.fix === null
            ? null
            : { title: f.fix.title, edits: f.fix.edits.map((e) => ({ ...locate(file.text, starts, e.start, e.end), content: e.newText })) },
      });
    }
  }
  return out;
}

/** `problems`: files not checked or not fixed (already reported on stderr); never "All checks passed" then. */
export function formatText(files: readonly FileFindings[], color: boolean, problems = 0): string {
  const paint = (code: string, s: string): string => (color ? `\u001b[${code}m${s}\u001b[0m` : s);
  const lines: string[] = [];
  let total = 0;
  let fixable = 0;
  for (const f of toJson(files)) {
    total++;
    if (f.fix !== null) fixable++;
    const sev = f.severity === 'error' ? paint('31', f.code) : f.severity === 'warning' ? paint('33', f.code) : paint('36', f.code);
    lines.push(`${paint('1', f.filename)}:${f.line}:${f.column}: ${sev} [${f.name}] ${f.message}${f.fix ? paint('2', ' [*]') : ''}`);
  }
  const problemNote = problems > 0 ? `; ${problems} problem${problems === 1 ? '' : 's'} reported above (files not checked or not fixed)` : '';
  if (total === 0) lines.push(problems > 0 ? `No findings${problemNote}.` : 'All checks passed.');
  else lines.push(`Found ${total} finding${total === 1 ? '' : 's'}${fixable > 0 ? ` (${fixable} fixable with --fix)` : ''}${problemNote}.`);
  return lines.join('\n') + '\n';
}

const SARIF_LEVEL: Record<string, string> = { error: 'error', warning: 'warning', info: 'note' };

/**
 * A SARIF artifactLocation: a relative URI reference against %SRCROOT% (the working folder) for files
 * below it, an absolute file:// URI otherwise; either way percent-encoded (RFC 3986), so names with
 * spaces, '#', '%' or non-ASCII letters resolve back to the file.
 */
export function artifactLocation(filename: string, cwd: string): { uri: string; uriBaseId?: string } {
  const absolute = path.resolve(cwd, filename);
  const rel = path.relative(cwd, absolute);
  if (rel === '' || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) return { uri: pathToFileURL(absolute).href };
  // encodeURIComponent leaves only unreserved characters and !'()*, all legal in a path segment; a ':'
  // in the first segment would read as a scheme, and is encoded too.
  return { uri: rel.split(path.sep).map(encodeURIComponent).join('/'), uriBaseId: '%SRCROOT%' };
}

export function toSarif(files: readonly FileFindings[], cwd: string): object {
  const rules = allRules.map((r) => ({
    id: r.code,
    name: r.name,
    shortDescription: { text: r.summary },
    helpUri: `docs/rules/${r.code}.md`,
    defaultConfiguration: { level: SARIF_LEVEL[r.severity] },
  }));
  const results = toJson(files).map((f) => ({
    ruleId: f.code,
    ruleIndex: allRules.findIndex((r) => r.code === f.code),
    level: SARIF_LEVEL[f.severity],
    message: { text: f.message },
    locations: [
      {
        physicalLocation: {
          artifactLocation: artifactLocation(f.filename, cwd),
          region: { startLine: f.line, startColumn: f.column, endLine: f.endLine, endColumn: f.endColumn },
        },
      },
    ],
    ...(f.fix === null
      ? {}
      : {
          fixes: [
            {
              description: { text: f.fix.title },
              artifactChanges: [
                {
                  artifactLocation: artifactLocation(f.filename, cwd),
                  replacements: f.fix.edits.map((e) => ({
                    deletedRegion: { startLine: e.line, startColumn: e.column, endLine: e.endLine, endColumn: e.endColumn },
                    insertedContent: { text: e.content },
                  })),
                },
              ],
            },
          ],
        }),
  }));
  return {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [
      {
        tool: { driver: { name: 'memhint', version: VERSION, rules } },
        // The base that relative artifact URIs resolve against (a folder URI ends with '/').
        originalUriBaseIds: { '%SRCROOT%': { uri: pathToFileURL(cwd).href.replace(/\/?$/, '/') } },
        results,
      },
    ],
  };
}
