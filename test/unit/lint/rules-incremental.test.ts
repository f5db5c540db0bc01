// MH003, MH007 and MH009 keep per-statement (per-loop) results across edits, and callsNamed and the
// value lookups keep per-name merges across versions (src/lint/analysis/unitcache.ts). An edit in one
// statement that changes a finding in another (an import, a DataLoader's pin_memory, a local module
// class, a custom zero_grad) must be seen: after every edit, an incrementally updated document gets
// exactly the findings (order, ranges, messages, fixes) that a fresh parse of the same text gets.
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { lintFile, defaultSettings, type LintSettings } from '../../../src/lint';
import { findingsView as view, getLinter, getOracle, seededRandom as rng } from './harness';
import { SPLIT_FUNCTION_LINES } from '../../../src/lint/analysis/unitcache';

const root = path.join(__dirname, '..', '..', '..', '..', 'test', 'fixtures');

const SETTINGS: LintSettings[] = [defaultSettings, { ...defaultSettings, targetTorch: { major: 1, minor: 13 } }];

/** Applies each edit (replace the first `from` by `to`) in turn, comparing after each with a fresh lint. */
async function checkEdits(text: string, edits: readonly (readonly [string, string])[]): Promise<void> {
  const linter = await getLinter();
  const oracle = await getOracle();
  const doc = linter.open(text);
  try {
    for (const settings of SETTINGS) assert.deepEqual(view(lintFile(doc.source, settings)), view(oracle.lintText(text, settings)), 'before any edit');
    let changed = 0;
    for (const [from, to] of edits) {
      const at = text.indexOf(from);
      assert.ok(at >= 0, `no ${JSON.stringify(from)} to edit`);
      doc.update([{ rangeOffset: at, rangeLength: from.length, text: to }]);
      const before = view(oracle.lintText(text, defaultSettings)).length;
      text = text.slice(0, at) + to + text.slice(at + from.length);
      for (const settings of SETTINGS) assert.deepEqual(view(lintFile(doc.source, settings)), view(oracle.lintText(text, settings)), `after ${JSON.stringify(from)} -> ${JSON.stringify(to)}`);
      if (view(oracle.lintText(text, defaultSettings)).length !== before) changed++;
    }
    assert.ok(changed > 0, 'the edits should change some finding');
  } finally {
    doc.dispose();
  }
}

const LOADER = `import torch
from torch.utils.data import DataLoader

train_loader = DataLoader(dataset, batch_size=32, pin_memory=True)


def train(model, optimizer, device):
    for x, y in train_loader:
        x = x.to(device)
        y = y.to("cuda")
        loss = model(x, y)
        loss.backward()
        optimizer.step()


def other():
    return 1
`;

const MODELS = `import torch
import torch.nn as nn


class Net(nn.Module):
    pass


def train(loader):
    for batch in loader:
        model = Net()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = model(batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        for p in model.parameters():
            p.grad = torch.zeros_like(p)
`;

/** One top-level class: its methods' parts are kept per method node (walkSplittingFunctions). */
const CLASS = `import torch
import torch.nn as nn


class Trainer(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.Linear(4, 4)
        self.losses = []

    def evaluate(self, loader):
        self.model.eval()
        total = 0
        for x in loader:
            out = self.model(x)
            total += out.sum()
        return total

    def record(self, loss):
        self.losses.append(loss)

    def step(self, loader, optimizer):
        for x in loader:
            loss = self.model(x).sum()
            self.total_loss += loss
            self.record(loss)
            loss.backward()
            optimizer.step()
`;

