// resolveImport: what a name of the linted file refers to in another module of the project, through the
// file's own import statements (relative ones included) and the other module's top-level definitions.
import { VersionMemo } from '../session';
import { childByField, childrenByField, type SourceFile, type SyntaxNode } from '../syntax';
import type { ProjectModule } from './types';

export interface ResolvedName {
  readonly module: ProjectModule;
  /**
   * A `def`, a `class`, a top-level assignment's value (for a name unpacked from a tuple, its identifier in
   * the pattern), or the module itself (`from pkg import data`).
   */
  readonly kind: 'function' | 'class' | 'value' | 'module';
  /** The function_definition / class_definition, the assigned value; null for a module. */
  readonly node: SyntaxNode | null;
  /** Where it is defined, as messages name it: `data/loader.py:42` (the module alone for a module). */
  readonly where: string;
}

/** Re-exports followed (`from .loader import build_loader` in a package's `__init__.py`). */
const MAX_HOPS = 3;

interface Binding {
  /** The module named, dotted, leading dots for relative imports. */
  readonly module: string;
  /** The member imported from it, or null when the name is bound to the module itself. */
  readonly member: string | null;
}

interface FileImports {
  readonly bindings: ReadonlyMap<string, Binding>;
  /** Modules of `from m import *`, in order. */
  readonly wildcards: readonly string[];
}

const importsMemo = new VersionMemo<FileImports>('project.imports');
const topLevelMemo = new VersionMemo<ReadonlyMap<string, SyntaxNode>>('project.topLevel');

/**
 * What `name` (an identifier or dotted name: `load_data`, `utils.to_var`) of `from` refers to in another
 * module of its project, or null: no project context, a library, a local name, or nothing found.
 */
export function resolveImport(from: SourceFile, name: string): ResolvedName | null {
  const ctx = from.session.project;
  if (ctx === null) return null;
  const parts = name.split('.');
  const imports = importsOf(from);
  const head = imports.bindings.get(parts[0]);
  if (head === undefined) {
    if (parts.length !== 1) return null;
    // A star import: a name the file does not bind may come from there.
    for (const m of imports.wildcards) {
      const mod = ctx.lookup.module(ctx.path, m);
      const hit = mod === null ? null : memberOf(mod, parts[0], 0);
      if (hit !== null) return hit;
    }
    return null;
  }
  // `import a.b` binds `a`; `a.b.f` is then `f` of module `a.b`: try the longest module first.
  const base = head.member === null ? head.module : `${head.module}${head.module.endsWith('.') ? '' : '.'}${head.member}`;
  const rest = parts.slice(1);
  if (head.member !== null && rest.length === 0) {
    const mod = ctx.lookup.module(ctx.path, head.module);
    const hit = mod === null ? null : memberOf(mod, head.member, 0);
    if (hit !== null) return hit;
  }
  for (let k = rest.length; k >= 0; k--) {
    const moduleName = [base, ...rest.slice(0, k)].join('.');
    const mod = ctx.lookup.module(ctx.path, moduleName);
    if (mod === null) continue;
    if (k === rest.length) return { module: mod, kind: 'module', node: null, where: mod.display };
    if (k === rest.length - 1) return memberOf(mod, rest[k], 0);
    return null;
  }
  return null;
}

/**
 * The library name that `name` (an identifier of `from`) stands for when a module of the project re-exports
 * it from a library: `from dataset import DataLoader`, where dataset.py has `from torch.utils.data import
 * Dataset, DataLoader`, is `torch.utils.data.DataLoader`. Null when the name is defined in the project, bound
 * by no import, or not found; re-exports are followed as far as `resolveImport` follows them.
 */
export function reexportedLibraryName(from: SourceFile, name: string): string | null {
  const ctx = from.session.project;
  if (ctx === null) return null;
  const head = importsOf(from).bindings.get(name);
  if (head === undefined || head.member === null) return null;
  let mod = ctx.lookup.module(ctx.path, head.module);
  let member = head.member;
  for (let hops = 0; mod !== null && hops < MAX_HOPS; hops++) {
    if (topLevel(mod.file).has(member)) return null;
    const imported = importsOf(mod.file).bindings.get(member);
    const next = mod.file.session.project;
    if (imported === undefined || next === null) return null;
    const nextModule = next.lookup.module(next.path, imported.module);
    if (nextModule === null) {
      // Not a module of the project: a library, unless the import is relative (a file the index lacks).
      if (imported.module.startsWith('.')) return null;
      return imported.member === null ? imported.module : `${imported.module}.${imported.member}`;
    }
    if (imported.member === null) return null;
    mod = nextModule;
    member = imported.member;
  }
  return null;
}

