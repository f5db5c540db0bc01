import * as assert from 'node:assert/strict';
import { applyFixes } from '../../../src/lint/fix';
import { lint } from './harness';
import { checkFix, findingsOf, fixOnly, parseErrors } from './steps-fix-helpers';

describe('MH008 deprecated-amp fixes', () => {
  it('GradScaler: inserts "cuda" in front, keeping positional order', async () => {
    assert.match(await fixOnly('import torch\ns = torch.cuda.amp.GradScaler(2.0**16, 2.0)\n', 'MH008'), /torch\.amp\.GradScaler\("cuda", 2\.0\*\*16, 2\.0\)/);
    assert.match(await fixOnly("import torch\ns = torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))\n", 'MH008'), /torch\.amp\.GradScaler\("cuda", enabled=\(dtype == 'float16'\)\)/);
    assert.match(await fixOnly('import torch\ns = torch.cuda.amp.GradScaler()\n', 'MH008'), /torch\.amp\.GradScaler\("cuda"\)/);
  });

  it('autocast: device first, positional arguments become keywords', async () => {
    const out = await fixOnly('import torch\nwith torch.cuda.amp.autocast(True, torch.bfloat16):\n    pass\n', 'MH008');
    assert.match(out, /torch\.amp\.autocast\("cuda", enabled=True, dtype=torch\.bfloat16\)/);
    assert.match(await fixOnly('import torch as th\nwith th.cpu.amp.autocast():\n    pass\n', 'MH008'), /th\.amp\.autocast\("cpu"\)/);
  });

  it('custom_fwd/custom_bwd: device_type keyword, bare decorators get a call', async () => {
    const src = [
      'import torch',
      'class F(torch.autograd.Function):',
      '    @staticmethod',
      '    @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)',
      '    def forward(ctx, x):',
      '        return x',
      '    @staticmethod',
      '    @torch.cuda.amp.custom_bwd',
      '    def backward(ctx, g):',
      '        return g',
      '',
    ].join('\n');
    const found = await findingsOf(src, 'MH008');
    assert.equal(found.length, 2);
    assert.match(await checkFix(src, found[0]), /@torch\.amp\.custom_fwd\(cast_inputs=torch\.float32, device_type="cuda"\)/);
    assert.match(await checkFix(src, found[1]), /@torch\.amp\.custom_bwd\(device_type="cuda"\)/);
  });

  it('from-imports: one fix rewrites the import and every use together', async () => {
    const src = [
      'import torch',
      'from torch.cuda.amp import autocast, GradScaler as Scaler',
      'scaler = Scaler(enabled=True)',
      'with autocast(dtype=torch.float16):',
      '    pass',
      '',
    ].join('\n');
    const found = await findingsOf(src, 'MH008');
    assert.equal(found.length, 3);
    const fixed = await checkFix(src, found[0]);
    assert.equal(
      fixed,
      ['import torch', 'from torch.amp import autocast, GradScaler as Scaler', 'scaler = Scaler("cuda", enabled=True)', 'with autocast("cuda", dtype=torch.float16):', '    pass', ''].join('\n'),
    );
    // Uses carry the same fix; applying everything at once applies it exactly once.
    const all = applyFixes(src, await lint(src));
    assert.equal(all.text, fixed);
  });

  it('no import fix when a name is used other than by calling it', async () => {
    const src = 'from torch.cuda.amp import autocast\nctx = autocast\nwith autocast():\n    pass\n';
    const found = await findingsOf(src, 'MH008');
    assert.ok(found.length >= 1);
    assert.equal(found[0].fix, null);
  });

  it('module alias uses need `torch` bound for a fix', async () => {
    const srcWithTorch = 'import torch\nfrom torch.cuda import amp\nwith amp.autocast():\n    pass\n';
    const withTorch = applyFixes(srcWithTorch, await lint(srcWithTorch)).text;
    assert.match(withTorch, /with torch\.amp\.autocast\("cuda"\):/);
    // The use and the import that binds the namespace: neither can be rewritten without `torch`.
    const without = await findingsOf('from torch.cuda import amp\nwith amp.autocast():\n    pass\n', 'MH008');
    assert.equal(without.length, 2);
    assert.ok(without.every((f) => f.fix === null));
  });

  it('the namespace import is reported without a fix; fixing everything leaves code that parses and keeps its meaning', async () => {
    const src = 'import torch\nfrom torch.cuda import amp\nscaler = amp.GradScaler(enabled=True)\nwith amp.autocast(enabled=True):\n    pass\n';
    const found = await lint(src);
    const imports = found.filter((f) => f.code === 'MH008' && src.slice(f.start, f.end) === 'amp');
    assert.equal(imports.length, 1);
    assert.equal(imports[0].fix, null);
    const fixed = applyFixes(src, found).text;
    assert.equal((await parseErrors(fixed)).length, 0);
    assert.match(fixed, /scaler = torch\.amp\.GradScaler\("cuda", enabled=True\)/);
    assert.match(fixed, /with torch\.amp\.autocast\("cuda", enabled=True\):/);
    // Once no deprecated object goes through the namespace, its import is no longer reported.
    assert.equal((await findingsOf(fixed, 'MH008')).length, 0);
  });

  it('a namespace a try/except shim binds is whichever API this torch has: its uses get no finding and no fix', async () => {
    const src = 'import torch\ntry:\n    from torch import amp\nexcept ImportError:\n    from torch.cuda import amp\nwith amp.autocast("cuda"):\n    pass\n';
    assert.equal((await findingsOf(src, 'MH008')).length, 0);
  });

  it('is silent below torch 2.4 and on compatibility shims', async () => {
    const src = 'import torch\ns = torch.cuda.amp.GradScaler()\n';
    assert.equal((await findingsOf(src, 'MH008', { major: 2, minor: 3 })).length, 0);
    assert.equal((await findingsOf(src, 'MH008', { major: 2, minor: 4 })).length, 1);
    const shim = 'import torch\ntry:\n    from torch.amp import GradScaler\nexcept ImportError:\n    from torch.cuda.amp import GradScaler\ns = GradScaler()\n';
    assert.equal((await findingsOf(shim, 'MH008')).length, 0);
  });

  it('never produces broken code on partial calls', async () => {
    for (const src of ['import torch\ntorch.cuda.amp.autocast(\n', 'import torch\nx = torch.cuda.amp.GradScaler(*args)\n', 'import torch\nwith torch.cuda.amp.autocast(*a):\n    pass\n']) {
      for (const f of await findingsOf(src, 'MH008')) {
        if (f.fix === null) continue;
        assert.equal((await parseErrors(src)).length > 0 ? 0 : (await parseErrors(applyFixes(src, [f]).text)).length, 0);
      }
    }
  });
});