describe('per-statement rule caches follow edits elsewhere in the file', () => {
  it('per-method parts of one class: edits to its header, a decorator, and other methods', async () => {
    await checkEdits(CLASS, [
      ['class Trainer(nn.Module):', 'class Trainer(object):'],
      ['class Trainer(object):', 'class Trainer(nn.Module):'],
      ['class Trainer(nn.Module):', 'class Runner(nn.Module):'],
      ['    def evaluate(', '    @torch.no_grad()\n    def evaluate('],
      ['    @torch.no_grad()\n', ''],
      ['self.losses.append(loss)', 'self.losses.append(loss.item())'],
      ['        self.model.eval()\n', '        torch.set_grad_enabled(False)\n        self.model.eval()\n'],
      ['self.total_loss += loss', 'self.total_loss += loss.item()'],
      ['loss.backward()', 'loss.sum()'],
      ['import torch.nn as nn\n', ''],
    ]);
  });

  it('MH009: a loader defined in another statement (pin_memory, the name, the import)', async () => {
    await checkEdits(LOADER, [
      ['pin_memory=True', 'pin_memory=False'],
      ['pin_memory=False', 'num_workers=2'],
      ['num_workers=2', 'pin_memory=True'],
      ['train_loader = DataLoader', 'val_loader = DataLoader'],
      ['val_loader = DataLoader', 'train_loader = DataLoader'],
      ['from torch.utils.data import DataLoader', 'from mylib import DataLoader'],
      ['from mylib import DataLoader', 'from torch.utils.data import DataLoader'],
      ['def other():\n    return 1\n', 'def other():\n    return 1\n\n\ntrain_loader = DataLoader(dataset, batch_size=32)\n'],
    ]);
  });

  it('MH009: a loader handed to a parameter, and a second definition of the same name', async () => {
    const text = `${LOADER.replace('for x, y in train_loader:', 'for x, y in loader:').replace('def train(model, optimizer, device):', 'def train(model, optimizer, device, loader):')}\ntrain(net, opt, dev, train_loader)\n`;
    await checkEdits(text, [
      ['train(net, opt, dev, train_loader)', 'train(net, opt, dev, other_loader)'],
      ['train(net, opt, dev, other_loader)', 'train(net, opt, dev, train_loader)'],
      ['pin_memory=True', 'pin_memory=False'],
    ]);
  });

  it('MH009: a loop whose copies are all in helpers (another method gains, loses or renames its copy)', async () => {
    // The loop bodies copy nothing themselves: whether they reach a helper that copies is kept per body
    // across versions, keyed by the file's helper graph, so edits in other methods must reach it.
    const text = `import torch
from torch.utils.data import DataLoader


def move(x, device):
    return x.to(device)


class Trainer:
    def __init__(self, dataset):
        self.loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)

    def _run_batch(self, source, targets):
        source = source.cuda(0)
        loss = self.model(source).sum()
        loss.backward()

    def fit(self):
        for source, targets in self.loader:
            self._run_batch(source, targets)

    def fit_moved(self):
        for source, targets in self.loader:
            self.prepare(source, targets)

    def prepare(self, source, targets):
        return source


def train(model, dataset, device):
    loader = DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)
    for batch in loader:
        y = model(step(batch, device)).sum()
        y.backward()


def step(batch, device):
    return batch
`;
    await checkEdits(text, [
      ['source = source.cuda(0)', 'source = source'],
      ['source = source\n', 'source = source.cuda(0)\n'],
      ['def prepare(self, source, targets):\n        return source', 'def prepare(self, source, targets):\n        return source.to(0)'],
      ['def _run_batch(', 'def _run_batch2('],
      ['def _run_batch2(', 'def _run_batch('],
      ['def step(batch, device):\n    return batch', 'def step(batch, device):\n    return move(batch, device)'],
      ['def move(x, device):\n    return x.to(device)', 'def move(x, device):\n    return x'],
      ['def move(x, device):\n    return x\n', 'def move(x, device):\n    return x.cuda()\n'],
      ['class Trainer:', 'class Trainer:\n    def prepare(self, source, targets):\n        return source.cuda()\n'],
    ]);
  });

  it('MH001: a forward pass reached through a helper that another edit changes (per-scope helper texts)', async () => {
    // MH001 keeps each scope's findings while the helpers it reaches are unchanged: an edit to a helper
    // (its receiver, no_grad around its forward, a backward in it) must re-check the scopes calling it.
    const text = fs.readFileSync(path.join(root, 'lint', 'MH001', 'positive_forward_through_helper.py'), 'utf8');
    await checkEdits(text, [
      ['logits = self.model(x.to(device))', 'logits = self.model.encoder(x.to(device))'],
      ['def forward_batch(model, x):\n    return model(x.to(device))', 'def forward_batch(model, x):\n    with torch.no_grad():\n        return model(x.to(device))'],
      ['    out = model(x)\n    log_batch(out)', '    out = model(x)\n    out.sum().backward()\n    log_batch(out)'],
      ['    out = model(x)\n    out.sum().backward()\n', '    out = model(x)\n'],
      ['def forward_batch(model, x):', 'def forward_batch2(model, x):'],
      ['    log_batch(out)\n', '    print(out)\n'],
      ['    print(out)\n', '    log_batch(out)\n'],
      ['log_batch(out)', 'log_batch(x)'],
    ]);
  });

  it('MH002: which position of a tuple returned by a function of the file carries history (#13)', async () => {
    const text = `import torch.nn as nn

criterion = nn.CrossEntropyLoss()


def step(model, optimizer, x, y):
    out = model(x)
    loss = criterion(out, y)
    loss.backward()
    optimizer.step()
    return loss, out


def train(model, optimizer, loader):
    total = 0.0
    for x, y in loader:
        loss, out = step(model, optimizer, x, y)
        total += loss
    return total
`;
    await checkEdits(text, [
      ['return loss, out', 'return loss.item(), out'],
      ['return loss.item(), out', 'return out, loss'],
      ['return out, loss', 'return loss, out'],
      ['loss, out = step(', 'out, loss = step('],
      ['out, loss = step(', 'loss = step('],
      ['loss = step(model, optimizer, x, y)', 'loss = step(model, optimizer, x, y)[0]'],
      ['[0]', '[1]'],
      ['loss = step(model, optimizer, x, y)[1]', 'loss, *rest = step(model, optimizer, x, y)'],
      ['loss, *rest = step(', 'r = step('],
      ['total += loss', 'total += r[0]'],
      ['return loss, out', 'return loss.detach(), out'],
    ]);
  });

  it('MH007 and MH003: local module classes, imports and a custom zero_grad elsewhere', async () => {
    await checkEdits(MODELS, [
      ['class Net(nn.Module):', 'class Net(object):'],
      ['class Net(object):', 'class Net(nn.Module):'],
      ['import torch.nn as nn', 'import mylib as nn'],
      ['import mylib as nn', 'import torch.nn as nn'],
      ['import torch\n', 'import torch\nimport torch as T\n'],
      ['class Net(nn.Module):\n    pass\n', 'class Net(nn.Module):\n    def zero_grad(self):\n        pass\n'],
      ['    def zero_grad(self):\n        pass\n', '    pass\n'],
      ['optimizer.zero_grad()', 'optimizer.zero_grad(set_to_none=False)'],
    ]);
  });

  it('MH010 and MH011: which network an optimizer steps, and a freeze, in other statements', async () => {
    const dir = path.join(root, 'lint');
    await checkEdits(fs.readFileSync(path.join(dir, 'MH010', 'positive_dcgan_no_detach.py'), 'utf8'), [
      ['optimizerD = optim.Adam(netD.parameters(), lr=2e-4)', 'optimizerD = optim.Adam(netG.parameters(), lr=2e-4)'],
      ['optimizerD = optim.Adam(netG.parameters(), lr=2e-4)', 'optimizerD = optim.Adam(netD.parameters(), lr=2e-4)'],
      ['class Generator(nn.Module):', 'class Generator(object):'],
    ]);
    await checkEdits(fs.readFileSync(path.join(dir, 'MH011', 'positive_target_teacher_vgg.py'), 'utf8'), [
      ['target_net.load_state_dict(policy_net.state_dict())\n', 'target_net.load_state_dict(policy_net.state_dict())\ntarget_net.requires_grad_(False)\n'],
      ['optimizer = optim.AdamW(policy_net.parameters()', 'optimizer = optim.AdamW(target_net.parameters()'],
    ]);
  });

  it('MH002: a loop emptying a module attribute, and a freeze, in other statements than the stored value', async () => {
    const dir = path.join(root, 'lint', 'MH002');
    await checkEdits(fs.readFileSync(path.join(dir, 'clean_attribute_emptied_by_loop.py'), 'utf8'), [
      ['        model.attn_maps.clear()\n', '        if loss > 0:\n            model.attn_maps.clear()\n'],
      ['        model.aux_losses = []\n', ''],
      ['        if loss > 0:\n            model.attn_maps.clear()\n', '        model.attn_maps.clear()\n'],
    ]);
    await checkEdits(fs.readFileSync(path.join(dir, 'clean_frozen_network_outputs.py'), 'utf8'), [
      ['    teacher.requires_grad_(False)\n', '    teacher.requires_grad_(True)\n'],
      ['    freeze(backbone)\n', '    print(backbone)\n'],
      ['    teacher.requires_grad_(True)\n', '    teacher.requires_grad_(False)\n'],
    ]);
  });

  it('MH002: grad state around a nested step function, set in the enclosing function (#12)', async () => {
    // The nested functions are reused while the enclosing function's other statements, its decorators
    // and its name change; their taints (flow), consumption and findings read that grad state.
    await checkEdits(fs.readFileSync(path.join(root, 'lint', 'MH002', 'clean_nested_step_grad_off_around.py'), 'utf8'), [
      ['    torch.set_grad_enabled(training)\n', '    torch.manual_seed(0)\n'],
      ['def main(', '@torch.no_grad()\ndef main('],
      ['@torch.no_grad()\ndef main(', 'def main('],
      ['    torch.manual_seed(0)\n', '    torch.set_grad_enabled(training)\n'],
      ['def evaluate(', 'def validate('],
      ['def validate(', 'def evaluate('],
    ]);
  });
});