/** `member` of `mod`: its own top-level definition, a re-export, or a submodule. */
function memberOf(mod: ProjectModule, member: string, hops: number): ResolvedName | null {
  const def = topLevel(mod.file).get(member);
  if (def !== undefined) {
    const where = `${mod.display}:${mod.file.lineOf(def.start) + 1}`;
    if (def.type === 'function_definition') return { module: mod, kind: 'function', node: def, where };
    if (def.type === 'class_definition') return { module: mod, kind: 'class', node: def, where };
    return { module: mod, kind: 'value', node: def, where };
  }
  const ctx = mod.file.session.project;
  if (ctx === null || hops >= MAX_HOPS) return null;
  const imported = importsOf(mod.file).bindings.get(member);
  if (imported !== undefined) {
    const next = ctx.lookup.module(ctx.path, imported.module);
    if (next === null) return null;
    return imported.member === null ? { module: next, kind: 'module', node: null, where: next.display } : memberOf(next, imported.member, hops + 1);
  }
  // `from pkg import data` where `data` is a module of the package.
  if (mod.path.endsWith('__init__.py')) {
    const sub = ctx.lookup.module(ctx.path, `.${member}`);
    if (sub !== null) return { module: sub, kind: 'module', node: null, where: sub.display };
  }
  return null;
}

/** Top-level `def`s, `class`es (decorators looked through) and assignments (the value, or an unpacked name's identifier), last one wins. */
function topLevel(file: SourceFile): ReadonlyMap<string, SyntaxNode> {
  return topLevelMemo.get(file, () => {
    const out = new Map<string, SyntaxNode>();
    for (let unit of file.root.children) {
      if (unit.type === 'decorated_definition') unit = childByField(unit, 'definition') ?? unit;
      if (unit.type === 'function_definition' || unit.type === 'class_definition') {
        const n = childByField(unit, 'name');
        if (n !== null) out.set(file.textOf(n), unit);
        continue;
      }
      const expr = unit.type === 'expression_statement' ? unit.children[0] : null;
      if (expr?.type !== 'assignment') continue;
      const left = childByField(expr, 'left');
      const right = childByField(expr, 'right');
      if (left?.type === 'identifier' && right !== null) out.set(file.textOf(left), right);
      // `train_loader, valid_loader = get_loaders(...)`: each unpacked name stands for its own identifier in
      // the pattern, whose value valuesOf reads in that module (the element of the right side it gets).
      else if (right !== null && (left?.type === 'pattern_list' || left?.type === 'tuple_pattern')) {
        for (const part of left.children) if (part.type === 'identifier') out.set(file.textOf(part), part);
      }
    }
    return out;
  });
}

function importsOf(file: SourceFile): FileImports {
  return importsMemo.get(file, () => {
    const bindings = new Map<string, Binding>();
    const wildcards: string[] = [];
    // Document order: a later import of a name wins, as at module level.
    const statements = [...file.nodesOfType('import_statement'), ...file.nodesOfType('import_from_statement')].sort((a, b) => a.start - b.start);
    for (const stmt of statements) {
      if (stmt.type === 'import_statement') {
        for (const item of childrenByField(stmt, 'name')) {
          if (item.type === 'aliased_import') {
            const n = childByField(item, 'name');
            const alias = childByField(item, 'alias');
            if (n !== null && alias !== null) bindings.set(file.textOf(alias), { module: compact(file.textOf(n)), member: null });
          } else {
            const first = compact(file.textOf(item)).split('.')[0];
            bindings.set(first, { module: first, member: null });
          }
        }
        continue;
      }
      const moduleNode = childByField(stmt, 'module_name');
      if (moduleNode === null) continue;
      const module = compact(file.textOf(moduleNode));
      if (stmt.children.some((c) => c.type === 'wildcard_import')) {
        wildcards.push(module);
        continue;
      }
      for (const item of childrenByField(stmt, 'name')) {
        const n = item.type === 'aliased_import' ? childByField(item, 'name') : item;
        const alias = item.type === 'aliased_import' ? childByField(item, 'alias') : item;
        if (n === null || alias === null) continue;
        bindings.set(file.textOf(alias), { module, member: compact(file.textOf(n)) });
      }
    }
    return { bindings, wildcards };
  });
}

function compact(text: string): string {
  return text.replace(/\s+/g, '');
}
