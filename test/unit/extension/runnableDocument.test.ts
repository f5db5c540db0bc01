import * as assert from 'node:assert/strict';
import { whyNotRunnable } from '../../../src/extension/profile/runnableDocument';

const doc = (scheme: string, languageId = 'python') => ({ languageId, uri: { scheme } });

describe('which documents memhint can run (profile / predict)', () => {
  it('a saved Python file can be run', () => {
    assert.equal(whyNotRunnable(doc('file'), 'profile'), null);
  });

  it('a notebook cell is refused with why and what to do, in one line', () => {
    const why = whyNotRunnable(doc('vscode-notebook-cell'), 'profile');
    assert.ok(why !== null);
    assert.match(why, /^cannot profile a step in a notebook yet: memhint runs a saved \.py file/);
    assert.match(why, /Export the notebook to a Python script \(Jupyter: Export to Python Script\) and profile the step there\.$/);
    assert.ok(!why.includes('\n'));
    assert.match(whyNotRunnable(doc('vscode-notebook-cell'), 'predict') ?? '', /cannot predict a step in a notebook/);
  });

  it('a Python notebook cell can be profiled (from the exported cells); a notebook without a cell asks for one', () => {
    assert.equal(whyNotRunnable(doc('vscode-notebook-cell'), 'profile', false, true), null);
    assert.equal(whyNotRunnable(undefined, 'profile', true, true), 'put the cursor in the notebook cell that defines the step to profile.');
    assert.equal(whyNotRunnable(doc('vscode-notebook-cell', 'markdown'), 'profile', false, true), 'put the cursor in the Python cell that defines the step to profile: this cell is markdown.');
  });

  it('with no text editor, a focused notebook gets the notebook answer; nothing focused asks for a file', () => {
    assert.match(whyNotRunnable(undefined, 'profile', true) ?? '', /in a notebook/);
    assert.equal(whyNotRunnable(undefined, 'profile', false), 'open a Python file and put the cursor in the training step to profile.');
  });

  it('untitled, remote-only and non-Python documents say what is missing', () => {
    assert.match(whyNotRunnable(doc('untitled'), 'profile') ?? '', /^save this file first/);
    assert.match(whyNotRunnable(doc('git'), 'predict') ?? '', /^cannot predict a git: file/);
    assert.match(whyNotRunnable(doc('file', 'markdown'), 'profile') ?? '', /^open a Python file/);
  });
});