// Random edits over fixtures for every rule, with snippets that change file-wide facts.
const SNIPPETS = [
  '\nfrom torch.utils.data import DataLoader\n',
  '\ntrain_loader = DataLoader(ds, pin_memory=True)\n',
  '\ntrain_loader = DataLoader(ds, batch_size=4)\n',
  '\nclass Net(nn.Module):\n    pass\n',
  '\noptimizer = torch.optim.Adam(model.parameters())\n',
  '\ndef zero_grad(self):\n    pass\n',
  '\nimport torchvision\n',
  '\ndevice = "cpu"\n',
  '\nfrom torch.cuda.amp import autocast, GradScaler\n',
  'pin_memory=True, ',
  ' ',
  'x',
  '\n',
  '#',
  '(',
];

function fixtureFiles(): string[] {
  const out: string[] = [];
  for (const dir of ['lint/MH003', 'lint/MH007', 'lint/MH009', 'lint/MH010', 'lint/MH011', 'lint/MH012', 'lint/MH013', 'lint/MH014', 'lint/MH015']) {
    const full = path.join(root, dir);
    if (!fs.existsSync(full)) continue;
    for (const f of fs.readdirSync(full).sort()) if (f.endsWith('.py')) out.push(path.join(full, f));
  }
  return out;
}

