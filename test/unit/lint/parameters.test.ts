// Parameter lists as calls bind them (src/lint/analysis/parameters.ts): which names a positional argument
// binds, in order, and which a keyword argument binds, for `/`, `*`, `*args`, `**kw`, defaults and annotations.
import * as assert from 'node:assert/strict';
import { keywordParameters, parameterNames, positionalParameters } from '../../../src/lint/analysis/parameters';
import { childByField } from '../../../src/lint/syntax';
import { getLinter } from './harness';

interface Lists {
  positional: string[];
  keyword: string[];
  names: string[];
}

/** The three lists of the first `def` of `src`. */
async function listsOf(src: string): Promise<Lists> {
  const doc = (await getLinter()).open(src);
  try {
    const file = doc.source;
    const def = file.nodesOfType('function_definition')[0];
    assert.ok(childByField(def, 'parameters') !== null);
    return { positional: [...positionalParameters(file, def)], keyword: [...keywordParameters(file, def)], names: [...parameterNames(file, def)] };
  } finally {
    doc.dispose();
  }
}

describe('parameter lists (analysis/parameters.ts)', () => {
  it('plain, defaulted and annotated parameters bind by position and by keyword', async () => {
    assert.deepEqual(await listsOf('def f(self, a, b=1, c: int = 2, d: str):\n    pass\n'), {
      positional: ['self', 'a', 'b', 'c', 'd'],
      keyword: ['self', 'a', 'b', 'c', 'd'],
      names: ['self', 'a', 'b', 'c', 'd'],
    });
  });

  it('positional-only: `/` takes no slot, and the names before it bind by position alone', async () => {
    assert.deepEqual(await listsOf('def f(a, /, b):\n    pass\n'), { positional: ['a', 'b'], keyword: ['b'], names: ['a', 'b'] });
    assert.deepEqual(await listsOf('def f(a, b=2, /, c=3, *, d):\n    pass\n'), { positional: ['a', 'b', 'c'], keyword: ['c', 'd'], names: ['a', 'b', 'c', 'd'] });
  });

  it('keyword-only: the names after a bare `*` bind by keyword alone', async () => {
    assert.deepEqual(await listsOf('def f(a, *, b, c=1):\n    pass\n'), { positional: ['a'], keyword: ['a', 'b', 'c'], names: ['a', 'b', 'c'] });
  });

  it('`*args` ends the positional slots and is no name a keyword binds; `**kw` neither', async () => {
    assert.deepEqual(await listsOf('def f(a, *args, b=1, **kw):\n    pass\n'), { positional: ['a'], keyword: ['a', 'b'], names: ['a', 'b'] });
    assert.deepEqual(await listsOf('def f(a, *args: int, b: int, **kw: str):\n    pass\n'), { positional: ['a'], keyword: ['a', 'b'], names: ['a', 'b'] });
  });

  it('no parameters', async () => {
    assert.deepEqual(await listsOf('def f():\n    pass\n'), { positional: [], keyword: [], names: [] });
  });
});
