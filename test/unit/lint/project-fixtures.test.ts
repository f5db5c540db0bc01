// Rules that follow the file's imports into other modules of the project: every file of each project under
// test/fixtures/lint-project/<case>/ is linted with a project index and must give exactly its `# expect:`
// annotations; linted alone (no project) the findings that depend on another file must not appear. Then the
// index's bounds (docs/reliability.md): FIFOs, files over the size limit, symlinks out of the root, modules
// that are not there.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { defaultSettings, ProjectIndex } from '../../../src/lint';
import { resolveImport } from '../../../src/lint/project/resolve';
import { expectations, getLinter, summarize } from './harness';

const root = path.join(__dirname, '..', '..', '..', '..', 'test', 'fixtures', 'lint-project');

function pythonFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? pythonFiles(path.join(dir, e.name)) : e.name.endsWith('.py') ? [path.join(dir, e.name)] : []));
}

describe('lint with the project: fixtures', () => {
  for (const dir of fs.existsSync(root) ? fs.readdirSync(root).filter((d) => fs.statSync(path.join(root, d)).isDirectory()).sort() : []) {
    it(dir, async () => {
      const linter = await getLinter();
      const project = new ProjectIndex(linter.parser, { maxFileSize: 1 << 20, rootOf: () => path.join(root, dir) });
      try {
        for (const file of pythonFiles(path.join(root, dir))) {
          const source = fs.readFileSync(file, 'utf8');
          const rel = path.relative(root, file);
          const withProject = linter.lintText(source, defaultSettings, project.contextFor(file));
          assert.deepEqual(summarize(source, withProject).sort(), expectations(source), rel);
          // What another file decides is not guessed without it: those findings (they say where they looked) go.
          const alone = summarize(source, linter.lintText(source, defaultSettings));
          const crossFile = summarize(source, withProject.filter((f) => / in [\w./-]+\.py:\d+/.test(f.message)));
          for (const k of crossFile) assert.ok(!alone.includes(k), `${rel}: ${k} found without the project`);
        }
      } finally {
        project.dispose();
      }
    });
  }

  it('a copy made in another file carries no fix; a copy in this file of a loader built elsewhere keeps its fix', async () => {
    const linter = await getLinter();
    const dir = path.join(root, 'imported_helper');
    const project = new ProjectIndex(linter.parser, { maxFileSize: 1 << 20, rootOf: () => dir });
    const file = path.join(dir, 'train.py');
    const findings = linter.lintText(fs.readFileSync(file, 'utf8'), defaultSettings, project.contextFor(file));
    assert.equal(findings.length, 2);
    for (const f of findings) {
      assert.equal(f.fix, null);
      assert.match(f.message, /\(in utils\.py:7\)/);
    }
    const factory = path.join(root, 'loader_factory', 'train.py');
    const other = new ProjectIndex(linter.parser, { maxFileSize: 1 << 20, rootOf: () => path.dirname(factory) });
    const found = linter.lintText(fs.readFileSync(factory, 'utf8'), defaultSettings, other.contextFor(factory));
    assert.match(found[0].message, /loader built in data\.py:6/);
    assert.notEqual(found[0].fix, null);
    project.dispose();
    other.dispose();
  });
});

