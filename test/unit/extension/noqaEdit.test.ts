import * as assert from 'node:assert/strict';
import { noqaEdit } from '../../../src/extension/lint/noqaEdit';
import { getLinter } from '../lint/harness';

async function applyNoqa(source: string, needle: string, code: string): Promise<string | null> {
  const file = (await getLinter()).open(source).source;
  const edit = noqaEdit(file, source.indexOf(needle), code);
  if (edit === null) return null;
  return source.slice(0, edit.start) + edit.newText + source.slice(edit.end);
}

describe('extension/noqaEdit', () => {
  it('appends a noqa comment to the finding line', async () => {
    assert.equal(await applyNoqa('for b in data:\n    total += loss\n', 'total', 'MH002'), 'for b in data:\n    total += loss  # noqa: MH002\n');
  });

  it('replaces trailing whitespace', async () => {
    assert.equal(await applyNoqa('total += loss   \n', 'total', 'MH002'), 'total += loss  # noqa: MH002\n');
  });

  it('extends an existing noqa list', async () => {
    assert.equal(await applyNoqa('x.cuda()  # noqa: MH009\n', 'x.cuda', 'MH002'), 'x.cuda()  # noqa: MH009, MH002\n');
  });

  it('does nothing when the line is already suppressed', async () => {
    assert.equal(await applyNoqa('x.cuda()  # noqa\n', 'x', 'MH002'), null);
    assert.equal(await applyNoqa('x.cuda()  # noqa: MH002\n', 'x', 'MH002'), null);
  });

  it('keeps another comment and adds the directive after it', async () => {
    assert.equal(await applyNoqa('total += loss  # running sum\n', 'total', 'MH002'), 'total += loss  # running sum  # noqa: MH002\n');
  });

  it('never puts the comment inside a multi-line string', async () => {
    const src = 'log(loss, """step\ndone""")\nnext_line()\n';
    assert.equal(await applyNoqa(src, 'log', 'MH002'), 'log(loss, """step\ndone""")  # noqa: MH002\nnext_line()\n');
  });

  it('handles CRLF line ends', async () => {
    assert.equal(await applyNoqa('a = 1\r\ntotal += loss\r\n', 'total', 'MH002'), 'a = 1\r\ntotal += loss  # noqa: MH002\r\n');
  });
});
