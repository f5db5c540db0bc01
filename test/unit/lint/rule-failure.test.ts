// A rule that throws loses only its own findings: the others' are returned (and so published by the
// editor, which replaces its diagnostics with them), and the failure is logged once with the rule code.
import * as assert from 'node:assert/strict';
import { allRules, defaultSettings, FailureLog, lint, lintAndLog, type RuleFailure } from '../../../src/lint';
import type { Rule } from '../../../src/lint/types';
import { getLinter } from './harness';

const LOOP = 'import torch\n\ndef train(model, loader, opt):\n    for x, y in loader:\n        opt.zero_grad(set_to_none=False)\n        loss = model(x).sum()\n        loss.backward()\n        opt.step()\n';

/** A rule that throws on every file that holds a call (so on LOOP), like a rule bug on some construct. */
const boom: Rule = {
  code: 'MH999',
  name: 'boom',
  severity: 'warning',
  summary: 'throws (test)',
  check(file) {
    if (file.nodesOfType('call').length > 0) throw new TypeError("Cannot read properties of null (reading 'type')\n    at check (boom.ts:1)");
    return [];
  },
};

describe('a rule that throws', () => {
  it('keeps every other rule\'s findings and reports the failure with its code', async () => {
    const doc = (await getLinter()).open(LOOP);
    try {
      const healthy = lint(doc.source, defaultSettings);
      assert.ok(healthy.findings.length > 0, 'LOOP has findings (MH003)');
      const withBoom = lint(doc.source, defaultSettings, [...allRules, boom]);
      assert.deepEqual(withBoom.findings, healthy.findings);
      assert.deepEqual(
        withBoom.failures.map((f) => [f.code, f.name, f.message]),
        [['MH999', 'boom', "Cannot read properties of null (reading 'type')"]],
      );
    } finally {
      doc.dispose();
    }
  });

  it('lintAndLog (the editor\'s and the CLI\'s path) logs it once across re-lints and returns the others\' findings', async () => {
    const doc = (await getLinter()).open(LOOP);
    const lines: string[] = [];
    const failures: RuleFailure[] = [];
    const log = new FailureLog((line, f) => {
      lines.push(line);
      failures.push(f);
    });
    try {
      const expected = lint(doc.source, defaultSettings).findings;
      const first = lintAndLog(doc.source, defaultSettings, log, '/w/train.py', [...allRules, boom]);
      // Keystrokes: every new version fails the same way; the log must not grow.
      doc.update([{ rangeOffset: LOOP.length, rangeLength: 0, text: '# edited\n' }]);
      const second = lintAndLog(doc.source, defaultSettings, log, '/w/train.py', [...allRules, boom]);
      assert.deepEqual(first, expected);
      assert.deepEqual(second.map((f) => [f.code, f.start]), expected.map((f) => [f.code, f.start]));
      assert.equal(lines.length, 1, lines.join('\n'));
      assert.match(lines[0], /^\/w\/train\.py: internal error in MH999 \(boom\): Cannot read properties of null/);
      assert.ok(failures[0].error instanceof TypeError, 'the error itself goes to the log (stack trace)');
    } finally {
      doc.dispose();
    }
  });
});
