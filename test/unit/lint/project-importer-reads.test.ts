// The project index's importer search (importersOf: the .py files of a folder and the folders above it that
// mention a name) in a one-shot index (the CLI) reads each file once per run, not once per name asked, and
// gives the answers the editor's index gives (which reads and decodes each file per name): whole words only,
// as /\bname\b/ on the decoded text says. Issue #12: the re-reads were about a tenth of a lint of diffusers' src/.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ProjectIndex } from '../../../src/lint';
import { bytesContainWord } from '../../../src/lint/project/word-scan';
import * as regularFile from '../../../src/lint/regular-file';
import { getLinter } from './harness';

/** Files around `main.py`, with the names they mention as words or only inside other words. */
const FILES: Record<string, Buffer | string> = {
  'a_word.py': 'from main import f\nf()\n',
  'b_inside.py': 'fx = 1\n_f = 2\nf_ = 3\nf9 = 4\n',
  'c_accent.py': 'xé = 1\néf = 2\n',
  'd_edges.py': 'f',
  'e_invalid_utf8.py': Buffer.concat([Buffer.from('x = 1\n'), Buffer.from([0xff]), Buffer.from('g\n')]),
  'f_other.py': 'import torch\nnet = torch.nn.Linear(1, 1)\n',
  'g_attr.py': 'self.g.net(x)\n',
  'h_multi.py': 'ff = 1\nff_f = 2\n(f)\n',
};
const NAMES = ['f', 'g', 'net', 'ff', 'torch', 'x', 'nothing', 'é'];

describe('project index: importer search', () => {
  let tmp: string;
  beforeEach(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-importers-'));
    for (const [name, text] of Object.entries(FILES)) fs.writeFileSync(path.join(tmp, name), text);
    fs.writeFileSync(path.join(tmp, 'main.py'), 'def f():\n    return 1\n');
  });
  afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

  function importers(project: ProjectIndex, name: string): string[] {
    return project.importersOf(path.join(tmp, 'main.py'), name).map((m) => m.display);
  }

  it('finds a name in bytes exactly where the regex finds it in the decoded text', () => {
    const texts = [...Object.values(FILES), 'f', '', 'ff', ' f ', 'é f é', '\ufefff', 'f\u00a0', 'af f', 'fa fa_ f'];
    for (const t of texts) {
      const bytes = typeof t === 'string' ? Buffer.from(t, 'utf8') : t;
      for (const name of ['f', 'ff', 'g', 'x', 'fa', 'net']) {
        assert.equal(bytesContainWord(bytes, name), new RegExp(`\\b${name}\\b`).test(bytes.toString('utf8')), `${JSON.stringify(bytes.toString('utf8'))} / ${name}`);
      }
    }
  });

  it('a one-shot index answers as the editor index does', async () => {
    const linter = await getLinter();
    const editor = new ProjectIndex(linter.parser, { maxFileSize: 1 << 20, rootOf: () => tmp });
    const oneShot = new ProjectIndex(linter.parser, { maxFileSize: 1 << 20, rootOf: () => tmp, oneShot: true });
    try {
      for (const name of NAMES) assert.deepEqual(importers(oneShot, name), importers(editor, name), name);
      assert.deepEqual(importers(oneShot, 'f'), ['a_word.py', 'c_accent.py', 'd_edges.py', 'h_multi.py']);
      // e_invalid_utf8.py mentions g too, but a module that is not UTF-8 is not loaded.
      assert.deepEqual(importers(oneShot, 'g'), ['g_attr.py']);
    } finally {
      editor.dispose();
      oneShot.dispose();
    }
  });

  it('a one-shot index reads each file once for all the names asked, and again after invalidate()', async () => {
    const linter = await getLinter();
    const project = new ProjectIndex(linter.parser, { maxFileSize: 1 << 20, rootOf: () => tmp, oneShot: true });
    const read = regularFile.readRegularFile;
    const reads = new Map<string, number>();
    (regularFile as { readRegularFile: typeof read }).readRegularFile = (file, max) => {
      reads.set(path.basename(file), (reads.get(path.basename(file)) ?? 0) + 1);
      return read(file, max);
    };
    try {
      // 'nothing' is in no file: every file of the folder is read for it, and for each other name up to 8 hits.
      for (const name of NAMES) importers(project, name);
      const searched = Object.keys(FILES).length;
      // Module loads (importersOf parses the importers it returns) take the bytes already read.
      assert.ok([...reads.values()].every((n) => n === 1), `reads per file: ${JSON.stringify([...reads])}`);
      assert.equal(reads.size, searched);
      // A changed file is seen once the owner invalidates (the CLI does after --fix writes).
      fs.writeFileSync(path.join(tmp, 'f_other.py'), 'from main import f\n');
      assert.equal(importers(project, 'f').includes('f_other.py'), false, 'kept until invalidated');
      project.invalidate();
      assert.equal(importers(project, 'f').includes('f_other.py'), true);
    } finally {
      (regularFile as { readRegularFile: typeof read }).readRegularFile = read;
      project.dispose();
    }
  });
});
