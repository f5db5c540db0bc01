// Helpers for the MH003/MH005/MH008/MH009 fix tests: apply one finding's fix, prove the result is valid
// Python (tree-sitter and the test interpreter's ast) and that re-linting no longer reports it.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import type { Finding, Fix, TorchVersion } from '../../../src/lint';
import { getLinter, lint } from './harness';

const python = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';

export function applyEdits(text: string, fix: Fix): string {
  const edits = [...fix.edits].sort((a, b) => b.start - a.start || b.end - a.end);
  for (let i = 1; i < edits.length; i++) assert.ok(edits[i].end <= edits[i - 1].start, `overlapping edits in "${fix.title}"`);
  let out = text;
  for (const e of edits) out = out.slice(0, e.start) + e.newText + out.slice(e.end);
  return out;
}

/** ERROR / missing nodes of a text, as "line: text" strings. */
export async function parseErrors(text: string): Promise<string[]> {
  const doc = (await getLinter()).open(text);
  try {
    const file = doc.source;
    const out: string[] = [];
    const stack = [file.root];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if (n.type === 'ERROR' || n.missing) out.push(`${file.lineOf(n.start) + 1}: ${n.type} ${file.textOf(n).slice(0, 40)}`);
      stack.push(...n.children);
    }
    return out;
  } finally {
    doc.dispose();
  }
}

/** Python's verdict on many texts in one interpreter run: the indices it rejects (none without Python). */
export function pythonRejects(texts: readonly string[]): number[] {
  if (!fs.existsSync(python) || texts.length === 0) return [];
  const script = 'import ast, json, sys\nbad = []\nfor i, t in enumerate(json.load(sys.stdin)):\n    try:\n        ast.parse(t)\n    except SyntaxError:\n        bad.append(i)\nprint(json.dumps(bad))\n';
  const out = execFileSync(python, ['-c', script], { input: JSON.stringify(texts), encoding: 'utf8' });
  return JSON.parse(out) as number[];
}

/** Python's own verdict (skipped when the interpreter is missing). */
export function pythonParses(text: string): boolean {
  if (!fs.existsSync(python)) return true;
  try {
    execFileSync(python, ['-c', 'import ast, sys; ast.parse(sys.stdin.read())'], { input: text, stdio: ['pipe', 'pipe', 'pipe'] });
    return true;
  } catch {
    return false;
  }
}

function lineAt(text: string, offset: number): number {
  return text.slice(0, offset).split('\n').length;
}

/**
 * Applies `finding`'s fix to `source`, asserts the result parses (tree-sitter and Python) and that a
 * re-lint has fewer findings of that code and none left on the finding's line. Returns the fixed text.
 */
export async function checkFix(source: string, finding: Finding, targetTorch: TorchVersion | null = null, askPython = true): Promise<string> {
  assert.ok(finding.fix, `${finding.code} at line ${lineAt(source, finding.start)} has no fix`);
  const fixed = applyEdits(source, finding.fix);
  const where = `${finding.code} fix "${finding.fix.title}" at line ${lineAt(source, finding.start)}`;
  assert.deepEqual(await parseErrors(fixed), [], `${where} leaves syntax errors:\n${fixed}`);
  if (askPython) assert.ok(pythonParses(fixed), `${where}: Python rejects the result:\n${fixed}`);
  const before = (await lint(source, { targetTorch })).filter((f) => f.code === finding.code);
  const after = (await lint(fixed, { targetTorch })).filter((f) => f.code === finding.code);
  assert.ok(after.length < before.length, `${where}: still ${after.length} ${finding.code} findings`);
  // The edit may shift lines below it, but the finding's own line start is unchanged by edits after it.
  const line = lineAt(source, finding.start);
  const shift = finding.fix.edits
    .filter((e) => e.end <= finding.start)
    .reduce((n, e) => n + (e.newText.split('\n').length - 1) - (source.slice(e.start, e.end).split('\n').length - 1), 0);
  const sameBefore = before.filter((f) => lineAt(source, f.start) === line);
  const sameAfter = after.filter((f) => lineAt(fixed, f.start) === line + shift);
  assert.ok(sameAfter.length < sameBefore.length, `${where}: re-lint still reports it:\n${fixed}`);
  return fixed;
}

/** Lints and returns the findings of one code. */
export async function findingsOf(source: string, code: string, targetTorch: TorchVersion | null = null): Promise<Finding[]> {
  return (await lint(source, { targetTorch })).filter((f) => f.code === code);
}

/** The single finding of `code` in `source`'s fixed text after applying it, for before/after assertions. */
export async function fixOnly(source: string, code: string, targetTorch: TorchVersion | null = null): Promise<string> {
  const found = await findingsOf(source, code, targetTorch);
  assert.equal(found.length, 1, `expected one ${code} finding, got ${found.length}`);
  return checkFix(source, found[0], targetTorch);
}
