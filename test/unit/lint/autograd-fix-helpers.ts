// Helpers for the MH001/MH002/MH004 fix tests: apply a fix, check the result parses, run Python.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Finding, Fix } from '../../../src/lint';
import { getLinter } from './harness';

export const python = process.env.MEMHINT_TEST_PYTHON ?? '/usr/bin/python3';

/** The text with every edit of the fix applied (edits are against the original text). */
export function applyFix(text: string, fix: Fix): string {
  const edits = [...fix.edits].sort((a, b) => b.start - a.start);
  let out = text;
  for (const e of edits) out = out.slice(0, e.start) + e.newText + out.slice(e.end);
  return out;
}

/** Syntax errors (ERROR or missing nodes) after parsing, as "line: text". */
export async function syntaxErrors(text: string): Promise<string[]> {
  const doc = (await getLinter()).open(text);
  try {
    const file = doc.source;
    const errors = [...file.nodesOfType('ERROR')];
    const out = errors.map((n) => `${file.lineOf(n.start) + 1}: ${file.textOf(n).slice(0, 60)}`);
    const stack = [file.root];
    while (stack.length > 0) {
      const n = stack.pop()!;
      if (n.missing) out.push(`${file.lineOf(n.start) + 1}: missing ${n.type}`);
      stack.push(...n.children);
    }
    return out;
  } finally {
    doc.dispose();
  }
}

export function lineOf(text: string, offset: number): number {
  return text.slice(0, offset).split('\n').length;
}

export function hasTorch(): boolean {
  if (!fs.existsSync(python)) return false;
  try {
    execFileSync(python, ['-c', 'import torch'], { stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

/** Runs a Python script with the test interpreter and returns its stdout. */
export function runPython(source: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-fix-'));
  const file = path.join(dir, 'script.py');
  fs.writeFileSync(file, source);
  try {
    return execFileSync(python, [file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export function only(findings: readonly Finding[], code: string): Finding[] {
  return findings.filter((f) => f.code === code);
}