type OpenDocument = ReturnType<Awaited<ReturnType<typeof getLinter>>['open']>;
type Oracle = Awaited<ReturnType<typeof getOracle>>;

/** A random offset at or after `from`: half the time the start of its line, so that statements are inserted whole. */
function randomInsertPoint(random: () => number, text: string, from: number): number {
  const at = from + Math.floor(random() * (text.length - from));
  return random() < 0.5 ? text.lastIndexOf('\n', at) + 1 : at;
}

/**
 * Inserts `snippet` at `insertAt` in the open document and in `text`, then checks the document's re-lint
 * against a fresh, independent linter's lint of the new text (settings rotating with `step`). Returns the new text.
 */
function insertAndCompare(doc: OpenDocument, oracle: Oracle, file: string, text: string, insertAt: number, snippet: string, step: number): string {
  doc.update([{ rangeOffset: insertAt, rangeLength: 0, text: snippet }]);
  const next = text.slice(0, insertAt) + snippet + text.slice(insertAt);
  const settings = SETTINGS[step % SETTINGS.length];
  assert.deepEqual(view(lintFile(doc.source, settings)), view(oracle.lintText(next, settings)), `${path.basename(file)} after edit ${step + 1} at ${insertAt}`);
  return next;
}

describe('every rule: incremental re-lint after random edits matches a fresh lint', () => {
  it('fixtures of MH003, MH007, MH009 and MH010-MH015', async () => {
    const linter = await getLinter();
    const oracle = await getOracle();
    for (const file of fixtureFiles()) {
      let text = fs.readFileSync(file, 'utf8');
      const doc = linter.open(text);
      const random = rng(text.length);
      try {
        for (let step = 0; step < 10; step++) {
          const insertAt = randomInsertPoint(random, text, 0);
          text = insertAndCompare(doc, oracle, file, text, insertAt, SNIPPETS[Math.floor(random() * SNIPPETS.length)], step);
        }
      } finally {
        doc.dispose();
      }
    }
  });
});

