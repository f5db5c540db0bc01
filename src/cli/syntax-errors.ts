// Where a Python 3 file does not parse: --fix leaves such a file alone and says why.
//
// tree-sitter recovers from errors (ERROR and MISSING nodes) and, for Python 2 compatibility,
// accepts `print "x"` and `exec "x"` as statements; a fix computed on such a tree can land anywhere,
// so all of these count as syntax errors here.
import type { PythonParser } from '../lint/parser';
import { computeLineStarts, positionIn } from '../lint/syntax';

export interface SyntaxErrorAt {
  /** 1-based line and column (column in code points, as the reports count them). */
  readonly line: number;
  readonly column: number;
  readonly what: string;
}

const PYTHON2_STATEMENTS: Record<string, string> = {
  print_statement: 'Python 2 print statement',
  exec_statement: 'Python 2 exec statement',
};

/** The file's syntax errors in document order (at most `limit`); empty when it parses as Python 3. */
export function findSyntaxErrors(py: PythonParser, text: string, limit = 20): SyntaxErrorAt[] {
  const tree = py.parser.parse(text);
  if (tree === null) return [{ line: 1, column: 1, what: 'the parser gave up' }];
  const offsets: Array<{ at: number; what: string }> = [];
  try {
    const cursor = tree.walk();
    try {
      for (let done = false; !done && offsets.length < limit; ) {
        const type = cursor.nodeType;
        const python2 = PYTHON2_STATEMENTS[type];
        if (cursor.nodeIsMissing) offsets.push({ at: cursor.startIndex, what: `missing ${type}` });
        else if (type === 'ERROR') offsets.push({ at: cursor.startIndex, what: 'invalid syntax' });
        else if (python2 !== undefined) offsets.push({ at: cursor.startIndex, what: python2 });
        // An ERROR's inside is noise: report where it starts and move on.
        if (type !== 'ERROR' && cursor.gotoFirstChild()) continue;
        while (!cursor.gotoNextSibling()) {
          if (!cursor.gotoParent()) {
            done = true;
            break;
          }
        }
      }
    } finally {
      cursor.delete();
    }
  } finally {
    tree.delete();
  }
  const starts = computeLineStarts(text);
  return offsets.map(({ at, what }) => {
    const p = positionIn(starts, at);
    return { line: p.line + 1, column: [...text.slice(starts[p.line], starts[p.line] + p.character)].length + 1, what };
  });
}
