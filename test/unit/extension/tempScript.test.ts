import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { scriptName, TEMP_PREFIX, withTemporaryScript } from '../../../src/extension/profile/tempScript';

describe('extension/tempScript', () => {
  it('runs with the script written and removes its folder after success', async () => {
    let seen = '';
    const result = await withTemporaryScript('x = 1\n', 'nb.py', (script) => {
      seen = script;
      assert.equal(fs.readFileSync(script, 'utf8'), 'x = 1\n');
      assert.ok(path.basename(path.dirname(script)).startsWith(TEMP_PREFIX));
      return Promise.resolve('done');
    });
    assert.equal(result, 'done');
    assert.equal(fs.existsSync(path.dirname(seen)), false);
  });

  it('removes it when the run throws, and the error reaches the caller', async () => {
    let seen = '';
    await assert.rejects(
      withTemporaryScript('x = 1\n', 'nb.py', (script) => {
        seen = script;
        return Promise.reject(new Error('harness crashed'));
      }),
      /harness crashed/,
    );
    assert.ok(seen !== '');
    assert.equal(fs.existsSync(path.dirname(seen)), false);
  });

  it('removes it when the run is cancelled, only after the run has ended', async () => {
    const abort = new AbortController();
    let seen = '';
    let existedWhenCancelled = false;
    const run = withTemporaryScript('x = 1\n', 'nb.py', (script) => {
      seen = script;
      // Stands for a child process that is killed on abort and ends a moment later.
      return new Promise<string>((resolve) => abort.signal.addEventListener('abort', () => setTimeout(() => {
        existedWhenCancelled = fs.existsSync(script);
        resolve('cancelled');
      }, 20)));
    });
    abort.abort();
    assert.equal(await run, 'cancelled');
    assert.ok(existedWhenCancelled, 'the script stays until the run returns');
    assert.equal(fs.existsSync(path.dirname(seen)), false);
  });

  it('names the script after the notebook', () => {
    assert.equal(scriptName('/w/My Run.ipynb'), 'My Run.py');
    assert.equal(scriptName('Untitled-1.ipynb'), 'Untitled-1.py');
    assert.equal(scriptName('/w/.ipynb'), 'notebook.py');
  });
});
