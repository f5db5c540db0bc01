// Out-of-sample lint accuracy: runs the built CLI on every script of eval/accuracy/manifest-*.json and matches its
// findings to the hand labels (see eval/accuracy/README.md). Prints precision/recall per rule for dev, test and all,
// then the false positives and misses of the dev split (the test split's stay held out unless --split asks for them).
// Usage: npm run eval:accuracy [-- --split dev|test|all] [--manifest NAME]... [--json] [--write-docs]
// --manifest (repeatable; `c`, `manifest-c` or `manifest-c.json`) measures those manifests alone, e.g. a fresh
// held-out one; without it every manifest-*.json is measured. An entry with `context` is linted in its folder
// scripts/context/<id>/ with the files of its repository it imports (restore-corpus.mjs); --no-context lints
// every script alone (to measure what following imports changes).
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const evalDir = path.join(root, 'eval/accuracy');
const docsPath = path.join(root, 'docs/accuracy.md');
// The corpus is labelled for a current torch 2.x (CORPUS.md): pin it so no pyproject/requirements changes the verdicts.
const TARGET_TORCH = '2.4';
const BATCH = 20;

function fail(message) {
  process.stderr.write(`eval-accuracy: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { split: null, manifests: [], json: false, writeDocs: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--json') opts.json = true;
    else if (a === '--write-docs') opts.writeDocs = true;
    else if (a === '--no-context') opts.noContext = true;
    else if (a === '--split') {
      opts.split = argv[++i];
      if (!['dev', 'test', 'all'].includes(opts.split)) fail(`--split must be dev, test or all (got ${JSON.stringify(opts.split)})`);
    } else if (a === '--manifest') {
      const name = argv[++i];
      if (!name || name.startsWith('--')) fail('--manifest needs a name (e.g. c, manifest-c or manifest-c.json)');
      opts.manifests.push(name);
    } else if (a === '-h' || a === '--help') {
      process.stdout.write('Usage: node scripts/eval-accuracy.mjs [--split dev|test|all] [--manifest NAME]... [--json] [--write-docs] [--no-context]\n');
      process.exit(0);
    } else fail(`unknown argument ${JSON.stringify(a)}`);
  }
  return opts;
}

const outFile = path.join(root, 'out/src/eval/accuracy.js');
const cliFile = path.join(root, 'dist/cli.js');
if (!fs.existsSync(outFile) || !fs.existsSync(path.join(root, 'out/src/lint/index.js'))) fail('out/ is missing: run `npm run compile` first');
if (!fs.existsSync(cliFile)) fail('dist/cli.js is missing: run `npm run build` first');
const { matchScript, scoreSplit, renderSplitTable, selectManifests, RULE_CODES } = require(outFile);
const { allRules } = require(path.join(root, 'out/src/lint/index.js'));

/** Every entry of the selected manifests (all when none is named), checked for the fields matching relies on. */
function loadManifests(wanted) {
  let files;
  try {
    files = selectManifests(fs.readdirSync(evalDir), wanted);
  } catch (e) {
    fail(e.message);
  }
  if (files.length === 0) fail(`no manifest-*.json in ${evalDir}`);
  const entries = [];
  const ids = new Set();
  for (const file of files) {
    let data;
    try {
      data = JSON.parse(fs.readFileSync(path.join(evalDir, file), 'utf8'));
    } catch (e) {
      fail(`${file}: not valid JSON (${e.message})`);
    }
    if (!Array.isArray(data)) fail(`${file}: expected a JSON array of scripts`);
    data.forEach((e, i) => {
      const where = `${file}[${i}]${e && e.id ? ` (${e.id})` : ''}`;
      for (const k of ['id', 'file', 'repo', 'path', 'url', 'license', 'kind']) {
        if (typeof e?.[k] !== 'string' || e[k] === '') fail(`${where}: "${k}" must be a non-empty string`);
      }
      if (e.split !== 'dev' && e.split !== 'test') fail(`${where}: "split" must be "dev" or "test"`);
      if (!Array.isArray(e.labels)) fail(`${where}: "labels" must be an array`);
      for (const l of e.labels) {
        if (!RULE_CODES.includes(l.code)) fail(`${where}: unknown rule code ${JSON.stringify(l.code)}`);
        const end = l.endLine ?? l.line;
        if (!Number.isInteger(l.line) || l.line < 1 || !Number.isInteger(end) || end < l.line) fail(`${where}: bad label lines ${JSON.stringify(l)}`);
      }
      if (ids.has(e.id)) fail(`${where}: duplicate id`);
      ids.add(e.id);
      if (e.context !== undefined && (!Array.isArray(e.context) || e.context.some((c) => typeof c?.path !== 'string' || typeof c?.sha256 !== 'string'))) {
        fail(`${where}: "context" must be an array of {path, sha256}`);
      }
      entries.push({ ...e, manifest: file, abs: path.resolve(evalDir, e.file), linted: path.resolve(evalDir, e.file) });
    });
  }
  return { files, entries };
}

/**
 * An entry with `context` is linted in its checkout-like folder `scripts/context/<id>/` (restore-corpus.mjs),
 * where the linter can follow the script's imports into the other files of its repository. Returns the
 * entries whose folder is incomplete or differs from the manifest (they are linted alone, and said so).
 */
function placeInContext(entries) {
  const incomplete = [];
  for (const e of entries) {
    if (!Array.isArray(e.context) || e.context.length === 0) continue;
    const base = path.join(evalDir, 'scripts', 'context', e.id);
    const files = [{ path: e.path, sha256: e.sha256 }, ...e.context];
    const ok = fs.existsSync(path.join(base, '.git')) && files.every((c) => {
      const p = path.join(base, path.normalize(c.path));
      return p.startsWith(base + path.sep) && fs.existsSync(p) && createHash('sha256').update(fs.readFileSync(p)).digest('hex') === c.sha256;
    });
    if (ok) e.linted = path.join(base, path.normalize(e.path));
    else incomplete.push(e);
  }
  return incomplete;
}

/** Scripts that are absent or differ from the pinned sha256 (labels' line numbers would not hold). */
function checkScripts(entries) {
  const missing = [];
  const changed = [];
  for (const e of entries) {
    if (!fs.existsSync(e.abs)) missing.push(e);
    else if (e.sha256 && createHash('sha256').update(fs.readFileSync(e.abs)).digest('hex') !== e.sha256) changed.push(e);
  }
  return { missing, changed };
}

/** Findings per absolute path, from the CLI in batches (exit 1 only means "findings"). */
function runLinter(entries) {
  const byFile = new Map(entries.map((e) => [e.linted, []]));
  for (let i = 0; i < entries.length; i += BATCH) {
    const batch = entries.slice(i, i + BATCH).map((e) => e.linted);
    let stdout;
    try {
      stdout = execFileSync(process.execPath, [path.join(root, 'bin/memhint.js'), 'lint', '--format', 'json', '--no-config', '--target-torch', TARGET_TORCH, ...batch], {
        cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (err) {
      if (err.status !== 1) fail(`memhint lint exited with ${err.status}: ${String(err.stderr).trim().split('\n')[0]}`);
      stdout = err.stdout;
    }
    let findings;
    try {
      findings = JSON.parse(stdout);
    } catch {
      fail('memhint lint --format json did not print JSON');
    }
    for (const f of findings) {
      const list = byFile.get(path.resolve(root, f.filename));
      if (!list) fail(`finding for a file that was not linted: ${f.filename}`);
      list.push({ code: f.code, line: f.line, message: f.message });
    }
  }
  return byFile;
}

const opts = parseArgs(process.argv.slice(2));
// The docs' tables and sources cover the whole corpus: a partial measure must not overwrite them.
if (opts.writeDocs && opts.manifests.length > 0) fail('--write-docs measures every manifest; drop --manifest');
if (opts.writeDocs && opts.noContext) fail('--write-docs measures scripts with their context; drop --no-context');
const { files: manifestFiles, entries: allEntries } = loadManifests(opts.manifests);
const { missing, changed } = checkScripts(allEntries);
if (changed.length > 0) fail(`${changed.length} script(s) differ from their manifest sha256, e.g. ${changed[0].file}; restore them (eval/accuracy/README.md)`);
if (missing.length > 0 && opts.writeDocs) fail(`${missing.length} script(s) missing, e.g. ${missing[0].file}: restore them before --write-docs (eval/accuracy/README.md)`);
const entries = allEntries.filter((e) => !missing.includes(e));
// --no-context: every script alone, as before contexts existed (to measure what following imports changes).
const noContext = opts.noContext === true;
const incomplete = noContext ? [] : placeInContext(entries);
if (incomplete.length > 0 && opts.writeDocs) fail(`${incomplete.length} context folder(s) incomplete, e.g. scripts/context/${incomplete[0].id}: run scripts/restore-corpus.mjs before --write-docs`);
if (entries.length === 0) fail(`none of the ${allEntries.length} scripts is present under eval/accuracy/; restore them (eval/accuracy/README.md)`);

const implemented = new Set(allRules.map((r) => r.code));
const findings = runLinter(entries);
const matches = new Map(entries.map((e) => [e.id, matchScript(e.labels, findings.get(e.linted))]));
const splits = { dev: entries.filter((e) => e.split === 'dev'), test: entries.filter((e) => e.split === 'test'), all: entries };
const shown = opts.split ? [opts.split] : ['dev', 'test', 'all'];
const scores = Object.fromEntries(shown.map((s) => [s, scoreSplit(splits[s], matches, implemented)]));
// Failure lists: the dev split by default, so that the held-out test split is not looked at while tuning.
const listSplit = opts.split ?? 'dev';
const failures = { falsePositives: [], duplicates: [], misses: [] };
for (const e of splits[listSplit]) {
  const m = matches.get(e.id);
  for (const f of m.falsePositives) failures.falsePositives.push({ file: e.file, line: f.line, code: f.code, note: f.message });
  for (const f of m.duplicates) failures.duplicates.push({ file: e.file, line: f.line, code: f.code, note: f.message });
  for (const l of m.misses) failures.misses.push({ file: e.file, line: l.line, endLine: l.endLine ?? l.line, code: l.code, note: l.note ?? '', implemented: implemented.has(l.code) });
}

if (opts.json) {
  process.stdout.write(`${JSON.stringify({
    targetTorch: TARGET_TORCH, manifests: manifestFiles, scripts: entries.length, missing: missing.map((e) => e.file),
    implementedRules: [...implemented].sort(), splits: scores, failuresOf: listSplit, failures,
  }, null, 2)}\n`);
} else {
  const out = [];
  out.push(`memhint lint accuracy on ${entries.length} scripts from ${new Set(entries.map((e) => e.repo)).size} repositories (${manifestFiles.join(', ')}; target torch ${TARGET_TORCH})`);
  if (missing.length > 0) out.push(`WARNING: ${missing.length} script(s) missing and not measured, e.g. ${missing[0].file}`);
  if (incomplete.length > 0) out.push(`WARNING: ${incomplete.length} script(s) linted without their context (folder incomplete), e.g. scripts/context/${incomplete[0].id}; run scripts/restore-corpus.mjs`);
  out.push(`${entries.filter((e) => e.linted !== e.abs).length} script(s) linted with their repository context${noContext ? ' (--no-context: none)' : ''}`);
  for (const s of shown) out.push('', `## ${s} (${scores[s].scripts} scripts, ${scores[s].repos} repositories)`, '', renderSplitTable(scores[s]));
  const loc = (x) => `${x.file}:${x.line}${x.endLine && x.endLine !== x.line ? `-${x.endLine}` : ''}`;
  out.push('', `## false positives (${listSplit})`, '', ...failures.falsePositives.map((x) => `${loc(x)} ${x.code} ${x.note ?? ''}`));
  out.push('', `## misses of implemented rules (${listSplit})`, '', ...failures.misses.filter((x) => x.implemented).map((x) => `${loc(x)} ${x.code} ${x.note}`));
  out.push('', `## misses of rules not implemented yet (${listSplit})`, '', ...failures.misses.filter((x) => !x.implemented).map((x) => `${loc(x)} ${x.code} ${x.note}`));
  if (failures.duplicates.length > 0) out.push('', `## duplicates (${listSplit}): further findings on an already matched label`, '', ...failures.duplicates.map((x) => `${loc(x)} ${x.code}`));
  process.stdout.write(`${out.join('\n')}\n`);
}

if (opts.writeDocs) writeDocs();

/** Replaces the generated blocks of docs/accuracy.md between their marker comments; refuses to guess otherwise. */
function writeDocs() {
  const docScores = Object.fromEntries(['dev', 'test', 'all'].map((s) => [s, scores[s] ?? scoreSplit(splits[s], matches, implemented)]));
  const tables = ['dev', 'test', 'all'].map((s) => `### ${s}: ${docScores[s].scripts} scripts from ${docScores[s].repos} repositories\n\n${renderSplitTable(docScores[s])}`).join('\n\n');
  const byManifest = manifestFiles.map((m) => {
    const es = allEntries.filter((e) => e.manifest === m);
    const rows = es.map((e) => `| [${e.repo}](https://github.com/${e.repo}) | [${e.path}](${e.url}) | ${e.commit ? `\`${e.commit.slice(0, 10)}\`` : '?'} | ${e.kind} | ${e.license} | ${e.split} | ${e.labels.length} |`);
    return `### ${m}: ${es.length} scripts from ${new Set(es.map((e) => e.repo)).size} repositories\n\n| repository | path | commit | kind | license | split | labels |\n|---|---|---|---|---|---|---:|\n${rows.join('\n')}`;
  }).join('\n\n');
  const counts = RULE_CODES.map((c) => [c, allEntries.reduce((n, e) => n + e.labels.filter((l) => l.code === c).length, 0)]).filter(([, n]) => n > 0);
  const labelLine = `Labels per rule (all manifests): ${counts.map(([c, n]) => `${c} ${n}`).join(', ')}; ${allEntries.filter((e) => e.labels.length === 0).length} scripts have no label.`;
  const blocks = {
    baseline: `Measured with \`npm run eval:accuracy -- --write-docs\` (target torch ${TARGET_TORCH}, implemented rules: ${[...implemented].sort().join(', ')}).\n\n${tables}`,
    sources: `${labelLine}\n\n${byManifest}`,
  };
  if (!fs.existsSync(docsPath)) fail(`${path.relative(root, docsPath)} is missing; it holds the marker comments the tables go between`);
  let text = fs.readFileSync(docsPath, 'utf8');
  for (const [name, body] of Object.entries(blocks)) {
    const start = `<!-- accuracy:${name}:start -->`;
    const end = `<!-- accuracy:${name}:end -->`;
    const a = text.indexOf(start);
    const b = text.indexOf(end);
    if (a < 0 || b < a) fail(`${path.relative(root, docsPath)}: markers ${start} ... ${end} not found in order`);
    text = `${text.slice(0, a + start.length)}\n${body}\n${text.slice(b)}`;
  }
  const tmp = `${docsPath}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, docsPath);
  process.stderr.write(`eval-accuracy: updated ${path.relative(root, docsPath)}\n`);
}
