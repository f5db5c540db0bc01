// Resolves local names to the dotted names they were imported as, so rules match
// `torch.cuda.amp.autocast` whether the code says `autocast`, `amp.autocast` or `torch.cuda.amp.autocast`.
import { childByField, childrenByField, type SourceFile, type SyntaxNode } from '../syntax';

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

const cache = new WeakMap<SourceFile, Map<string, ImportBinding>>();

/**
 * The bindings of recent versions with the import statements they came from. The document reuses the
 * nodes of statements an edit did not touch, so while every import statement is the same node (same
 * text), the bindings are the same and the map is shared (callers never mutate it).
 */
let recent: { readonly imports: readonly SyntaxNode[]; readonly froms: readonly SyntaxNode[]; readonly map: Map<string, ImportBinding> }[] = [];

function sameNodes(a: readonly SyntaxNode[], b: readonly SyntaxNode[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Every import in the file, scope-insensitive: later bindings win, as at module level. */
export function importBindings(file: SourceFile): Map<string, ImportBinding> {
  let map = cache.get(file);
  if (map !== undefined) return map;
  const imports = file.nodesOfType('import_statement');
  const froms = file.nodesOfType('import_from_statement');
  const hit = recent.find((r) => sameNodes(r.imports, imports) && sameNodes(r.froms, froms));
  if (hit !== undefined) {
    cache.set(file, hit.map);
    return hit.map;
  }
  map = computeBindings(file, imports, froms);
  recent = [{ imports, froms, map }, ...recent.slice(0, 3)];
  cache.set(file, map);
  return map;
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

const calleeCache = new WeakMap<SourceFile, Map<SyntaxNode, string | null>>();

/** The dotted name of what a call calls, resolved through imports, or null. Cached per file: every rule asks. */
export function calleeName(file: SourceFile, call: SyntaxNode): string | null {
  let names = calleeCache.get(file);
  if (names === undefined) calleeCache.set(file, (names = new Map<SyntaxNode, string | null>()));
  const hit = names.get(call);
  if (hit !== undefined) return hit;
  const fn = childByField(call, 'function');
  const name = fn === null ? null : qualifiedName(file, fn);
  names.set(call, name);
  return name;
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
