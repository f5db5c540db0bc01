// Resolves local names to the dotted names they were imported as, so rules match
// `torch.cuda.amp.autocast` whether the code says `autocast`, `amp.autocast` or `torch.cuda.amp.autocast`.
import { childByField, childrenByField, type SourceFile, type SyntaxNode } from '../syntax';
import { KeyMemo, NodeMemo, VersionMemo } from '../session';

export interface ImportBinding {
  /** The name bound in the file ("ac" for `from torch.cuda.amp import autocast as ac`). */
  readonly local: string;
  /** What it refers to ("torch.cuda.amp.autocast"). */
  readonly qualified: string;
  /** The import statement. */
  readonly statement: SyntaxNode;
  /** The node naming the imported thing (dotted_name or aliased_import). */
  readonly node: SyntaxNode;
}

const cache = new VersionMemo<Map<string, ImportBinding>>('imports.bindings');

/**
 * The bindings of recent versions, by the import statements they came from. The document reuses the
 * nodes of statements an edit did not touch, so while every import statement is the same node (same
 * text), the bindings are the same and the map is shared (callers never mutate it).
 */
const byStatements = new KeyMemo<Map<string, ImportBinding>>('imports.byStatements', 4);

/** Every import in the file, scope-insensitive: later bindings win, as at module level. */
export function importBindings(file: SourceFile): Map<string, ImportBinding> {
  return cache.get(file, () => {
    const imports = file.nodesOfType('import_statement');
    const froms = file.nodesOfType('import_from_statement');
    // null separates the two lists, so that moving a statement from one to the other changes the key.
    return byStatements.get(file, [...imports, null, ...froms], () => computeBindings(file, imports, froms));
  });
}

function computeBindings(file: SourceFile, imports: readonly SyntaxNode[], froms: readonly SyntaxNode[]): Map<string, ImportBinding> {
  const map = new Map<string, ImportBinding>();
  for (const stmt of imports) {
    for (const item of childrenByField(stmt, 'name')) {
      if (item.type === 'aliased_import') {
        const name = childByField(item, 'name');
        const alias = childByField(item, 'alias');
        if (name && alias) map.set(file.textOf(alias), { local: file.textOf(alias), qualified: file.textOf(name), statement: stmt, node: item });
      } else {
        // `import torch.nn.functional` binds `torch`, which still means torch.
        const first = file.textOf(item).split('.')[0];
        map.set(first, { local: first, qualified: first, statement: stmt, node: item });
      }
    }
  }
  for (const stmt of froms) {
    const moduleNode = childByField(stmt, 'module_name');
    if (moduleNode === null || moduleNode.type === 'relative_import') continue;
    const moduleName = file.textOf(moduleNode).replace(/\s+/g, '');
    for (const item of childrenByField(stmt, 'name')) {
      if (item.type === 'aliased_import') {
        const name = childByField(item, 'name');
        const alias = childByField(item, 'alias');
        if (name && alias) {
          map.set(file.textOf(alias), { local: file.textOf(alias), qualified: `${moduleName}.${file.textOf(name)}`, statement: stmt, node: item });
        }
      } else {
        const name = file.textOf(item);
        map.set(name, { local: name, qualified: `${moduleName}.${name}`, statement: stmt, node: item });
      }
    }
  }
  return map;
}

/**
 * The dotted name of an identifier or attribute chain with its head resolved through imports:
 * `amp.autocast` -> "torch.cuda.amp.autocast". Null for anything else (calls, subscripts...).
 */
export function qualifiedName(file: SourceFile, node: SyntaxNode): string | null {
  const parts: string[] = [];
  let n: SyntaxNode | null = node;
  while (n !== null && n.type === 'attribute') {
    const attr = childByField(n, 'attribute');
    if (attr === null) return null;
    parts.unshift(file.textOf(attr));
    n = childByField(n, 'object');
  }
  if (n === null || n.type !== 'identifier') return null;
  const head = file.textOf(n);
  const binding = importBindings(file).get(head);
  parts.unshift(binding ? binding.qualified : head);
  return parts.join('.');
}

const importSignatures = new VersionMemo<string>('importSignature');

/** Changes whenever an import binding changes (interned in the file's session). */
export function importSignature(file: SourceFile): string {
  return importSignatures.get(file, () => {
    const parts: string[] = [];
    for (const [local, b] of importBindings(file)) parts.push(`${local}=${b.qualified}`);
    return file.session.intern(parts.sort().join(','));
  });
}

const calleeCache = new NodeMemo<string | null>('imports.calleeName');

/**
 * The dotted name of what a call calls, resolved through imports, or null. Every rule asks, for most calls
 * of the file: kept on the call node while the import bindings are the same, so an edit recomputes the
 * names of the calls it rebuilt only (it was per version, every call of the file again per keystroke).
 */
export function calleeName(file: SourceFile, call: SyntaxNode): string | null {
  return calleeCache.get(file, call, importSignature(file), () => {
    const fn = childByField(call, 'function');
    return fn === null ? null : qualifiedName(file, fn);
  });
}

/** The last segment of the called name: "zero_grad" for `self.opt.zero_grad()`. */
export function calleeMethod(file: SourceFile, call: SyntaxNode): string | null {
  const fn = childByField(call, 'function');
  if (fn === null) return null;
  if (fn.type === 'identifier') return file.textOf(fn);
  if (fn.type === 'attribute') {
    const attr = childByField(fn, 'attribute');
    return attr === null ? null : file.textOf(attr);
  }
  return null;
}