/**
 * A fixture as a giant `def main():` (the shape of many long scripts): its leading imports stay at module
 * level and every other line goes into main's body, indented, so its top-level statements become
 * statements of main's body, whose per-loop memos are anchored per statement (unitcache's enclosingPiece).
 */
function asMain(text: string, padding: readonly string[] = []): string {
  const lines = text.split('\n');
  let head = 0;
  while (head < lines.length && (/^(import|from)\s/.test(lines[head]) || lines[head].trim() === '' || lines[head].startsWith('#'))) head++;
  const body = lines.slice(head).map((l) => (l === '' ? '' : `    ${l}`));
  return [...lines.slice(0, head), 'def main(device="cuda", pin=True):', ...body, ...padding, '    pass', ''].join('\n');
}

/**
 * A string statement of SPLIT_FUNCTION_LINES lines closing main's body: main is then long enough for its
 * walk parts to be merged from per-statement parts (unitcache's walkSplittingFunctions).
 */
const LONG_MAIN_PADDING: readonly string[] = ['    """', ...Array.from({ length: SPLIT_FUNCTION_LINES }, (_, i) => `    padding line ${i}`), '    """'];

// The same snippets inside main's body (indented), and edits of main's header.
const MAIN_SNIPPETS = [
  ...SNIPPETS.filter((s) => !s.includes('import')).map((s) => s.replace(/\n(?=.)/g, '\n    ')),
  '\n    device = "cpu"\n',
  '\n    train_loader = DataLoader(ds, pin_memory=pin)\n',
  '\n    def helper(loader):\n        return loader\n',
  '\n    if use_tpu:\n        device = xla_device()\n',
  '1',
];

/**
 * Random edits of `files` moved into a giant `def main():` (mostly inside main's body, now and then in its
 * header), each version compared with a fresh, independent linter.
 */
async function randomEditsInMain(code: string, files: readonly string[], snippets: readonly string[], seedOffset: number, minShare = 1 / 3, padding: readonly string[] = []): Promise<void> {
  const linter = await getLinter();
  const oracle = await getOracle();
  assert.ok(files.length > 5);
  let withFindings = 0;
  for (const file of files) {
    let text = asMain(fs.readFileSync(file, 'utf8'), padding);
    if (oracle.lintText(text, defaultSettings).some((f) => f.code === code)) withFindings++;
    const doc = linter.open(text);
    const random = rng(text.length + seedOffset);
    try {
      assert.deepEqual(view(lintFile(doc.source, defaultSettings)), view(oracle.lintText(text, defaultSettings)), `${path.basename(file)} before any edit`);
      const mainAt = text.indexOf('def main(');
      for (let step = 0; step < 10; step++) {
        // Mostly inside main's body (after its header), now and then in the header itself.
        let insertAt: number;
        let snippet: string;
        if (step % 5 === 4) {
          insertAt = text.indexOf('pin=True', mainAt);
          snippet = insertAt < 0 ? '' : step % 2 === 0 ? 'x' : 'n';
          if (insertAt < 0) insertAt = mainAt;
        } else {
          insertAt = randomInsertPoint(random, text, text.indexOf('\n', mainAt) + 1);
          snippet = snippets[Math.floor(random() * snippets.length)];
        }
        text = insertAndCompare(doc, oracle, file, text, insertAt, snippet, step);
      }
    } finally {
      doc.dispose();
    }
  }
  // The wrapping must keep the rule finding things, or the comparison says little.
  assert.ok(withFindings > files.length * minShare, `${withFindings} of ${files.length} wrapped fixtures have ${code} findings`);
}

/** A rule's fixture folder. */
function ruleFixtures(code: string): string[] {
  const dir = path.join(root, 'lint', code);
  return fs
    .readdirSync(dir)
    .sort()
    .filter((f) => f.endsWith('.py'))
    .map((f) => path.join(dir, f));
}

// Statements of main that change grad state around its nested functions (read by method forwards and the
// per-scope checks of nested functions, which are kept per statement of main's body).
const GRAD_SNIPPETS = [
  ...MAIN_SNIPPETS,
  '\n    torch.set_grad_enabled(training)\n',
  '\n    torch.set_grad_enabled(False)\n',
  '\n    ctx = torch.no_grad()\n',
  '\n    with torch.no_grad():\n        pass\n',
  '\n    loss.backward()\n',
  '\n    requires_grad(netG, False)\n',
];

