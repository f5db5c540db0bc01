import * as assert from 'node:assert/strict';
import { findingsOf, fixOnly, parseErrors } from './steps-fix-helpers';

const loop = (body: string): string =>
  ['import torch', 'for x, y in loader:', '    loss = criterion(model(x), y)', '    loss.backward()', '    optimizer.step()', body, 'print("done")', ''].join('\n');

describe('MH005 empty-cache-in-loop fix', () => {
  it('removes the whole line, trailing comment included', async () => {
    const out = await fixOnly(loop('    torch.cuda.empty_cache()  # free memory'), 'MH005');
    assert.equal(out, loop('').replace('optimizer.step()\n\n', 'optimizer.step()\n'));
  });

  it('replaces the only statement of a block with pass', async () => {
    const out = await fixOnly(loop('    if torch.cuda.is_available():\n        torch.cuda.empty_cache()'), 'MH005');
    assert.match(out, /if torch\.cuda\.is_available\(\):\n {8}pass\n/);
  });

  it('handles a statement sharing its line', async () => {
    const out = await fixOnly(loop('    torch.cuda.empty_cache(); optimizer.zero_grad()'), 'MH005');
    assert.match(out, /^ {4}pass; optimizer\.zero_grad\(\)$/m);
    const inline = await fixOnly(loop('    if True: torch.cuda.empty_cache()'), 'MH005');
    assert.match(inline, /^ {4}if True: pass$/m);
  });

  it('in a per-input inference loop: removes the call, the loop still parses and runs the same forward', async () => {
    const src = ['import torch', 'with torch.no_grad():', '    for path in paths:', '        torch.cuda.empty_cache()', '        out = net(load(path).cuda())', '        save(out.cpu(), path)', ''].join('\n');
    const out = await fixOnly(src, 'MH005');
    assert.equal(out, src.replace('        torch.cuda.empty_cache()\n', ''));
    assert.equal((await parseErrors(out)).length, 0);
  });

  it('handles CRLF line endings', async () => {
    const src = loop('    torch.cuda.empty_cache()').replace(/\n/g, '\r\n');
    const out = await fixOnly(src, 'MH005');
    assert.ok(!out.includes('empty_cache'));
    assert.ok(!/\r(?!\n)/.test(out));
  });

  it('offers no fix when the call is part of an expression', async () => {
    const f = await findingsOf(loop('    freed = torch.cuda.empty_cache() or 0'), 'MH005');
    assert.equal(f.length, 1);
    assert.equal(f[0].fix, null);
  });
});
