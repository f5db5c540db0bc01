// MH013 dataset-getitem-cuda, MH014 dataloader-copy-on-read, MH015 unused-requires-grad: what each needs to
// see before it speaks (every piece of evidence removed in turn silences it), what its message names, and
// that selection by code/name and noqa reach them like any rule.
import * as assert from 'node:assert/strict';
import { lint } from './harness';
import { only } from './autograd-fix-helpers';
import { unknownRuleSelectors } from '../../../src/lint';

const getitemCuda = (copy: string, extra = ''): string =>
  [
    'import torch',
    'from torch.utils.data import Dataset, DataLoader',
    'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
    'class Samples(Dataset):',
    '    def __init__(self, data, device="cpu"):',
    '        self.data = data',
    '        self.device = device',
    '    def __len__(self):',
    '        return len(self.data)',
    '    def __getitem__(self, i):',
    `        return ${copy}`,
    extra,
  ].join('\n');

describe('MH013 dataset-getitem-cuda', () => {
  it('flags accelerator copies of samples and names the dataset and the copy', async () => {
    for (const copy of ['self.data[i].cuda()', 'self.data[i].to(device)', 'self.data[i].to("cuda:1")', 'torch.tensor(self.data[i], device="cuda")', 'self.data[i].cuda(0)']) {
      const [f, more] = only(await lint(getitemCuda(copy)), 'MH013');
      assert.ok(f, copy);
      assert.equal(more, undefined, copy);
      assert.match(f.message, /dataset `Samples`/);
      assert.equal(f.fix, null);
      assert.equal(f.name, 'dataset-getitem-cuda');
    }
  });

  it('follows self.device to the constructions of the dataset in the file', async () => {
    const copy = 'self.data[i].to(self.device)';
    assert.deepEqual(only(await lint(getitemCuda(copy)), 'MH013'), []); // only the "cpu" default
    assert.equal(only(await lint(getitemCuda(copy, 'ds = Samples([1], device="cuda")')), 'MH013').length, 1);
    assert.equal(only(await lint(getitemCuda(copy, 'ds = Samples([1], torch.device("cuda"))')), 'MH013').length, 1);
    assert.deepEqual(only(await lint(getitemCuda(copy, 'ds = Samples([1], "cpu")')), 'MH013'), []);
  });

  it('stays quiet for CPU targets, dtypes, unknown devices and non-datasets', async () => {
    for (const copy of ['self.data[i].to("cpu")', 'self.data[i].to(torch.float16)', 'self.data[i].to(other)', 'self.data[i]']) {
      assert.deepEqual(only(await lint(getitemCuda(copy)), 'MH013'), [], copy);
    }
    const notDataset = getitemCuda('self.data[i].cuda()').replace('class Samples(Dataset):', 'class Samples:');
    assert.deepEqual(only(await lint(notDataset), 'MH013'), []);
    // ...until a DataLoader takes it: then it is a dataset by use.
    assert.equal(only(await lint(`${notDataset}\nloader = DataLoader(Samples([1]), batch_size=2)\n`), 'MH013').length, 1);
  });
});

const copyOnRead = (opts: { build?: string; workers?: string; index?: string; loaderArg?: string } = {}): string =>
  [
    'import argparse, glob, os',
    'import numpy as np',
    'from torch.utils.data import Dataset, DataLoader',
    'parser = argparse.ArgumentParser()',
    'parser.add_argument("--workers", type=int, default=12)',
    'args = parser.parse_args()',
    'class Files(Dataset):',
    '    def __init__(self, root):',
    `        self.files = ${opts.build ?? 'sorted(glob.glob(os.path.join(root, "*.png")))'}`,
    '    def __len__(self):',
    '        return 3',
    '    def __getitem__(self, idx):',
    `        return self.files[${opts.index ?? 'idx'}]`,
    `loader = DataLoader(${opts.loaderArg ?? 'Files("data")'}, batch_size=8, num_workers=${opts.workers ?? '8'})`,
    '',
  ].join('\n');

