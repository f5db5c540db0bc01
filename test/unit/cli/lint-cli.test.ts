// The CLI as CI uses it: real process, real files, exit codes and output formats.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { LOOP, memhint, project, repo } from './cli-fixture';


describe('memhint lint (CLI)', () => {
  before(function () {
    if (!fs.existsSync(path.join(repo, 'dist', 'cli.js'))) this.skip(); // `npm test` builds it first
  });

  it('exits 0 on clean code and 1 with findings', () => {
    const dir = project({ 'clean.py': 'import torch\nx = torch.zeros(3)\n', 'bad/train.py': LOOP });
    assert.equal(memhint(['lint', path.join(dir, 'clean.py')]).code, 0);
    const r = memhint(['lint', dir]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stdout, /train\.py:9:9: MH005 \[empty-cache-in-loop\]/);
    assert.match(r.stdout, /train\.py:5:\d+: MH003 \[zero-grad-not-none\]/);
  });

  it('targets the torch a requirements pin allows, says which target it used and where it came from', () => {
    const amp = 'import torch\nscaler = torch.cuda.amp.GradScaler()\n';
    const dir = project({ '.git/HEAD': 'ref: refs/heads/main\n', 'requirements.txt': 'numpy\ntorch>=1.13,<3\n', 'src/train.py': amp });
    const file = path.join(dir, 'src', 'train.py');
    // torch.amp.GradScaler does not exist on 1.13: no MH008 and no fix to it.
    let r = memhint(['lint', file]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /Target torch: 1\.13 \(`torch>=1\.13` in .*requirements\.txt\)\./);
    r = memhint(['lint', '--target-torch', '2.4', file]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /MH008/);
    assert.match(r.stdout, /Target torch: 2\.4 \(--target-torch\)\./);
    fs.writeFileSync(path.join(dir, 'requirements.txt'), 'numpy\n');
    r = memhint(['lint', file]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /Target torch: a current torch 2\.x \(default;/);
  });

  it('prints JSON with 1-based positions, code, name and fix', () => {
    const dir = project({ 'train.py': LOOP });
    const r = memhint(['lint', '--format', 'json', dir]);
    assert.equal(r.code, 1, r.stderr);
    const findings = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    const mh005 = findings.find((f) => f.code === 'MH005');
    assert.ok(mh005, r.stdout);
    assert.equal(mh005.filename, path.join(dir, 'train.py'));
    assert.deepEqual([mh005.line, mh005.column, mh005.endLine, mh005.endColumn], [9, 9, 9, 33]);
    assert.equal(mh005.name, 'empty-cache-in-loop');
    assert.equal(typeof mh005.message, 'string');
    assert.ok(['error', 'warning', 'info'].includes(mh005.severity as string));
    for (const f of findings) for (const k of ['filename', 'line', 'column', 'endLine', 'endColumn', 'code', 'name', 'severity', 'message', 'fix']) assert.ok(k in f, k);
  });

  it('writes SARIF 2.1.0 with rules and results', () => {
    const dir = project({ 'train.py': LOOP });
    const r = memhint(['lint', '--format', 'sarif', 'train.py'], dir);
    assert.equal(r.code, 1, r.stderr);
    const sarif = JSON.parse(r.stdout) as { version: string; runs: Array<{ tool: { driver: { rules: Array<{ id: string }> } }; results: Array<{ ruleId: string; locations: Array<{ physicalLocation: { artifactLocation: { uri: string }; region: { startLine: number } } }> }> }> };
    assert.equal(sarif.version, '2.1.0');
    assert.ok(sarif.runs[0].tool.driver.rules.some((x) => x.id === 'MH009'));
    const res = sarif.runs[0].results.find((x) => x.ruleId === 'MH005')!;
    assert.equal(res.locations[0].physicalLocation.artifactLocation.uri, 'train.py');
    assert.equal(res.locations[0].physicalLocation.region.startLine, 9);
  });

  it('--fix applies safe fixes in place and reports what is left', () => {
    const dir = project({ 'train.py': LOOP });
    const r = memhint(['lint', '--fix', '--select', 'MH003', dir]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const fixed = fs.readFileSync(path.join(dir, 'train.py'), 'utf8');
    assert.match(fixed, /opt\.zero_grad\(set_to_none=True\)/);
    assert.equal(memhint(['lint', '--select', 'MH003', dir]).code, 0);
  });

  it('honours --select, --ignore and [tool.memhint] with per-file ignores', () => {
    const dir = project({
      'pyproject.toml': '[tool.memhint]\nignore = ["MH003"]\n[tool.memhint.per-file-ignores]\n"scripts/*.py" = ["MH005"]\n',
      'train.py': LOOP,
      'scripts/run.py': LOOP,
    });
    const codes = (args: string[]): string[] => (JSON.parse(memhint(['lint', '--format', 'json', ...args], dir).stdout) as Array<{ code: string; filename: string }>).map((f) => `${path.basename(f.filename)}:${f.code}`).sort();
    assert.deepEqual(codes(['train.py', 'scripts/run.py']), ['train.py:MH005']);
    assert.deepEqual(codes(['--no-config', '--select', 'MH003', 'train.py']), ['train.py:MH003']);
    assert.deepEqual(codes(['--ignore', 'empty-cache-in-loop', 'train.py']), []);
  });

  it('reports unreadable and non-UTF-8 files, lints the rest, exits 2', () => {
    const dir = project({ 'a.py': LOOP, 'b.py': Buffer.from([0x78, 0x20, 0x3d, 0x20, 0xff, 0xfe, 0x0a]) });
    const r = memhint(['lint', '--format', 'json', dir, path.join(dir, 'missing.py')]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /b\.py: not valid UTF-8/);
    assert.match(r.stderr, /missing\.py: no such file or directory/);
    assert.ok((JSON.parse(r.stdout) as unknown[]).length > 0);
  });

  it('rejects bad usage with one line and exit 2', () => {
    for (const args of [['lint'], ['lint', '--format', 'xml', '.'], ['lint', '--select', 'MH999', '.'], ['lint', '--bogus', '.'], ['frobnicate'], ['lint', '--target-torch', 'new', '.']]) {
      const r = memhint(args);
      assert.equal(r.code, 2, args.join(' '));
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, /^memhint: /);
    }
  });
});
