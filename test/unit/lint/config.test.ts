import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ConfigError, findProjectConfig, isExcluded, parseProjectConfig, parseSize, settingsForFile } from '../../../src/lint/config';
import { compileGlob } from '../../../src/lint/glob';
import { parseNoqa } from '../../../src/lint/noqa';
import { lint } from './harness';

describe('pyproject [tool.memhint]', () => {
  it('reads select, ignore, target-torch, per-file-ignores and exclude', () => {
    const cfg = parseProjectConfig(
      `[project]\nname = "x"\n[tool.memhint]\nselect = ["MH00"]\nignore = ["MH006"]\ntarget-torch = "1.13"\nexclude = ["legacy/**"]\n[tool.memhint.per-file-ignores]\n"tests/*.py" = ["MH001"]\n`,
      '/proj/pyproject.toml',
    );
    assert.ok(cfg);
    assert.deepEqual(cfg.select, ['MH00']);
    assert.deepEqual(cfg.targetTorch, { major: 1, minor: 13 });
    const s = settingsForFile(cfg, '/proj/tests/test_a.py');
    assert.deepEqual(s.ignore, ['MH006', 'MH001']);
    assert.deepEqual(settingsForFile(cfg, '/proj/src/a.py').ignore, ['MH006']);
    assert.equal(isExcluded(cfg, '/proj/legacy/old/train.py'), true);
    assert.equal(isExcluded(cfg, '/proj/src/train.py'), false);
  });

  it('lets overrides (CLI flags) win over the file', () => {
    const cfg = parseProjectConfig('[tool.memhint]\nselect = ["MH001"]\ntarget-torch = "1.13"\n', '/p/pyproject.toml')!;
    const s = settingsForFile(cfg, '/p/a.py', { select: ['MH003'], targetTorch: { major: 2, minor: 1 }, ignore: ['MH004'] });
    assert.deepEqual(s.select, ['MH003']);
    assert.deepEqual(s.targetTorch, { major: 2, minor: 1 });
    assert.deepEqual(s.ignore, ['MH004']);
  });

  it('returns null without a [tool.memhint] table and rejects bad values', () => {
    assert.equal(parseProjectConfig('[tool.ruff]\nline-length = 100\n', 'p'), null);
    assert.throws(() => parseProjectConfig('[tool.memhint]\nselect = "MH001"\n', 'p'), ConfigError);
    assert.throws(() => parseProjectConfig('[tool.memhint]\ntarget-torch = "latest"\n', 'p'), ConfigError);
    assert.throws(() => parseProjectConfig('[tool.memhint\n', 'p'), /invalid TOML/);
  });

  it('finds the nearest pyproject with a memhint table walking up', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-cfg-'));
    fs.mkdirSync(path.join(dir, 'pkg', 'sub'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'pyproject.toml'), '[tool.memhint]\nignore = ["MH005"]\n');
    fs.writeFileSync(path.join(dir, 'pkg', 'pyproject.toml'), '[tool.black]\n'); // no memhint table: skipped
    const cfg = findProjectConfig(path.join(dir, 'pkg', 'sub', 'train.py'));
    assert.equal(cfg.path, path.join(dir, 'pyproject.toml'));
    assert.deepEqual(cfg.ignore, ['MH005']);
  });

  it('names unknown codes in select, ignore, extend-select and per-file-ignores instead of running no rule', () => {
    for (const [toml, key] of [
      ['select = ["MH001", "MH0001"]', 'select'],
      ['ignore = ["nonsense"]', 'ignore'],
      ['select = ["MH001"]\nextend-select = ["XX1"]', 'extend-select'],
      ['[tool.memhint.per-file-ignores]\n"tests/*" = ["MH09"]', 'per-file-ignores'],
    ]) {
      assert.throws(() => parseProjectConfig(`[tool.memhint]\n${toml}\n`, 'p'), (e: Error) => e instanceof ConfigError && e.message.includes(key) && /unknown rule codes or names: \w+/.test(e.message), toml);
    }
    assert.throws(() => parseProjectConfig('[tool.memhint]\nselect = []\n', 'p'), /select is empty, so no rule would run/);
    assert.ok(parseProjectConfig('[tool.memhint]\nselect = ["MH", "retained-graph", "all"]\n', 'p'));
  });

  it('reads target-torch "2.10" as 2.10 and refuses a TOML number, which would read as 2.1', () => {
    assert.deepEqual(parseProjectConfig('[tool.memhint]\ntarget-torch = "2.10"\n', 'p')!.targetTorch, { major: 2, minor: 10 });
    assert.throws(() => parseProjectConfig('[tool.memhint]\ntarget-torch = 2.10\n', 'p'), /target-torch must be a quoted string such as "2\.10"/);
    assert.throws(() => parseProjectConfig('[tool.memhint]\ntarget-torch = 2\n', 'p'), ConfigError);
  });

  it('reads max-file-size as bytes or with binary units', () => {
    assert.equal(parseSize('16MiB'), 16 * 1024 * 1024);
    assert.equal(parseSize('500 KB'), 500 * 1024);
    assert.equal(parseSize('1048576'), 1048576);
    assert.equal(parseSize('0'), 0);
    assert.equal(parseSize('lots'), null);
    assert.equal(parseSize('-1'), null);
    assert.equal(parseProjectConfig('[tool.memhint]\nmax-file-size = "2MiB"\n', 'p')!.maxFileSize, 2 * 1024 * 1024);
    assert.equal(parseProjectConfig('[tool.memhint]\nmax-file-size = 4096\n', 'p')!.maxFileSize, 4096);
    assert.throws(() => parseProjectConfig('[tool.memhint]\nmax-file-size = "big"\n', 'p'), /max-file-size must be a size/);
  });

  it('skips a pyproject.toml that is a FIFO, a directory or /dev/zero, says so, and walks on up', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-cfg-'));
    fs.writeFileSync(path.join(dir, 'pyproject.toml'), '[tool.memhint]\nignore = ["MH005"]\n');
    fs.mkdirSync(path.join(dir, 'a', 'b', 'c', 'pyproject.toml'), { recursive: true });
    execFileSync('mkfifo', [path.join(dir, 'a', 'b', 'pyproject.toml')]);
    fs.symlinkSync('/dev/zero', path.join(dir, 'a', 'pyproject.toml'));
    const skipped: string[] = [];
    const cfg = findProjectConfig(path.join(dir, 'a', 'b', 'c', 'train.py'), (m) => skipped.push(m));
    assert.equal(cfg.path, path.join(dir, 'pyproject.toml'));
    assert.deepEqual(skipped, [
      `${path.join(dir, 'a', 'b', 'c', 'pyproject.toml')}: a directory, not a regular file; skipped`,
      `${path.join(dir, 'a', 'b', 'pyproject.toml')}: a FIFO, not a regular file; skipped`,
      `${path.join(dir, 'a', 'pyproject.toml')}: a character device, not a regular file; skipped`,
    ]);
  });

  it('globs behave like gitignore patterns', () => {
    assert.ok(compileGlob('tests/*.py').test('tests/a.py'));
    assert.ok(!compileGlob('tests/*.py').test('tests/x/a.py'));
    assert.ok(compileGlob('**/test_*.py').test('a/b/test_x.py'));
    assert.ok(compileGlob('**/test_*.py').test('test_x.py'));
    assert.ok(compileGlob('scripts').test('scripts/run.py'));
    assert.ok(compileGlob('*.py').test('deep/down/file.py'));
  });
});

describe('noqa', () => {
  it('parses bare and coded directives', () => {
    assert.equal(parseNoqa('# noqa'), null);
    assert.deepEqual(parseNoqa('# noqa: MH001,mh002'), ['MH001', 'MH002']);
    assert.deepEqual(parseNoqa('# NOQA:MH003 MH004'), ['MH003', 'MH004']);
    assert.equal(parseNoqa('# just a comment'), undefined);
  });

  it('suppresses only the named codes on that line, and ignores noqa inside strings', async () => {
    const src = [
      'import torch',
      'for step, batch in enumerate(loader):',
      '    loss = model(batch).sum()',
      '    loss.backward()',
      '    torch.cuda.empty_cache()  # noqa: MH005',
      '    torch.cuda.empty_cache()  # noqa: MH001',
      '    torch.cuda.empty_cache(); s = "# noqa"',
      '    torch.cuda.empty_cache()  # noqa',
      '',
    ].join('\n');
    const lines = (await lint(src, { select: ['MH005'] })).map((f) => src.slice(0, f.start).split('\n').length);
    assert.deepEqual(lines, [6, 7]);
  });
});
