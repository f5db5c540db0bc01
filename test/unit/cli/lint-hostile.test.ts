// `memhint lint` on what a cloned repository can contain: real processes, real files, real FIFOs.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { LOOP, type Run, memhint, project as makeProject, repo } from './cli-fixture';

const project = (files: Record<string, string | Buffer>): string => makeProject(files, 'memhint-hostile-');

const codesOf = (r: Run): string[] => (JSON.parse(r.stdout) as Array<{ code: string; filename: string }>).map((f) => `${path.basename(f.filename)}:${f.code}`).sort();

describe('memhint lint on hostile input (CLI)', function () {
  this.timeout(90_000); // several CLI runs per test on a shared 2-core CI machine
  before(function () {
    if (!fs.existsSync(path.join(repo, 'dist', 'cli.js'))) this.skip(); // `npm test` builds it first
  });

  it('skips FIFOs, devices and directories (as .py or pyproject.toml) with one line each, and lints the rest', () => {
    const dir = project({ 'sub/a.py': LOOP });
    execFileSync('mkfifo', [path.join(dir, 'pyproject.toml')]); // would block readFileSync forever
    fs.mkdirSync(path.join(dir, 'sub', 'pyproject.toml')); // EISDIR aborted the whole run
    execFileSync('mkfifo', [path.join(dir, 'sub', 'fifo.py')]);
    fs.symlinkSync('/dev/zero', path.join(dir, 'sub', 'zero.py')); // read until the heap was gone
    fs.mkdirSync(path.join(dir, 'sub', 'pkg.py'));
    fs.symlinkSync('pkg.py', path.join(dir, 'sub', 'dirlink.py'));
    const r = memhint(['lint', '--format', 'json', path.join(dir, 'sub'), path.join(dir, 'sub', 'fifo.py')]);
    assert.equal(r.signal, null, 'hung');
    assert.equal(r.code, 2, r.stderr);
    assert.deepEqual(codesOf(r), ['a.py:MH003', 'a.py:MH005']);
    const lines = r.stderr.trim().split('\n');
    for (const [name, kind] of [
      ['pyproject.toml', 'a FIFO'],
      [path.join('sub', 'pyproject.toml'), 'a directory'],
      ['fifo.py', 'a FIFO'],
      ['zero.py', 'a character device'],
      ['dirlink.py', 'a directory'],
    ]) {
      assert.equal(lines.filter((l) => l.includes(`${name}: ${kind}, not a regular file; skipped`)).length, 1, `${name}\n${r.stderr}`);
    }
    assert.equal(lines.length, 5, r.stderr);
  });

  it('skips a file over --max-file-size or [tool.memhint] max-file-size, keeps the other results, exits 2', () => {
    const dir = project({ 'big.py': LOOP.repeat(40), 'a.py': LOOP });
    let r = memhint(['lint', '--format', 'json', '--max-file-size', '1KiB', dir]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /big\.py: \d+(\.\d)? KiB, over the 1 KiB size limit; skipped \(see --max-file-size\)/);
    assert.deepEqual(codesOf(r), ['a.py:MH003', 'a.py:MH005']);
    fs.writeFileSync(path.join(dir, 'pyproject.toml'), '[tool.memhint]\nmax-file-size = "2KiB"\n');
    r = memhint(['lint', '--format', 'json', dir]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /big\.py: .* over the 2 KiB size limit/);
    // The flag wins over the file; 0 lifts the limit.
    assert.equal(memhint(['lint', '--format', 'json', '--max-file-size', '0', dir]).code, 1);
    // The default (10 MiB) skips an 11 MiB file before reading a byte of it.
    const huge = path.join(dir, 'huge.py');
    fs.writeFileSync(path.join(dir, 'pyproject.toml'), '');
    fs.closeSync(fs.openSync(huge, 'w'));
    fs.truncateSync(huge, 11 * 1024 * 1024); // sparse: costs no disk
    r = memhint(['lint', '--format', 'json', huge, path.join(dir, 'a.py')]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /huge\.py: 11 MiB, over the 10 MiB size limit; skipped/);
    assert.deepEqual(codesOf(r), ['a.py:MH003', 'a.py:MH005']);
  });

  it('never says "All checks passed" when a file was not checked (non-UTF-8)', () => {
    const dir = project({ 'b.py': Buffer.from([0x78, 0x20, 0x3d, 0x20, 0xff, 0xfe, 0x0a]) });
    const r = memhint(['lint', dir]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /b\.py: not valid UTF-8; not checked/);
    assert.doesNotMatch(r.stdout, /All checks passed/);
    assert.match(r.stdout, /^No findings; 1 problem reported above/);
  });

  it('lints and fixes lone-CR files like LF ones, keeping their line endings', () => {
    const cr = LOOP.replace(/\n/g, '\r');
    const dir = project({ 'lf.py': LOOP, 'cr.py': cr });
    const report = (name: string): string[] =>
      (JSON.parse(memhint(['lint', '--format', 'json', path.join(dir, name)]).stdout) as Array<{ code: string; line: number; column: number }>).map((f) => `${f.code}@${f.line}:${f.column}`);
    assert.deepEqual(report('cr.py'), report('lf.py'));
    assert.equal(report('lf.py').length, 2);
    const fixRun = memhint(['lint', '--fix', dir]);
    assert.equal(fixRun.code, 0, fixRun.stdout + fixRun.stderr);
    const fixedLf = fs.readFileSync(path.join(dir, 'lf.py'), 'utf8');
    assert.notEqual(fixedLf, LOOP);
    assert.equal(fs.readFileSync(path.join(dir, 'cr.py'), 'utf8'), fixedLf.replace(/\n/g, '\r'));
  });

  it('--fix leaves files that do not parse untouched and says where (still reporting findings)', () => {
    const files = {
      'paren.py': 'import torch\nfor x in loader:\n    opt.zero_grad(set_to_none=False)\n    loss = model(x\n    loss.backward()\n',
      'py2.py': 'import torch\nfor x in loader:\n    print "step"\n    opt.zero_grad(set_to_none=False)\n',
      'merge.py': 'import torch\nfor x in loader:\n<<<<<<< HEAD\n    opt.zero_grad(set_to_none=False)\n=======\n    opt.zero_grad()\n>>>>>>> other\n    opt.step()\n',
      'ok.py': LOOP,
    };
    const dir = project(files);
    const r = memhint(['lint', '--fix', '--format', 'json', dir]);
    assert.equal(r.code, 2, r.stderr);
    for (const name of ['paren.py', 'py2.py', 'merge.py']) {
      assert.equal(fs.readFileSync(path.join(dir, name), 'utf8'), files[name as keyof typeof files], name);
      assert.match(r.stderr, new RegExp(`${name.replace('.', '\\.')}:\\d+:\\d+: syntax error \\(.*\\), not fixed`));
    }
    assert.match(r.stderr, /py2\.py:3:5: syntax error \(Python 2 print statement\), not fixed/);
    assert.match(r.stderr, /merge\.py:3:1: syntax error/);
    assert.match(fs.readFileSync(path.join(dir, 'ok.py'), 'utf8'), /set_to_none=True/);
    assert.ok(codesOf(r).includes('py2.py:MH003'), r.stdout);
  });

  it('--fix never writes through a symlink that leads outside the paths given', () => {
    const root = project({ 'outside/victim.py': LOOP, 'proj/inner.py': LOOP });
    fs.symlinkSync(path.join('..', 'outside', 'victim.py'), path.join(root, 'proj', 'link.py'));
    fs.symlinkSync('inner.py', path.join(root, 'proj', 'alias.py'));
    const r = memhint(['lint', '--fix', '--select', 'MH003', path.join(root, 'proj')]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /link\.py: a symlink to .*outside[/\\]victim\.py, outside the paths given, not fixed/);
    assert.equal(fs.readFileSync(path.join(root, 'outside', 'victim.py'), 'utf8'), LOOP);
    // A link inside the tree: its target is fixed and the link stays a link.
    assert.match(fs.readFileSync(path.join(root, 'proj', 'inner.py'), 'utf8'), /set_to_none=True/);
    assert.ok(fs.lstatSync(path.join(root, 'proj', 'alias.py')).isSymbolicLink());
    // Named explicitly, the outside target is still refused: only the argument's own folder is in bounds.
    assert.equal(memhint(['lint', '--fix', '--select', 'MH003', path.join(root, 'proj', 'link.py')]).code, 2);
    assert.equal(fs.readFileSync(path.join(root, 'outside', 'victim.py'), 'utf8'), LOOP);
  });

  it('--fix keeps the file whole when the disk refuses the write (RLIMIT_FSIZE), and keeps the mode', () => {
    const big = Array.from({ length: 40 }, (_, i) => LOOP.replace('def train', `def train${i}`)).join('\n');
    const dir = project({ 'big.py': big, 'small.py': LOOP });
    fs.chmodSync(path.join(dir, 'small.py'), 0o640);
    // 4 KiB per file: small.py (~250 bytes) fits, big.py (~9 KB) fails mid-write with EFBIG.
    const r = memhint(['lint', '--fix', '--select', 'MH003', dir], repo, 'ulimit -f 4');
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /big\.py: cannot write fixes, file left as it was: .*(EFBIG|file too large)/);
    assert.equal(fs.readFileSync(path.join(dir, 'big.py'), 'utf8'), big);
    assert.match(fs.readFileSync(path.join(dir, 'small.py'), 'utf8'), /set_to_none=True/);
    assert.equal(fs.statSync(path.join(dir, 'small.py')).mode & 0o777, 0o640);
    assert.deepEqual(fs.readdirSync(dir).filter((n) => n.includes('.memhint-')), []);
  });

  it('--output: a failed write never leaves the previous report in place', () => {
    const dir = project({ 'train.py': LOOP });
    const out = path.join(dir, 'report.json');
    fs.writeFileSync(out, '[{"old": "report"}]');
    const r = memhint(['lint', '--format', 'sarif', '--output', out, dir], repo, 'ulimit -f 1'); // SARIF > 1 KiB
    assert.equal(r.code, 2);
    assert.match(r.stderr, /cannot write/);
    assert.equal(fs.existsSync(out), false);
    assert.equal(memhint(['lint', '--format', 'json', '--output', out, dir]).code, 1);
    assert.equal((JSON.parse(fs.readFileSync(out, 'utf8')) as unknown[]).length, 2);
  });

  it('profile --out: a failed run never leaves the previous report in place', () => {
    const dir = project({});
    const out = path.join(dir, 'report.json');
    fs.writeFileSync(out, '{"old": "report"}');
    const r = memhint(['profile', path.join(dir, 'missing.py'), '--out', out]);
    assert.equal(r.code, 1);
    assert.equal(fs.existsSync(out), false);
  });

  it('rejects unknown codes and an empty --select (file or flags) instead of running no rule', () => {
    const dir = project({ 'train.py': LOOP, 'pyproject.toml': '[tool.memhint]\nignore = ["MH003", "MH0005"]\n' });
    let r = memhint(['lint', dir]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /pyproject\.toml: \[tool\.memhint\] ignore names unknown rule codes or names: MH0005/);
    assert.doesNotMatch(r.stdout, /All checks passed/);
    r = memhint(['lint', '--no-config', '--select', ',', dir]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--select names no rule/);
    fs.writeFileSync(path.join(dir, 'pyproject.toml'), '[tool.memhint]\ntarget-torch = 2.10\n');
    r = memhint(['lint', dir]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /target-torch must be a quoted string such as "2\.10"/);
  });

  it('writes SARIF URIs percent-encoded, resolving back to the files', () => {
    const names = ['my dir/a #1 %41 é.py', 'plain.py'];
    const dir = project(Object.fromEntries(names.map((n) => [n, LOOP])));
    const outside = project({ 'far away.py': LOOP });
    const r = memhint(['lint', '--format', 'sarif', '.', path.join(outside, 'far away.py')], dir);
    assert.equal(r.code, 1, r.stderr);
    type Loc = { uri: string; uriBaseId?: string };
    const sarif = JSON.parse(r.stdout) as { runs: Array<{ originalUriBaseIds: Record<string, { uri: string }>; results: Array<{ locations: Array<{ physicalLocation: { artifactLocation: Loc } }> }> }> };
    const run = sarif.runs[0];
    const base = run.originalUriBaseIds['%SRCROOT%'].uri;
    assert.ok(base.endsWith('/'), base);
    assert.equal(path.resolve(fileURLToPath(base)), fs.realpathSync(dir));
    const uris = new Set(run.results.map((x) => x.locations[0].physicalLocation.artifactLocation).map((l) => `${l.uriBaseId ?? ''} ${l.uri}`));
    assert.deepEqual([...uris].sort(), [
      ' ' + new URL(`file://${path.join(outside, 'far%20away.py')}`).href,
      '%SRCROOT% my%20dir/a%20%231%20%2541%20%C3%A9.py',
      '%SRCROOT% plain.py',
    ].sort());
    for (const entry of uris) {
      const [baseId, uri] = entry.split(' ');
      const file = fileURLToPath(baseId === '' ? uri : new URL(uri, base));
      assert.ok(fs.existsSync(file), file);
      assert.doesNotMatch(uri, /[ #é]|%(?![0-9A-F]{2})/);
    }
  });
});
