// The file's identifiers by text, once per version: readers that ask about many names (MH011's pretrained
// networks, MH001's uncalled callbacks) read one map instead of scanning every identifier per name.
import { VersionMemo } from '../session';
import type { SourceFile, SyntaxNode } from '../syntax';

const identifiersByText = new VersionMemo<ReadonlyMap<string, readonly SyntaxNode[]>>('identifiers.byText');

/**
 * The identifiers named `text`, in document order. Every identifier of the file stands behind the answer:
 * a caller inside a per-reader memo declares that whole-file read itself, or keys its result per version.
 */
export function identifiersNamed(file: SourceFile, text: string): readonly SyntaxNode[] {
  const byText = identifiersByText.get(file, (f) => {
    const out = new Map<string, SyntaxNode[]>();
    for (const id of f.nodesOfType('identifier')) {
      const t = f.textOf(id);
      const list = out.get(t);
      if (list === undefined) out.set(t, [id]);
      else list.push(id);
    }
    return out;
  });
  return byText.get(text) ?? [];
}