describe('project index bounds', () => {
  let tmp: string;
  beforeEach(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-project-'));
  });
  afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

  async function resolveIn(dir: string, text: string, name: string, maxFileSize = 1 << 20): Promise<string | null> {
    const linter = await getLinter();
    const project = new ProjectIndex(linter.parser, { maxFileSize, rootOf: () => dir });
    const file = path.join(dir, 'main.py');
    fs.writeFileSync(file, text);
    const doc = linter.open(text, { project: project.contextFor(file) });
    try {
      const r = resolveImport(doc.source, name);
      return r === null ? null : `${r.kind} ${r.where}`;
    } finally {
      doc.dispose();
      project.dispose();
    }
  }

  it('resolves plain, aliased, dotted, relative and re-exported names', async () => {
    fs.mkdirSync(path.join(tmp, 'pkg'));
    fs.writeFileSync(path.join(tmp, 'pkg', '__init__.py'), 'from .core import make\n');
    fs.writeFileSync(path.join(tmp, 'pkg', 'core.py'), 'import torch\n\n\ndef make():\n    return 1\n\nLIMIT = 3\n');
    fs.writeFileSync(path.join(tmp, 'helpers.py'), 'class Net:\n    pass\n');
    const text = 'import pkg.core\nimport helpers as h\nfrom pkg import make as mk\nfrom .pkg.core import LIMIT\n';
    assert.equal(await resolveIn(tmp, text, 'mk'), 'function pkg/core.py:4');
    assert.equal(await resolveIn(tmp, text, 'pkg.core.make'), 'function pkg/core.py:4');
    assert.equal(await resolveIn(tmp, text, 'h.Net'), 'class helpers.py:1');
    assert.equal(await resolveIn(tmp, text, 'h'), 'module helpers.py');
    assert.equal(await resolveIn(tmp, text, 'LIMIT'), 'value pkg/core.py:7');
    // A library, a name the file binds itself, a member that is not there.
    assert.equal(await resolveIn(tmp, 'import torch\nfrom torch import nn\n', 'nn'), null);
    assert.equal(await resolveIn(tmp, text, 'h.Missing'), null);
  });

  it('does not read FIFOs, files over the size limit, or symlinks out of the project root', async function () {
    if (process.platform === 'win32') this.skip();
    const { execFileSync } = await import('node:child_process');
    execFileSync('mkfifo', [path.join(tmp, 'fifo.py')]);
    fs.writeFileSync(path.join(tmp, 'big.py'), `def f():\n    return 1\n${'#'.repeat(4096)}\n`);
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-outside-'));
    try {
      fs.writeFileSync(path.join(outside, 'secret.py'), 'def f():\n    return 1\n');
      fs.symlinkSync(path.join(outside, 'secret.py'), path.join(tmp, 'linked.py'));
      const started = Date.now();
      assert.equal(await resolveIn(tmp, 'from fifo import f\n', 'f'), null);
      assert.ok(Date.now() - started < 5000, 'a FIFO must not block');
      assert.equal(await resolveIn(tmp, 'from big import f\n', 'f', 1024), null);
      assert.equal(await resolveIn(tmp, 'from big import f\n', 'f'), 'function big.py:1');
      assert.equal(await resolveIn(tmp, 'from linked import f\n', 'f'), null);
      // Importers are looked for among regular files of the project only (the FIFO and the link out are skipped).
      fs.writeFileSync(path.join(tmp, 'caller.py'), 'from main import f\nf()\n');
      const linter = await getLinter();
      const project = new ProjectIndex(linter.parser, { maxFileSize: 1 << 20, rootOf: () => tmp });
      assert.deepEqual(project.importersOf(path.join(tmp, 'main.py'), 'f').map((m) => m.display).sort(), ['big.py', 'caller.py']);
      project.dispose();
    } finally {
      fs.rmSync(outside, { recursive: true, force: true });
    }
  });

  it('finds a module created after a lookup missed it once invalidate() is called, and not before', async () => {
    const linter = await getLinter();
    const project = new ProjectIndex(linter.parser, { maxFileSize: 1 << 20, rootOf: () => tmp });
    const file = path.join(tmp, 'main.py');
    const doc = linter.open('from dep import f\n', { project: project.contextFor(file) });
    try {
      assert.equal(resolveImport(doc.source, 'f'), null);
      fs.writeFileSync(path.join(tmp, 'dep.py'), 'def f():\n    return 1\n');
      // Lookups are remembered (per folder and per importing file) until the owner invalidates.
      assert.equal(resolveImport(doc.source, 'f'), null, 'a miss is remembered until invalidated');
      project.invalidate(path.join(tmp, 'dep.py'));
      assert.equal(resolveImport(doc.source, 'f')?.where, 'dep.py:1');
      // The same module from another file of the folder, and from a path given relative to the working directory.
      assert.equal(project.module(path.join(tmp, 'other.py'), 'dep')?.display, 'dep.py');
      assert.equal(project.module(path.relative(process.cwd(), file), 'dep')?.display, 'dep.py');
    } finally {
      doc.dispose();
      project.dispose();
    }
  });

  it('sees a module change after invalidate(), and its stamp moves', async () => {
    const linter = await getLinter();
    const project = new ProjectIndex(linter.parser, { maxFileSize: 1 << 20, rootOf: () => tmp });
    const dep = path.join(tmp, 'dep.py');
    fs.writeFileSync(dep, 'def f():\n    return 1\n');
    const file = path.join(tmp, 'main.py');
    const doc = linter.open('from dep import f\n', { project: project.contextFor(file) });
    try {
      assert.equal(resolveImport(doc.source, 'f')?.where, 'dep.py:1');
      fs.writeFileSync(dep, '\n\ndef f():\n    return 1\n');
      assert.equal(resolveImport(doc.source, 'f')?.where, 'dep.py:1', 'read once until invalidated');
      const before = project.stamp;
      project.invalidate(dep);
      assert.notEqual(project.stamp, before);
      assert.equal(resolveImport(doc.source, 'f')?.where, 'dep.py:3');
    } finally {
      doc.dispose();
      project.dispose();
    }
  });
});
