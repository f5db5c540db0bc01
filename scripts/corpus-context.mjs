#!/usr/bin/env node
// Adds each script's `context` to the accuracy manifests: the files of its repository, at the same
// commit, that the linter would see in a checkout when it follows the script's imports (project-local modules
// it imports, the packages' __init__.py on the way), plus the files its labels' notes name (the script that
// builds the loader it is passed). Each is pinned by path and sha256; restore-corpus.mjs restores them under
// eval/accuracy/scripts/context/<id>/ and eval-accuracy.mjs lints the script there (eval/accuracy/README.md).
//
//   node scripts/corpus-context.mjs [--mirrors /work/.mirror] [--manifest NAME]... [--dry-run]
//
// Every split gets its context by this one procedure, which reads only the script, its repository's file list at
// the entry's commit and the labels' notes, never memhint's output: the test split's failures stay unread, and
// eval-accuracy.mjs --no-context still measures every script alone (the series comparable with earlier sessions).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const corpus = join(root, 'eval', 'accuracy');
const args = process.argv.slice(2);
const mirrors = args.includes('--mirrors') ? args[args.indexOf('--mirrors') + 1] : '/work/.mirror';
const dryRun = args.includes('--dry-run');
const wanted = args.flatMap((a, i) => (args[i - 1] === '--manifest' ? [a.replace(/^manifest-/, '').replace(/\.json$/, '')] : []));

function gitDir(repo) {
  const base = join(mirrors, repo.replace('/', '+'), 'repo');
  if (existsSync(join(base, '.git', 'HEAD'))) return join(base, '.git');
  if (existsSync(join(base, 'HEAD'))) return base;
  return undefined;
}

const git = (dir, ...a) => execFileSync('git', ['--git-dir', dir, ...a], { maxBuffer: 256 * 1024 * 1024, stdio: ['ignore', 'pipe', 'pipe'] });

/** Module names a Python file imports (dotted, leading dots for relative ones), with the names imported from each. */
function importsOf(source) {
  const out = [];
  // CRLF (and old-Mac CR) scripts: `.` stops at `\r`, so the line patterns below would match no import at all.
  const text = source.replace(/\r\n?/g, '\n');
  // Joins parenthesised continuation lines so `from x import (a,\n b)` reads as one statement.
  const flat = text.replace(/\(([^()]*)\)/g, (m, inner) => (m.includes('\n') ? `(${inner.replace(/\n/g, ' ')})` : m));
  for (const line of flat.split('\n')) {
    let m = /^\s*from\s+(\.*[\w.]*)\s+import\s+(.+)$/.exec(line);
    if (m) {
      const names = m[2].replace(/[()]/g, '').split('#')[0].split(',').map((s) => s.trim().split(/\s+as\s+/)[0]).filter((s) => /^\w+$/.test(s));
      out.push({ module: m[1], names });
      continue;
    }
    m = /^\s*import\s+(.+)$/.exec(line);
    if (m) for (const part of m[1].split('#')[0].split(',')) {
      const name = part.trim().split(/\s+as\s+/)[0];
      if (/^[\w.]+$/.test(name)) out.push({ module: name, names: [] });
    }
  }
  return out;
}

/** The repository paths `module` names from `fromPath` (as the linter resolves them: project/project-index.ts). */
function resolve(files, fromPath, module) {
  const level = /^\.*/.exec(module)[0].length;
  const parts = module.slice(level).split('.').filter(Boolean);
  let bases;
  if (level > 0) {
    let base = posix.dirname(fromPath);
    for (let i = 1; i < level; i++) base = posix.dirname(base);
    bases = [base];
  } else {
    bases = [];
    for (let dir = posix.dirname(fromPath); ; dir = posix.dirname(dir)) {
      bases.push(dir);
      if (dir === '.' || dir === '/' || dir === '') break;
    }
  }
  for (const base of bases) {
    const stem = posix.join(base, ...parts);
    for (const p of parts.length === 0 ? [posix.join(base, '__init__.py')] : [`${stem}.py`, posix.join(stem, '__init__.py')]) {
      const n = posix.normalize(p);
      if (files.has(n)) return n;
    }
  }
  return null;
}

const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');
let changed = 0;
for (const f of readdirSync(corpus).filter((f) => /^manifest-.*\.json$/.test(f)).sort()) {
  if (wanted.length > 0 && !wanted.includes(f.replace(/^manifest-/, '').replace(/\.json$/, ''))) continue;
  const path = join(corpus, f);
  const entries = JSON.parse(readFileSync(path, 'utf8'));
  let touched = false;
  for (const e of entries) {
    const dir = gitDir(e.repo);
    if (!dir) {
      console.log(`${e.id}: no mirror of ${e.repo} (fetch github:${e.repo})`);
      continue;
    }
    const files = new Set(String(git(dir, 'ls-tree', '-r', '--name-only', e.commit)).split('\n').filter((p) => p.endsWith('.py')));
    const text = String(git(dir, 'show', `${e.commit}:${e.path}`));
    const picked = new Set();
    for (const { module, names } of importsOf(text)) {
      const hit = resolve(files, e.path, module);
      if (hit !== null) picked.add(hit);
      // `from pkg import mod`: a submodule.
      for (const n of names) {
        const sub = resolve(files, e.path, `${module}${module.endsWith('.') ? '' : '.'}${n}`);
        if (sub !== null) picked.add(sub);
      }
    }
    // Files the notes name (`built in train.py`, `utils/dataset.py`): the importer that passes the loader.
    const notes = [e.notes ?? '', ...e.labels.map((l) => l.note ?? '')].join(' ');
    for (const named of notes.match(/[\w./-]+\.py\b/g) ?? []) {
      const hits = [...files].filter((p) => p === named || p.endsWith(`/${named}`));
      if (hits.length === 1) picked.add(hits[0]);
    }
    // Packages' __init__.py on the way to each picked module (what an import runs and may re-export).
    for (const p of [...picked]) {
      for (let d = posix.dirname(p); d !== '.' && d !== ''; d = posix.dirname(d)) if (files.has(`${d}/__init__.py`)) picked.add(`${d}/__init__.py`);
    }
    picked.delete(e.path);
    const context = [...picked].sort().map((p) => ({ path: p, sha256: sha256(git(dir, 'show', `${e.commit}:${p}`)) }));
    const before = JSON.stringify(e.context ?? []);
    if (context.length === 0) delete e.context;
    else e.context = context;
    if (JSON.stringify(e.context ?? []) !== before) {
      touched = true;
      changed++;
      console.log(`${e.id}: ${context.map((c) => c.path).join(' ')}`);
    }
  }
  // Keeps the manifest's own indentation (manifest-e's is one space), so the diff shows the contexts alone.
  const indent = /^\[\n( +)/.exec(readFileSync(path, 'utf8'))?.[1].length ?? 2;
  if (touched && !dryRun) writeFileSync(path, `${JSON.stringify(entries, null, indent)}\n`);
}
console.log(`${changed} entries with a new context${dryRun ? ' (dry run, nothing written)' : ''}`);
