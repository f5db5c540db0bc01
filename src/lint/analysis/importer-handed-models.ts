// The model a function of this file is handed by the modules that import it: `def evaluate(model, dataset,
// args)` of utils.py, which nothing in utils.py calls, run by main.py as `evaluate(model, dataset, args)` with
// `model = SASRec(...).to(device)` (model.py). Within utils.py, `model.predict(...)` is no evidence of a
// forward pass: `model` could be anything, and `predict` could run under no_grad where it is defined. The
// importers' call sites say which class it is (imported-method-forwards.ts then reads that class's method).
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { callsNamed } from './calls';
import { gradOffAt } from './gradstate';
import { classOfValues, type ImportedClass } from './imported-method-forwards';
import { importerArguments } from './imported-values';
import { bindingOf, valuesOf } from './values';

export interface HandedClass extends ImportedClass {
  /** The first importer's call that hands it with autograd on, as messages name it: `main.py:88`. */
  readonly handedAt: string;
}

/**
 * The class of another module of the project that every importer's call of the module-level function
 * whose parameter `object` is hands it, or null: not such a parameter, the file calls the function itself
 * (then its own call sites decide, through valuesOf), an argument that is not an instance of one project
 * class, or every importer's call runs under no_grad (nothing records a graph there).
 */
export function importerHandedClass(file: SourceFile, object: SyntaxNode): HandedClass | null {
  if (file.session.project === null || object.type !== 'identifier') return null;
  const binding = bindingOf(file, object);
  if (binding === null || binding.kind !== 'parameter') return null;
  const defName = childByField(binding.def, 'name');
  if (defName === null || callsNamed(file, file.textOf(defName)).some((c) => childByField(c, 'function')?.type === 'identifier')) return null;
  const sites = importerArguments(file, binding.def, file.textOf(object));
  if (sites === null) return null;
  let found: ImportedClass | null = null;
  let handedAt: string | null = null;
  for (const site of sites) {
    const other = site.module.file;
    for (const arg of site.args) {
      const values = arg.type === 'identifier' || arg.type === 'attribute' ? valuesOf(other, arg) : [arg];
      const cls = values === null ? null : classOfValues(other, arg, values);
      if (cls === null || (found !== null && found.node !== cls.node)) return null;
      found = cls;
      if (handedAt === null && !gradOffAt(other, arg)) handedAt = `${site.module.display}:${other.lineOf(arg.start) + 1}`;
    }
  }
  return found === null || handedAt === null ? null : { ...found, handedAt };
}
