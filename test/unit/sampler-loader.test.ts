// The loader's reasons when the addon cannot be used, and the fallback that createSampler picks.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { addonCandidates, loadAddonFrom, ADDON_FILE } from '../../src/sampler/native-addon';
import { createSampler } from '../../src/sampler';

describe('sampler loader', () => {
  let dir = '';
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memhint-loader-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('searches the override, then native/build/Release of ancestors', () => {
    const c = addonCandidates('/a/b/c', { MEMHINT_SAMPLER_ADDON: '/opt/x.node' });
    assert.equal(c[0], '/opt/x.node');
    assert.ok(c.includes(`/a/b/c/${ADDON_FILE}`));
    assert.ok(c.includes(`/a/native/build/Release/${ADDON_FILE}`));
  });

  it('says the addon is not built when no candidate exists', () => {
    const r = loadAddonFrom([path.join(dir, 'none', ADDON_FILE)]);
    assert.equal(r.ok, false);
    assert.match(!r.ok ? r.reason : '', /not built .*npm run build:native/);
  });

  it('reports a file that fails to load, with the loader error', () => {
    const bogus = path.join(dir, ADDON_FILE);
    fs.writeFileSync(bogus, 'not an ELF file');
    const r = loadAddonFrom([bogus]);
    assert.equal(r.ok, false);
    assert.match(!r.ok ? r.reason : '', /^failed to load .*memhint_sampler\.node: .*(invalid ELF|file too short)/);
  });

  it('rejects a module that is not the sampler addon', () => {
    const other = path.join(dir, 'other.js');
    fs.writeFileSync(other, 'module.exports = { hello: 1 };');
    const r = loadAddonFrom([other]);
    assert.equal(r.ok, false);
    assert.match(!r.ok ? r.reason : '', /is not the memhint sampler addon/);
  });

  it('MEMHINT_SAMPLER=js selects the JS fallback and says why', () => {
    const saved = process.env.MEMHINT_SAMPLER;
    process.env.MEMHINT_SAMPLER = 'js';
    try {
      const s = createSampler();
      assert.equal(s.source, 'js');
      assert.match(s.fallbackReason ?? '', /requested/);
    } finally {
      if (saved === undefined) delete process.env.MEMHINT_SAMPLER;
      else process.env.MEMHINT_SAMPLER = saved;
    }
  });
});
