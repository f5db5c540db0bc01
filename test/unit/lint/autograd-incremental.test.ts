// MH001/MH002/MH004 keep per-statement caches across edits (see src/lint/analysis/unitcache.ts). After
// any sequence of edits, an incrementally updated document must get exactly the findings (ranges,
// messages, fixes) that a fresh parse of the same text gets.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { lintFile, defaultSettings } from '../../../src/lint';
import { findingsView as view, getLinter, getOracle, seededRandom as rng } from './harness';

const root = path.join(__dirname, '..', '..', '..', '..', 'test', 'fixtures');
const settings = { ...defaultSettings, select: ['MH001', 'MH002', 'MH004'] };

function files(): string[] {
  const out: string[] = [];
  for (const dir of ['lint/MH001', 'lint/MH002', 'lint/MH004', 'corpus']) {
    const full = path.join(root, dir);
    if (!fs.existsSync(full)) continue;
    for (const f of fs.readdirSync(full).sort()) if (f.endsWith('.py')) out.push(path.join(full, f));
  }
  return out;
}

// Edits that change file-wide facts (imports, eval markers, no_grad wrappers, models) as well as noise.
const SNIPPETS = ['\nmodel.eval()\n', '\nwith torch.no_grad():\n    pass\n', ' ', 'x', '\n', '\nimport torch as th\n', '\nnet = nn.Linear(2, 2)\n', '#', '(', '\n    losses.append(loss)\n'];

describe('MH001/MH002/MH004 incremental re-lint matches a fresh lint', () => {
  for (const file of files()) {
    it(path.relative(root, file), async () => {
      const linter = await getLinter();
      const oracle = await getOracle();
      let text = fs.readFileSync(file, 'utf8');
      const doc = linter.open(text);
      const random = rng(text.length);
      try {
        for (let step = 0; step < 12; step++) {
          const at = Math.floor(random() * text.length);
          const lineStart = text.lastIndexOf('\n', at) + 1;
          const insertAt = random() < 0.5 ? lineStart : at;
          const deleteLength = random() < 0.2 ? Math.min(3, text.length - insertAt) : 0;
          const snippet = SNIPPETS[Math.floor(random() * SNIPPETS.length)];
          doc.update([{ rangeOffset: insertAt, rangeLength: deleteLength, text: snippet }]);
          text = text.slice(0, insertAt) + snippet + text.slice(insertAt + deleteLength);
          const incremental = view(lintFile(doc.source, settings));
          const fresh = view(oracle.lintText(text, settings));
          assert.deepEqual(incremental, fresh, `after edit ${step + 1} at ${insertAt}`);
          // Undo half of the edits so the text stays close to realistic code.
          if (random() < 0.5) {
            doc.update([{ rangeOffset: insertAt, rangeLength: snippet.length, text: '' }]);
            text = text.slice(0, insertAt) + text.slice(insertAt + snippet.length);
            assert.deepEqual(view(lintFile(doc.source, settings)), view(oracle.lintText(text, settings)), `after undoing edit ${step + 1}`);
          }
        }
      } finally {
        doc.dispose();
      }
    });
  }
});

describe('a reused statement whose column changed', () => {
  // Found by the random edits above (positive_early_exit_paths.py, edit 8): while typing, a statement at
  // module level after broken code is reused with its text unchanged but one more space before it; the
  // wrap fix re-indents from the line start, so a cached fix was one character off with the old indent.
  it('gets fixes built from its new indentation, as a fresh lint does', async () => {
    const linter = await getLinter();
    const oracle = await getOracle();
    let text = "# One evaluation function, t(wo separate p\naths: a single prediction that returns early, then the evaluation\n# loop. Each path runs its own forward pass with autograd on, so each gets its finding.\nimport torch\nfrom torch import nn\n\ndevice = torch.device(\"cuda\")\nclassifier = nn.Linear(16, 4).to(device)\n\n\ndef test(test_loader, sample=None):\n    if sample is not None:\n        output = classifier(sample.to(device))  # expect: MH001\n        print(output.argmax(1).item())\n        re\nimport t\nh as th\nn\n    correct = 0\n    for x, y in test_loader:\n\n  output = classifier(x.to(device))  # expect: MH001\n        correct += (output.argmax(1) == y.to(device)).sum\n().item()\n    print(correct)\n";
    const doc = linter.open(text);
    try {
      const before = view(lintFile(doc.source, settings));
      assert.ok(before.some((f) => f.includes('Wrap this statement')), before.join('\n'));
      const at = text.indexOf('    for x, y in test_loader');
      doc.update([{ rangeOffset: at, rangeLength: 0, text: ' ' }]);
      text = text.slice(0, at) + ' ' + text.slice(at);
      assert.deepEqual(view(lintFile(doc.source, settings)), view(oracle.lintText(text, settings)));
    } finally {
      doc.dispose();
    }
  });
});

describe('MH001 fixes after the order of torch imports changes', () => {
  // Found by the random edits above (clean_type_tested_conversion.py, edit 10): a second `import torch as th`
  // inserted above `import torch` leaves the set of imports unchanged, but the fixes now spell `th.no_grad()`,
  // as a fresh lint does; the cached fix kept `torch.no_grad()`.
  it('spells no_grad with the first torch import, as a fresh lint does', async () => {
    const linter = await getLinter();
    const oracle = await getOracle();
    let text = ['import torch', '', '', 'def evaluate(model, loader):', '    outs = []', '    for x in loader:', '        outs.append(model(x).argmax(1))', '    return outs', ''].join('\n');
    const doc = linter.open(text);
    try {
      const edit = (at: number, insert: string) => {
        doc.update([{ rangeOffset: at, rangeLength: 0, text: insert }]);
        text = text.slice(0, at) + insert + text.slice(at);
        return view(lintFile(doc.source, settings));
      };
      const first = edit(text.indexOf('\n') + 1, 'import torch as th\n');
      assert.ok(first.some((f) => f.includes('@torch.no_grad()')), first.join('\n'));
      const second = edit(0, 'import torch as th\n');
      assert.ok(second.some((f) => f.includes('@th.no_grad()')), second.join('\n'));
      assert.deepEqual(second, view(oracle.lintText(text, settings)));
    } finally {
      doc.dispose();
    }
  });
});