describe('giant def main(): incremental re-lint after random edits matches a fresh lint', () => {
  it('MH009 fixtures with their statements moved into def main()', async () => {
    await randomEditsInMain('MH009', fixtureFiles().filter((f) => f.includes(`${path.sep}MH009${path.sep}`)), MAIN_SNIPPETS, 1);
  });

  it('MH001 fixtures with their statements moved into def main() (method forwards of nested scopes)', async () => {
    await randomEditsInMain('MH001', ruleFixtures('MH001'), GRAD_SNIPPETS, 2);
  });

  it('MH010 fixtures with their statements moved into def main() (per-scope findings of nested scopes)', async () => {
    // Two of the six keep a finding once their module-level networks become main's locals.
    await randomEditsInMain('MH010', ruleFixtures('MH010'), GRAD_SNIPPETS, 3, 0.25);
  });

  it('MH009 fixtures in a long def main() (walk parts per statement of main: calls, values, models)', async () => {
    await randomEditsInMain('MH009', fixtureFiles().filter((f) => f.includes(`${path.sep}MH009${path.sep}`)), MAIN_SNIPPETS, 5, 1 / 3, LONG_MAIN_PADDING);
  });

  it('MH001 fixtures in a long def main() (walk parts per statement of main: learned leaves, meters, constructions)', async () => {
    await randomEditsInMain('MH001', ruleFixtures('MH001'), GRAD_SNIPPETS, 6, 1 / 3, LONG_MAIN_PADDING);
  });

  // A stale finding of a nested function after an edit of main's other statements (#12): see the fixed-edit MH002 test above.
  it('MH002 fixtures in a long def main() (walk parts per statement of main)', async () => {
    await randomEditsInMain('MH002', ruleFixtures('MH002'), [...GRAD_SNIPPETS, '\n    opt = torch.optim.Adam([alpha], lr=1e-3)\n', '\n    alpha = torch.zeros(1, requires_grad=True)\n'], 7, 0.25, LONG_MAIN_PADDING);
  });

  it('MH015 fixtures with their statements moved into def main() (scope identifiers per statement of main)', async () => {
    await randomEditsInMain('MH015', ruleFixtures('MH015'), [...GRAD_SNIPPETS, '\n    print(x.grad)\n', '\n    z = torch.randn(4, requires_grad=True)\n', '\n    G_ideas = None\n'], 4);
  });
});

describe('giant def main(): fixed edit sequences found by random edits (#12)', () => {
  // Found by randomEditsInMain's MH001 harness with seed offset 7, no padding (F20). The entry of MH009's
  // per-loop memo (MH009.loop, NodeMemo.getTrackedWithin) computed after edit 5 (main's header `pin=True` ->
  // `xpin=True`) is reused after edit 7, which breaks the nested `def main(` header with a second
  // `train_loader = DataLoader(...)`: a fresh lint then reports that DataLoader, the document does not.
  // Every other memo recomputed (forced misses) leaves the document wrong; MH009.loop alone recomputed makes
  // it right. The read it misses (the call's scope, changed by the broken header, read through parents) is
  // not pinned down yet: pending until it is.
  it('MH009: a loop memo kept after a broken nested def header moves a call into main (clean_mode_selected_eval.py)', async () => {
    const linter = await getLinter();
    const oracle = await getOracle();
    const file = ruleFixtures('MH001').find((f) => f.endsWith('clean_mode_selected_eval.py'))!;
    let text = asMain(fs.readFileSync(file, 'utf8'));
    const edits: [number, string][] = [
      [604, '\n    train_loader = DataLoader(ds, batch_size=4)\n'],
      [1238, 'x'],
      [2109, '\n    if use_tpu:\n        device = xla_device()\n'],
      [1655, 'pin_memory=True, '],
      [365, 'x'],
      [1192, '\n    class Net(nn.Module):\n        pass\n'],
      [1790, '\n    train_loader = DataLoader(ds, batch_size=4)\n'],
    ];
    const doc = linter.open(text);
    try {
      lintFile(doc.source, defaultSettings);
      for (const [step, [at, snippet]] of edits.entries()) text = insertAndCompare(doc, oracle, file, text, at, snippet, step);
    } finally {
      doc.dispose();
    }
  });
});
