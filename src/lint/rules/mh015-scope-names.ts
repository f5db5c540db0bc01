// MH015's identifiers of a scope by name, with whether each sits in a definition nested in the scope. A
// creation's uses are looked up here, once per scope and name. The walk is kept per statement of the scope's
// body (and per top-level statement for the module): in a giant `def main():` every edit made a new scope
// node, and the whole of main was walked again on every keystroke (the largest self time of a re-lint of
// the 6,000-line `main`). A statement's part depends on its own subtree alone (identifiers, their texts and
// fields, the definitions between them and the statement), so it holds while the document reuses the node.
import { NodeMemo, VersionMemo } from '../session';
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';

/** Definitions whose code runs apart from the scope's (a use inside one is a use of unknown timing). */
const SCOPES = new Set(['function_definition', 'class_definition', 'lambda']);
/** Calls that compare values: in a scope that also reads `.grad`, a gradient test. */
const COMPARISONS = new Set(['assert_close', 'allclose', 'assert_allclose', 'isclose', 'gradcheck', 'gradgradcheck']);

export interface NameUse {
  readonly node: SyntaxNode;
  /** In a definition nested in the scope. */
  readonly nested: boolean;
}

/** The identifiers of one piece of a scope (its header, or one statement of its body). */
interface Part {
  readonly byName: ReadonlyMap<string, readonly NameUse[]>;
  readonly inspectsGraph: boolean;
  readonly readsGrad: boolean;
  readonly compares: boolean;
}

export interface ScopeNames {
  /** The scope's identifiers named `name`, in document order. */
  uses(name: string): readonly NameUse[];
  /** The scope inspects the graph (`print(y.grad_fn)`, `.is_leaf`) or compares gradients: autograd demonstration or test code. */
  readonly inspects: boolean;
}

/**
 * Walks `roots` (in document order, none inside another, none nested in a definition below the scope)
 * and their subtrees; `scope` is the scope itself when it is one of the roots.
 */
function walkPart(file: SourceFile, roots: readonly SyntaxNode[], scope: SyntaxNode | null): Part {
  const byName = new Map<string, NameUse[]>();
  let inspectsGraph = false;
  let readsGrad = false;
  let compares = false;
  const stack: NameUse[] = [];
  for (let i = roots.length - 1; i >= 0; i--) stack.push({ node: roots[i], nested: false });
  while (stack.length > 0) {
    const { node: n, nested } = stack.pop()!;
    if (n.type === 'identifier') {
      const name = file.textOf(n);
      if (name === 'grad_fn' || name === 'is_leaf') inspectsGraph = true;
      if (name === 'grad' && n.field === 'attribute') readsGrad = true;
      if (COMPARISONS.has(name)) compares = true;
      const list = byName.get(name);
      if (list === undefined) byName.set(name, [{ node: n, nested }]);
      else list.push({ node: n, nested });
    }
    const inner = nested || (n !== scope && SCOPES.has(n.type));
    for (let i = n.children.length - 1; i >= 0; i--) stack.push({ node: n.children[i], nested: inner });
  }
  return { byName, inspectsGraph, readsGrad, compares };
}

const statementParts = new NodeMemo<Part>('MH015.statementNames');

/**
 * The scope's pieces in document order: for a function, its header (the children before the body block)
 * and each statement of the body; for the module, its statements. One-shot lints
 * (the CLI) and other scopes walk the scope as one piece, as before.
 */
function partsOf(file: SourceFile, scope: SyntaxNode): Part[] {
  const body = scope.type === 'function_definition' ? childByField(scope, 'body') : scope.type === 'module' ? scope : null;
  if (body === null || file.session.oneShot) return [walkPart(file, [scope], scope)];
  const parts: Part[] = [];
  // The definition's children before the body, then the body's statements (the block node itself is no
  // identifier): the order a walk from the definition visits them in.
  const at = scope.children.indexOf(body);
  if (body !== scope) parts.push(walkPart(file, scope.children.slice(0, at), null));
  for (const statement of body.children) parts.push(statementParts.get(file, statement, '', () => walkPart(file, [statement], null)));
  // Whatever follows the body in the definition (a trailing comment, an error node) comes last.
  if (body !== scope && at + 1 < scope.children.length) parts.push(walkPart(file, scope.children.slice(at + 1), null));
  return parts;
}

const scopeNames = new VersionMemo<ScopeNames>('MH015.scopeNames');

/** The scope's identifiers by name (per version, shared by every creation in it), from its pieces' parts. */
export function namesOf(file: SourceFile, scope: SyntaxNode): ScopeNames {
  return scopeNames.keyed(file, scope, () => {
    const parts = partsOf(file, scope);
    const merged = new Map<string, readonly NameUse[]>();
    return {
      inspects: parts.some((p) => p.inspectsGraph) || (parts.some((p) => p.readsGrad) && parts.some((p) => p.compares)),
      uses(name) {
        let list = merged.get(name);
        if (list === undefined) {
          const out: NameUse[] = [];
          for (const p of parts) for (const u of p.byName.get(name) ?? []) out.push(u);
          merged.set(name, (list = out));
        }
        return list;
      },
    };
  });
}
