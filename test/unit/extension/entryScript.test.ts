// memhint.profile.script: which script the editor runs for "Profile this loop" on a loop in another file.
import * as assert from 'node:assert/strict';
import { entryFor } from '../../../src/extension/profile/entryScript';

describe('extension/entryScript', () => {
  const entry = '/w/projects/chargpt/chargpt.py';
  const module = '/w/mingpt/trainer.py';

  it('runs the entry script for a loop in another file', () => {
    assert.equal(entryFor(entry, module, null, 81, null), entry);
    assert.equal(entryFor('/w/projects/../projects/chargpt/chargpt.py', module, null, 81, null), entry, 'normalised');
  });

  it('runs the file itself when unset, for the entry script\'s own loops, for functions and for notebooks', () => {
    assert.equal(entryFor(null, module, null, 81, null), null);
    assert.equal(entryFor(entry, entry, null, 30, null), null);
    assert.equal(entryFor(entry, module, 'train_step', undefined, null), null);
    assert.equal(entryFor(entry, module, null, undefined, null), null, 'the whole file: no loop named');
    assert.equal(entryFor(entry, module, null, 81, '/tmp/exported.py'), null);
  });
});
