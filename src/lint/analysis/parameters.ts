// A def's parameter list as a call binds it. Python binds a positional argument to the parameters before a bare
// `*` or `*args`, in order (`/` only marks the ones before it positional-only and takes no slot), and a keyword
// argument to any named parameter but the positional-only ones. The analyses that map a call's arguments onto
// a callee's parameters (handed arguments, call-site values, forwards into imported functions) all need these
// two lists; one reading of the grammar keeps them from disagreeing on `def f(a, /, b)` or `def f(a, *, b)`.
import type { SourceFile, SyntaxNode } from '../syntax';
import { childByField, namedChildren } from '../syntax';

interface ParameterLists {
  readonly positional: readonly string[];
  readonly keyword: readonly string[];
  readonly names: readonly string[];
}

/** The name a parameter node declares, or null for splats, separators and comments. */
function declaredName(file: SourceFile, p: SyntaxNode): string | null {
  if (p.type === 'identifier') return file.textOf(p);
  if (p.type === 'default_parameter' || p.type === 'typed_default_parameter' || p.type === 'typed_parameter') {
    // `typed_parameter` has no name field: its first child is the identifier, or the splat of `*args: int`.
    const name = childByField(p, 'name') ?? namedChildren(p)[0] ?? null;
    return name?.type === 'identifier' ? file.textOf(name) : null;
  }
  return null;
}

/** Whether a parameter node is `*args` (annotated or not) or a bare `*`: no positional slot follows it. */
function endsPositional(p: SyntaxNode): boolean {
  if (p.type === 'list_splat_pattern' || p.type === 'keyword_separator') return true;
  return p.type === 'typed_parameter' && namedChildren(p)[0]?.type === 'list_splat_pattern';
}

const namedChildrenOrNone = (n: SyntaxNode | null): SyntaxNode[] => (n === null ? [] : namedChildren(n));

function listsOf(file: SourceFile, def: SyntaxNode): ParameterLists {
  const positional: string[] = [];
  const keyword: string[] = [];
  const names: string[] = [];
  let inPositional = true;
  for (const p of namedChildrenOrNone(childByField(def, 'parameters'))) {
    if (p.type === 'positional_separator') {
      // Everything so far is positional-only: a keyword argument cannot bind it.
      keyword.length = 0;
      continue;
    }
    if (endsPositional(p)) {
      inPositional = false;
      continue;
    }
    const name = declaredName(file, p);
    if (name === null) continue;
    names.push(name);
    keyword.push(name);
    if (inPositional) positional.push(name);
  }
  return { positional, keyword, names };
}

/** The parameters a call's positional arguments bind, in order (`self` included for a method). */
export function positionalParameters(file: SourceFile, def: SyntaxNode): readonly string[] {
  return listsOf(file, def).positional;
}

/** The parameters a call's keyword arguments may name (all named ones but the positional-only). */
export function keywordParameters(file: SourceFile, def: SyntaxNode): readonly string[] {
  return listsOf(file, def).keyword;
}

/** Every parameter name a def binds in its body, in order (`*args`/`**kwargs` names left out). */
export function parameterNames(file: SourceFile, def: SyntaxNode): readonly string[] {
  return listsOf(file, def).names;
}

/** The default value's text of the parameter `name` of the function `def` (`def f(train=True)`), or null. */
export function parameterDefaultText(file: SourceFile, def: SyntaxNode, name: string): string | null {
  for (const p of childByField(def, 'parameters')?.children ?? []) {
    if (p.type !== 'default_parameter' && p.type !== 'typed_default_parameter') continue;
    const n = childByField(p, 'name');
    const v = childByField(p, 'value');
    if (n !== null && v !== null && file.textOf(n) === name) return file.textOf(v);
  }
  return null;
}
