// `dm = CIFARData(root, 64)` then `train_loader = dm.train_dataloader()`: a data-module or data-manager
// object whose method builds the loader (`datamgr.get_data_loader(file, aug=True)`, `data.get_loaders()`).
// The method is found through the class the object is constructed from, in this file or in the module of
// the project it is imported from; its `return` values are what the call yields, in that module's terms.
import { childByField, firstNamedChild, type SourceFile, type SyntaxNode } from '../syntax';
import { calleeName } from './imports';
import { functionsNamed, returnsOf, valuesOf } from './values';
import { resolveImport } from '../project/resolve';
import type { ProjectModule } from '../project/types';

export interface MethodReturns {
  /** The file the method is defined in: this one, or another module of the project. */
  readonly file: SourceFile;
  /** Set when the method is another module's: where the messages say the class is. */
  readonly module: ProjectModule | null;
  readonly values: readonly SyntaxNode[];
}

/** The `def name` directly in the class body (decorators allowed), or null. */
function methodOf(file: SourceFile, cls: SyntaxNode, name: string): SyntaxNode | null {
  for (const stmt of childByField(cls, 'body')?.children ?? []) {
    const def = stmt.type === 'decorated_definition' ? childByField(stmt, 'definition') : stmt;
    if (def?.type === 'function_definition' && file.textOf(childByField(def, 'name') ?? def) === name) return def;
  }
  return null;
}

/**
 * The method `name` of the class of this file named `className`, looked up through the functions index (so
 * a cached result that used it is recomputed when any `def name` of the file changes), or null unless unique.
 */
function localMethod(file: SourceFile, className: string, name: string): SyntaxNode | null {
  const found = functionsNamed(file, name).filter((def) => {
    let p = def.parent;
    if (p?.type === 'decorated_definition') p = p.parent;
    const cls = p?.type === 'block' ? p.parent : null;
    return cls?.type === 'class_definition' && file.textOf(childByField(cls, 'name') ?? cls) === className;
  });
  return found.length === 1 ? found[0] : null;
}

function returnedValues(def: SyntaxNode): SyntaxNode[] | null {
  const out: SyntaxNode[] = [];
  for (const ret of returnsOf(def)) {
    const value = firstNamedChild(ret);
    if (value === null) return null;
    out.push(value);
  }
  return out.length === 0 ? null : out;
}

/**
 * What `obj.method(...)` returns when every value `obj` is bound to (one construction) builds an instance
 * of a class of this file or of an imported module of the project that defines `method` itself. Null
 * otherwise (a method inherited from a library class, several constructions of different classes).
 */
export function instanceMethodReturns(file: SourceFile, call: SyntaxNode): MethodReturns | null {
  const fn = childByField(call, 'function');
  const object = fn?.type === 'attribute' ? childByField(fn, 'object') : null;
  const attr = fn?.type === 'attribute' ? childByField(fn, 'attribute') : null;
  if (object === null || attr === null || (object.type !== 'identifier' && object.type !== 'attribute') || file.textOf(object) === 'self') return null;
  const values = valuesOf(file, object);
  if (values === null || values.length !== 1 || values[0].type !== 'call') return null;
  const className = calleeName(file, values[0]);
  if (className === null || !/^[A-Za-z_][\w.]*$/.test(className)) return null;
  const method = file.textOf(attr);
  const here = className.includes('.') ? null : localMethod(file, className, method);
  if (here !== null) {
    const returned = returnedValues(here);
    return returned === null ? null : { file, module: null, values: returned };
  }
  if (file.session.project === null) return null;
  const ctor = childByField(values[0], 'function');
  const resolved = resolveImport(file, ctor === null ? className : file.textOf(ctor).replace(/\s+/g, ''));
  if (resolved === null || resolved.kind !== 'class' || resolved.node === null) return null;
  const def = methodOf(resolved.module.file, resolved.node, method);
  const returned = def === null ? null : returnedValues(def);
  return returned === null ? null : { file: resolved.module.file, module: resolved.module, values: returned };
}
