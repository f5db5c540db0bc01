import * as assert from 'node:assert/strict';
import { sameDiagnostics, type DiagnosticLike } from '../../../src/extension/lint/sameDiagnostics';

const range = (line: number, from: number, to: number) => ({ start: { line, character: from }, end: { line, character: to } });
const uri = (path: string) => ({ toString: () => `file://${path}` });

function diagnostic(overrides: Partial<DiagnosticLike> = {}): DiagnosticLike {
  return { range: range(3, 4, 20), message: 'zero_grad keeps the gradients', severity: 1, source: 'memhint', code: { value: 'MH003', target: uri('/docs/MH003.md') }, ...overrides };
}

describe('extension/sameDiagnostics', () => {
  it('an identical re-lint (new objects, same content) is the same', () => {
    assert.equal(sameDiagnostics([diagnostic(), diagnostic({ range: range(5, 0, 3) })], [diagnostic(), diagnostic({ range: range(5, 0, 3) })]), true);
    assert.equal(sameDiagnostics([], []), true);
  });

  it('any change a user would see is a change', () => {
    const base = [diagnostic()];
    assert.equal(sameDiagnostics(base, [diagnostic({ range: range(4, 4, 20) })]), false, 'moved a line');
    assert.equal(sameDiagnostics(base, [diagnostic({ range: range(3, 4, 21) })]), false, 'longer');
    assert.equal(sameDiagnostics(base, [diagnostic({ message: 'zero_grad keeps the gradients (measured: 4 MiB)' })]), false, 'measured sentence added');
    assert.equal(sameDiagnostics(base, [diagnostic({ severity: 0 })]), false, 'severity');
    assert.equal(sameDiagnostics(base, [diagnostic({ code: 'MH003' })]), false, 'docs link dropped');
    assert.equal(sameDiagnostics(base, [diagnostic(), diagnostic()]), false, 'one more');
    assert.equal(sameDiagnostics(base, []), false, 'cleared');
  });

  it('related information counts (where the kept memory is allocated)', () => {
    const related = (line: number) => [{ location: { uri: uri('/w/a.py'), range: range(line, 0, 5) }, message: 'the memory it keeps is allocated here' }];
    assert.equal(sameDiagnostics([diagnostic({ relatedInformation: related(1) })], [diagnostic({ relatedInformation: related(1) })]), true);
    assert.equal(sameDiagnostics([diagnostic({ relatedInformation: related(1) })], [diagnostic({ relatedInformation: related(2) })]), false);
    assert.equal(sameDiagnostics([diagnostic()], [diagnostic({ relatedInformation: related(2) })]), false);
  });
});
