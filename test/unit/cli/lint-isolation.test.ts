// runLintCommand in-process with a linter that fails or races on one file: the seam stands for a
// parser/rule bug and for an editor saving the file while `--fix` runs.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runLintCommand } from '../../../src/cli/lint-command';
import { allRules, defaultSettings, lint, Linter } from '../../../src/lint';
import type { Rule } from '../../../src/lint/types';

const LOOP = 'import torch\n\ndef train(model, loader, opt):\n    for x, y in loader:\n        opt.zero_grad(set_to_none=False)\n        loss = model(x).sum()\n        loss.backward()\n        opt.step()\n';

function project(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-iso-'));
  for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), content);
  return dir;
}

/** A real linter whose lint (what the CLI calls) runs `before` first (which may throw or touch the disk). */
async function linterWith(before: (text: string) => void): Promise<() => Promise<Linter>> {
  const real = await Linter.create();
  const wrapped = Object.create(real) as Linter;
  wrapped.lint = (text, settings) => {
    before(text);
    return real.lint(text, settings);
  };
  return () => Promise.resolve(wrapped);
}

async function run(argv: string[], createLinter: () => Promise<Linter>): Promise<{ code: number; stderr: string }> {
  let stderr = '';
  const original = Object.getOwnPropertyDescriptor(process.stderr, 'write');
  Object.defineProperty(process.stderr, 'write', {
    configurable: true,
    value: (chunk: string | Uint8Array) => {
      stderr += String(chunk);
      return true;
    },
  });
  try {
    return { code: await runLintCommand(argv, createLinter), stderr };
  } finally {
    if (original) Object.defineProperty(process.stderr, 'write', original);
    else delete (process.stderr as { write?: unknown }).write;
  }
}

/** A rule that throws on every file that has `# RULE-BOOM` (a rule bug on some construct). */
const boom: Rule = {
  code: 'MH999',
  name: 'boom',
  severity: 'warning',
  summary: 'throws (test)',
  check(file) {
    if (file.text.includes('# RULE-BOOM')) throw new TypeError('rule bug\n    at check (boom.ts:1)');
    return [];
  },
};

/** A real linter that also runs `boom` after the real rules. */
async function linterWithBoom(): Promise<() => Promise<Linter>> {
  const real = await Linter.create();
  const wrapped = Object.create(real) as Linter;
  wrapped.lint = (text, settings = defaultSettings) => {
    const doc = real.open(text);
    try {
      // The CLI knows no MH999 (--select rejects it): it runs beside whatever the user selected.
      const select = settings.select === null ? null : [...settings.select, boom.code];
      return lint(doc.source, { ...settings, select }, [...allRules, boom]);
    } finally {
      doc.dispose();
    }
  };
  return () => Promise.resolve(wrapped);
}

describe('memhint lint: one file failing loses nothing else', () => {
  for (const fix of [false, true]) {
    it(`a rule that throws: the other rules' findings are reported, the failure once with its code, exit 2${fix ? ' (--fix)' : ''}`, async () => {
      const dir = project({ 'a.py': `${LOOP}# RULE-BOOM\n`, 'b.py': LOOP });
      const out = path.join(dir, 'report.json');
      const r = await run([...(fix ? ['--fix'] : []), '--format', 'json', '--select', 'MH003', '--output', out, dir], await linterWithBoom());
      assert.equal(r.code, 2);
      const lines = r.stderr.split('\n').filter((l) => l.includes('internal error'));
      assert.deepEqual(lines.map((l) => l.replace(dir + path.sep, '')), ["memhint: a.py: internal error in MH999 (boom): rule bug; its findings are left out, the other rules' are kept"]);
      const report = JSON.parse(fs.readFileSync(out, 'utf8')) as Array<{ filename: string; code: string }>;
      const found = report.map((f) => `${path.basename(f.filename)}:${f.code}`).sort();
      if (fix) {
        // MH003 was fixed in the file whose MH999 threw as in the other; nothing is left to report.
        assert.deepEqual(found, []);
        for (const name of ['a.py', 'b.py']) assert.match(fs.readFileSync(path.join(dir, name), 'utf8'), /set_to_none=True/);
      } else assert.deepEqual(found, ['a.py:MH003', 'b.py:MH003']);
    });
  }

  it('reports an internal error for that file, keeps the others\' findings, exits 2', async () => {
    const dir = project({ 'a.py': LOOP, 'b.py': `${LOOP}# BOOM\n`, 'c.py': LOOP });
    const out = path.join(dir, 'report.json');
    const create = await linterWith((text) => {
      if (text.includes('# BOOM')) throw new RangeError('Maximum call stack size exceeded');
    });
    const r = await run(['--format', 'json', '--select', 'MH003', '--output', out, dir], create);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /b\.py: internal error: Maximum call stack size exceeded/);
    const files = (JSON.parse(fs.readFileSync(out, 'utf8')) as Array<{ filename: string }>).map((f) => path.basename(f.filename)).sort();
    assert.deepEqual(files, ['a.py', 'c.py']);
  });

  it('--fix does not overwrite an edit saved while the file was being fixed', async () => {
    const dir = project({ 'a.py': LOOP, 'b.py': LOOP });
    const edited = `${LOOP}# saved from the editor meanwhile\n`;
    let raced = false;
    const create = await linterWith(() => {
      if (!raced) {
        raced = true;
        fs.writeFileSync(path.join(dir, 'a.py'), edited);
      }
    });
    const r = await run(['--fix', '--select', 'MH003', '--output', path.join(dir, 'report.txt'), path.join(dir, 'a.py'), path.join(dir, 'b.py')], create);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /a\.py: changed on disk, not fixed/);
    assert.equal(fs.readFileSync(path.join(dir, 'a.py'), 'utf8'), edited);
    assert.match(fs.readFileSync(path.join(dir, 'b.py'), 'utf8'), /set_to_none=True/);
  });
});