describe('MH014 dataloader-copy-on-read', () => {
  it('reports the attribute assignment with the attribute, the source and the worker count', async () => {
    const text = copyOnRead();
    const [f, more] = only(await lint(text), 'MH014');
    assert.ok(f);
    assert.equal(more, undefined);
    assert.equal(text.slice(f.start, f.end), 'self.files = sorted(glob.glob(os.path.join(root, "*.png")))');
    assert.match(f.message, /`self\.files` holds one Python object per sample \(built from a directory listing/);
    assert.match(f.message, /`num_workers`: `8`/);
    assert.match(f.message, /numpy array/);
    assert.equal(f.fix, null);
  });

  it('needs workers > 0 in a configuration the file shows', async () => {
    assert.equal(only(await lint(copyOnRead({ workers: 'args.workers' })), 'MH014').length, 1);
    assert.match(only(await lint(copyOnRead({ workers: 'args.workers' })), 'MH014')[0].message, /args\.workers \(default 12\)/);
    assert.equal(only(await lint(copyOnRead({ workers: 'os.cpu_count()' })), 'MH014').length, 1);
    for (const workers of ['0', 'cfg.workers', 'args.unknown_flag']) assert.deepEqual(only(await lint(copyOnRead({ workers })), 'MH014'), [], workers);
    const noLoader = copyOnRead().split('\n').filter((l) => !l.startsWith('loader =')).join('\n');
    assert.deepEqual(only(await lint(noLoader), 'MH014'), []);
  });

  it('needs a per-sample Python collection built from a listing, lines, json or rows', async () => {
    for (const build of ['os.listdir(root)', '[l.strip() for l in open(root)]', 'json.load(open(root))', 'list(root.glob("*.jpg"))']) {
      assert.equal(only(await lint(copyOnRead({ build })), 'MH014').length, 1, build);
    }
    for (const build of ['np.array(sorted(glob.glob(root)))', '["a.png", "b.png"]', 'root', 'np.load(root)']) {
      assert.deepEqual(only(await lint(copyOnRead({ build })), 'MH014'), [], build);
    }
    // Indexed by something other than the sample index (a label): not per sample.
    assert.deepEqual(only(await lint(copyOnRead({ index: 'self.labels[idx]' })), 'MH014'), []);
  });

  it('follows the dataset to the loader through a name and a Subset', async () => {
    const named = copyOnRead({ loaderArg: 'ds' }).replace('loader = ', 'ds = Files("x")\nloader = ');
    assert.equal(only(await lint(named), 'MH014').length, 1);
    const subset = copyOnRead({ loaderArg: 'torch.utils.data.Subset(Files("x"), [0, 1])' }).replace('import numpy as np', 'import numpy as np\nimport torch');
    assert.equal(only(await lint(subset), 'MH014').length, 1);
    const split = copyOnRead({ loaderArg: 'train_set' }).replace('loader = ', 'train_set, val_set = torch.utils.data.random_split(Files("x"), [0.8, 0.2])\nloader = ').replace('import numpy as np', 'import numpy as np\nimport torch');
    assert.equal(only(await lint(split), 'MH014').length, 1);
    assert.deepEqual(only(await lint(split.replace('random_split', 'my_split')), 'MH014'), []);
  });

  it('weighs one flat object per sample by the worker count, and records with any worker', async () => {
    // A list of paths: a few MB per worker with 2-4 workers; from 8 workers (or one per core) it is reported.
    for (const workers of ['2', '4', '7', '4 if args.workers else 2']) assert.deepEqual(only(await lint(copyOnRead({ workers })), 'MH014'), [], workers);
    for (const workers of ['8', '16', 'os.cpu_count()', '8 if args.workers else 2']) assert.equal(only(await lint(copyOnRead({ workers })), 'MH014').length, 1, workers);
    // Records (several objects per sample) from any worker on.
    for (const build of ['json.load(open(root))', '[(p, 0) for p in glob.glob(root)]', '[l.split() for l in open(root)]', 'pd.read_csv(root).to_dict("records")']) {
      const [f, more] = only(await lint(copyOnRead({ build, workers: '2' })), 'MH014');
      assert.ok(f, build);
      assert.equal(more, undefined, build);
      assert.match(f.message, /one Python record \(a dict, list or tuple of objects\) per sample/, build);
    }
    // ...but one flat object each stays a flat list: a column, the keys of a parsed mapping, one field per record.
    for (const build of ['pd.read_csv(root)["path"].tolist()', 'list(json.load(open(root)).keys())', '[d["path"] for d in json.load(open(root))]']) {
      assert.deepEqual(only(await lint(copyOnRead({ build, workers: '2' })), 'MH014'), [], build);
    }
  });

  it('reports records for loaders it cannot see, never flat lists', async () => {
    const noLoader = (build: string): string =>
      copyOnRead({ build })
        .split('\n')
        .filter((l) => !l.startsWith('loader ='))
        .join('\n');
    // A dataset module: its loaders are built in another file, with workers nearly always.
    const [f] = only(await lint(noLoader('json.load(open(root))["data"]')), 'MH014');
    assert.ok(f);
    assert.match(f.message, /built in another module/);
    assert.deepEqual(only(await lint(noLoader('sorted(glob.glob(root))')), 'MH014'), []);
    // Handed to a Hugging Face Trainer, which loads in the main process unless told otherwise.
    const trainer = `${noLoader('json.load(open(root))')}trainer = Trainer(model=None, train_dataset=Files("x"))\n`;
    assert.deepEqual(only(await lint(trainer), 'MH014'), []);
    assert.equal(only(await lint(trainer.replace('train_dataset=', 'args=TrainingArguments(dataloader_num_workers=4), train_dataset=')), 'MH014').length, 1);
    // A worker count set in a config: records reported, a flat list not; no workers at all: neither.
    assert.match(only(await lint(copyOnRead({ build: 'json.load(open(root))', workers: 'cfg.workers' })), 'MH014')[0]?.message ?? '', /set elsewhere/);
    assert.deepEqual(only(await lint(copyOnRead({ workers: 'cfg.workers' })), 'MH014'), []);
    assert.deepEqual(only(await lint(copyOnRead({ build: 'json.load(open(root))', workers: '0' })), 'MH014'), []);
  });
});

const requiresGrad = (create: string, after = ''): string =>
  [
    'import torch',
    'def step(G, D, opt, n):',
    `    ${create}`,
    '    loss = D(G(z)).mean()',
    '    opt.zero_grad()',
    '    loss.backward()',
    '    opt.step()',
    after === '' ? '' : `    ${after}`,
    '',
  ].join('\n');

describe('MH015 unused-requires-grad', () => {
  it('flags the creation of a leaf nothing differentiates', async () => {
    for (const create of ['z = torch.randn(n, 100, requires_grad=True)', 'z = torch.randn(n, 100).to("cuda").requires_grad_()', 'z = torch.randn(n, 100, requires_grad=True).cuda()']) {
      const text = requiresGrad(create);
      const [f, more] = only(await lint(text), 'MH015');
      assert.ok(f, create);
      assert.equal(more, undefined, create);
      assert.equal(text.slice(f.start, f.start + 5), create.slice(4, 9), create);
      assert.match(f.message, /`z` is made to require grad/);
      assert.equal(f.fix, null);
    }
  });

  it('stays quiet when the gradient is used, or the tensor leaves the scope', async () => {
    const create = 'z = torch.randn(n, 100, requires_grad=True)';
    for (const after of ['print(z.grad.norm())', 'torch.autograd.grad(loss, z)', 'return z', 'self.z = z', 'keep.append(z)', 'opt2 = torch.optim.Adam([z])', 'params = [z]\n    o = torch.optim.SGD(params, lr=1)', 'z.register_hook(print)']) {
      assert.deepEqual(only(await lint(requiresGrad(create, after)), 'MH015'), [], after);
    }
    assert.deepEqual(only(await lint(requiresGrad('z = torch.randn(n, 100, requires_grad=False)')), 'MH015'), []);
    // Reentrant activation checkpointing needs inputs that require grad; a model checkpoint does not.
    assert.deepEqual(only(await lint(`import torch.utils.checkpoint\n${requiresGrad('z = torch.randn(n, 100, requires_grad=True)')}`), 'MH015'), []);
    assert.equal(only(await lint(`checkpoint = torch.load("ckpt.pt")\n${requiresGrad('z = torch.randn(n, 100, requires_grad=True)')}`), 'MH015').length, 1);
    assert.deepEqual(only(await lint(requiresGrad('z = torch.nn.Parameter(torch.randn(n, requires_grad=True))')), 'MH015'), []);
  });
});

describe('MH013-MH015 selection and suppression', () => {
  it('are known codes and names for --select / ignore', () => {
    assert.deepEqual(unknownRuleSelectors(['MH013', 'MH014', 'MH015', 'dataset-getitem-cuda', 'dataloader-copy-on-read', 'unused-requires-grad', 'MH01']), []);
  });

  it('honour noqa by code and by name, and select', async () => {
    const create = 'z = torch.randn(n, 100, requires_grad=True)';
    assert.deepEqual(only(await lint(requiresGrad(`${create}  # noqa: MH015`)), 'MH015'), []);
    assert.deepEqual(only(await lint(requiresGrad(`${create}  # noqa: unused-requires-grad`)), 'MH015'), []);
    assert.equal(only(await lint(requiresGrad(`${create}  # noqa: MH001`)), 'MH015').length, 1);
    assert.deepEqual((await lint(requiresGrad(create), { select: ['MH013', 'MH014'] })).map((f) => f.code), []);
    assert.deepEqual((await lint(copyOnRead(), { select: ['dataloader-copy-on-read'] })).map((f) => f.code), ['MH014']);
  });
});
