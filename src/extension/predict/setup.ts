// Which function of the file builds the step's arguments (`--setup`), and which of its parameters is the
// batch size. Reads the linter's syntax mirror; no `vscode` here.
import { childByField, type SourceFile, type SyntaxNode } from '../../lint';
import { topLevelFunctions } from '../profile/stepFinder';

/** Names that say "I build the inputs": offered first. */
const SETUP_NAME = /setup|make|build|create|input|batch|data|init|get_/i;
const BATCH_NAME = /^(batch(_?size)?|bs|micro_?batch(_?size)?)$/i;

export interface SetupParameter {
  readonly name: string;
  /** The default's source text, or null when it has none. */
  readonly defaultText: string | null;
}

export interface SetupCandidate {
  readonly name: string;
  readonly parameters: readonly SetupParameter[];
  /** True when the name reads like an input builder. */
  readonly likely: boolean;
}

/** Module-level functions other than the step, input-builder names first (document order otherwise). */
export function setupCandidates(file: SourceFile, step: string): SetupCandidate[] {
  const out: SetupCandidate[] = [];
  for (const child of file.root.children) {
    const def = child.type === 'decorated_definition' ? childByField(child, 'definition') : child;
    if (def === null || def.type !== 'function_definition') continue;
    const nameNode = childByField(def, 'name');
    const name = nameNode === null ? '' : file.textOf(nameNode);
    if (name === '' || name === step || name.startsWith('__')) continue;
    out.push({ name, parameters: parametersOf(file, def), likely: SETUP_NAME.test(name) });
  }
  // Only names the harness can resolve as `--setup NAME` (module level); methods are not offered.
  const known = new Set(topLevelFunctions(file).map((f) => f.name));
  return out.filter((c) => known.has(c.name)).sort((a, b) => Number(b.likely) - Number(a.likely));
}

function parametersOf(file: SourceFile, def: SyntaxNode): SetupParameter[] {
  const params = childByField(def, 'parameters');
  if (params === null) return [];
  const out: SetupParameter[] = [];
  for (const p of params.children) {
    if (p.type === 'identifier') out.push({ name: file.textOf(p), defaultText: null });
    else if (p.type === 'typed_parameter') {
      const id = p.children.find((c) => c.type === 'identifier');
      if (id !== undefined) out.push({ name: file.textOf(id), defaultText: null });
    } else if (p.type === 'default_parameter' || p.type === 'typed_default_parameter') {
      const name = childByField(p, 'name');
      const value = childByField(p, 'value');
      if (name !== null) out.push({ name: file.textOf(name), defaultText: value === null ? null : file.textOf(value) });
    }
  }
  return out;
}

/** The setup parameter that sets the batch size, by name; null when none reads like one. */
export function batchParameter(setup: SetupCandidate): SetupParameter | null {
  return setup.parameters.find((p) => BATCH_NAME.test(p.name)) ?? null;
}
