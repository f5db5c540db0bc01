#!/usr/bin/env node
// Restores the accuracy corpus's scripts (eval/accuracy/scripts/, not committed: third-party code) from local
// bare git mirrors, one per repository, and checks each against its manifest sha256.
//
//   node scripts/restore-corpus.mjs [--mirrors DIR] [--force]
//
// DIR (default /work/.mirror, what a memhint session's `fetch` tool fills) holds one mirror per repository named
// `<owner>+<name>`, its git directory at `repo/.git` or `repo` (`fetch github:<owner>/<name>` makes it). A script
// already in place with the right hash is kept unless --force. Prints the repositories whose mirror is missing, so
// the session knows which to fetch, and exits 1 when any script could not be restored or has the wrong hash.
//
// An entry with `context` (the files of its repository the linter follows the script's imports into, pinned by
// path and sha256 at the same commit: scripts/corpus-context.mjs) also gets a checkout-like folder
// `scripts/context/<id>/`: the script at its own path, each context file at its path, and an empty `.git/` that
// marks the folder as the project root (where the linter stops resolving imports). eval-accuracy.mjs lints
// the script there.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { normalize, isAbsolute } from 'node:path';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const corpus = join(root, 'eval', 'accuracy');
const args = process.argv.slice(2);
const mirrors = args.includes('--mirrors') ? args[args.indexOf('--mirrors') + 1] : '/work/.mirror';
const force = args.includes('--force');

const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');

/** The git directory of `repo`'s mirror, or undefined: `fetch` leaves either a bare repo or a clone's .git. */
function gitDir(repo) {
  const base = join(mirrors, repo.replace('/', '+'), 'repo');
  if (existsSync(join(base, '.git', 'HEAD'))) return join(base, '.git');
  if (existsSync(join(base, 'HEAD'))) return base;
  return undefined;
}

const entries = readdirSync(corpus)
  .filter((f) => /^manifest-.*\.json$/.test(f))
  .sort()
  .flatMap((f) => JSON.parse(readFileSync(join(corpus, f), 'utf8')));

const missingRepos = new Set();
let kept = 0;
let restored = 0;
const failures = [];
/** Writes `path` of `e`'s repository at its commit to `out` after checking its sha256; returns 'kept' | 'restored' | null (failed). */
function restoreOne(e, path, expected, out) {
  if (!force && existsSync(out) && sha256(readFileSync(out)) === expected) return 'kept';
  const git = gitDir(e.repo);
  if (!git) {
    missingRepos.add(e.repo);
    failures.push(`${e.id}: no mirror of ${e.repo}`);
    return null;
  }
  let content;
  try {
    content = execFileSync('git', ['--git-dir', git, 'show', `${e.commit}:${path}`], { maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    failures.push(`${e.id}: git show ${e.commit}:${path} failed: ${String(err.stderr || err.message).trim()}`);
    return null;
  }
  const got = sha256(content);
  if (got !== expected) {
    failures.push(`${e.id}: ${path}: sha256 ${got} != manifest ${expected} (not written)`);
    return null;
  }
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, content);
  return 'restored';
}

/** A repository path that stays inside its folder (no `..`, not absolute): manifests are data, not trusted paths. */
function safeRelative(p) {
  const n = normalize(p);
  return typeof p === 'string' && p !== '' && !isAbsolute(n) && !n.startsWith('..') ? n : null;
}

let contexts = 0;
for (const e of entries) {
  if (!Array.isArray(e.context) || e.context.length === 0) continue;
  const base = join(corpus, 'scripts', 'context', e.id);
  const files = [{ path: e.path, sha256: e.sha256 }, ...e.context];
  let ok = true;
  for (const c of files) {
    const rel = safeRelative(c.path);
    if (rel === null) {
      failures.push(`${e.id}: context path ${JSON.stringify(c.path)} leaves its folder`);
      ok = false;
      continue;
    }
    ok = restoreOne(e, c.path, c.sha256, join(base, rel)) !== null && ok;
  }
  mkdirSync(join(base, '.git'), { recursive: true });
  if (ok) contexts++;
}

for (const e of entries) {
  const out = join(corpus, e.file);
  if (!force && existsSync(out) && sha256(readFileSync(out)) === e.sha256) {
    kept++;
    continue;
  }
  const git = gitDir(e.repo);
  if (!git) {
    missingRepos.add(e.repo);
    failures.push(`${e.id}: no mirror of ${e.repo}`);
    continue;
  }
  let content;
  try {
    // Buffer, not string: the hash is over the exact bytes (line endings, encoding) the labels were made on.
    content = execFileSync('git', ['--git-dir', git, 'show', `${e.commit}:${e.path}`], {
      maxBuffer: 64 * 1024 * 1024,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    failures.push(`${e.id}: git show ${e.commit}:${e.path} failed: ${String(err.stderr || err.message).trim()}`);
    continue;
  }
  const got = sha256(content);
  if (got !== e.sha256) {
    failures.push(`${e.id}: sha256 ${got} != manifest ${e.sha256} (not written)`);
    continue;
  }
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, content);
  restored++;
}

console.log(`${entries.length} scripts: ${restored} restored, ${kept} already in place, ${failures.length} failed; ${contexts} context folders complete`);
if (missingRepos.size) console.log(`fetch these first:\n${[...missingRepos].map((r) => `  github:${r}`).join('\n')}`);
for (const f of failures) console.log(`  ${f}`);
process.exit(failures.length ? 1 : 0);
