// Returns a call cannot reach because of the flag it passes: `def data_loader(data_dir, batch_size,
// test=False)` returns one loader under `if test:` and `(train_loader, valid_loader)` otherwise, so
// `train_loader, valid_loader = data_loader(data_dir, 8)` unpacks the tuple, never the lone loader. Reading
// every return for that unpacking finds one that is not a tuple of the unpacked size and gives up; leaving
// out the returns on the branch the call's own flag rules out keeps the answer.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { keywordArgument, positionalArguments } from './context';
import { parameterDefaultText, parameterNames, positionalParameters } from './parameters';

const FALSY = new Set(['False', 'None']);

/**
 * Whether `ret` (a return statement of `def`, in `defFile`) sits on a branch `call` (in `callFile`, calling
 * `def` by its plain name) never takes: the consequence of `if P:` with P a parameter of `def` that the call
 * passes a literal False/None or leaves at such a default, or the `else:` of it when the call passes a literal
 * True. Only literals decide: a flag computed at run time keeps both branches.
 */
export function returnOffCallPath(defFile: SourceFile, def: SyntaxNode, ret: SyntaxNode, callFile: SourceFile, call: SyntaxNode): boolean {
  const params = parameterNames(defFile, def);
  for (let n: SyntaxNode | null = ret; n !== null && n !== def; n = n.parent) {
    const parent: SyntaxNode | null = n.parent;
    if (parent === null) break;
    let ifStmt: SyntaxNode | null = null;
    let inElse = false;
    if (parent.type === 'if_statement' && childByField(parent, 'consequence') === n) ifStmt = parent;
    else if (n.type === 'else_clause' && parent.type === 'if_statement' && !parent.children.some((c) => c.type === 'elif_clause')) {
      ifStmt = parent;
      inElse = true;
    }
    if (ifStmt === null) continue;
    const cond = childByField(ifStmt, 'condition');
    if (cond?.type !== 'identifier' || !params.includes(defFile.textOf(cond))) continue;
    const passed = passedLiteral(defFile, def, defFile.textOf(cond), callFile, call);
    if (passed === null) continue;
    if (inElse ? passed === 'True' : FALSY.has(passed)) return true;
  }
  return false;
}

/** The literal text the call gives parameter `name` (its default when omitted), or null when not a literal or unreadable. */
function passedLiteral(defFile: SourceFile, def: SyntaxNode, name: string, callFile: SourceFile, call: SyntaxNode): string | null {
  const args = childByField(call, 'arguments');
  if (args === null || args.children.some((c) => c.type === 'list_splat' || c.type === 'dictionary_splat')) return null;
  const index = positionalParameters(defFile, def).indexOf(name);
  const arg = keywordArgument(callFile, call, name) ?? (index < 0 ? undefined : positionalArguments(call)[index]) ?? null;
  const text = arg !== null ? callFile.textOf(arg) : parameterDefaultText(defFile, def, name);
  return text !== null && (FALSY.has(text) || text === 'True') ? text : null;
}

