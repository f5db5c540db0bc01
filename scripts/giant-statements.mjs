// Files that are one giant top-level statement, generated reproducibly from the repository's Python for
// the re-lint benchmarks (122 of the 322 files over 1,000 lines in huggingface/diffusers are one class
// or one `main()`, where reparsing and re-analysis cannot be limited to a changed top-level statement).
//   giantClass(corpus, lines):  `class Giant(nn.Module):` whose methods are the corpus's top-level
//                               functions (a `self` parameter added), in corpus order, up to `lines` lines;
//   giantMain(corpus, lines):   the corpus's text indented into `def main():` up to `lines` lines.

/** The top-level `def` blocks of a file (decorators and body; up to the next column-0 line). */
function topLevelFunctions(text) {
  const lines = text.split('\n');
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^(?:async\s+)?def\s+\w+\s*\(/.test(lines[i])) continue;
    let start = i;
    while (start > 0 && lines[start - 1].startsWith('@')) start--;
    let end = i + 1;
    // A body ends at the first non-blank line back at column 0 (the signature may span lines, closed by `):`).
    while (end < lines.length && (lines[end].trim() === '' || /^[\s)]/.test(lines[end]))) end++;
    while (end > i + 1 && lines[end - 1].trim() === '') end--;
    out.push(lines.slice(start, end));
  }
  return out;
}

/** `def f(a, b):` -> `def f(self, a, b):` (the first line with the opening parenthesis). */
function asMethod(block) {
  const k = block.findIndex((l) => /^(?:async\s+)?def\s/.test(l));
  const lines = [...block];
  lines[k] = lines[k].replace(/\(\s*(\)?)/, (_, close) => (close ? '(self)' : '(self, '));
  return lines;
}

export function giantClass(corpus, lines) {
  const methods = corpus.flatMap(topLevelFunctions).map(asMethod);
  if (methods.length === 0) throw new Error('no top-level functions in the corpus');
  const out = ['import torch', 'import torch.nn as nn', '', '', 'class Giant(nn.Module):'];
  for (let i = 0; out.length < lines; i++) {
    for (const l of methods[i % methods.length]) out.push(l === '' ? '' : `    ${l}`);
    out.push('');
  }
  return out.slice(0, lines).join('\n').trimEnd() + '\n';
}

export function giantMain(corpus, lines) {
  let body = '';
  for (let i = 0; body.split('\n').length < lines; i++) body += corpus[i % corpus.length] + '\n';
  return 'def main():\n' + body.split('\n').slice(0, lines - 1).map((l) => (l === '' ? '' : `    ${l}`)).join('\n') + '\n';
}
