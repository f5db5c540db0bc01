// Pretrained networks a script uses as fixed feature extractors: built with their published weights
// (`resnet50(weights=...)`, `pretrained=True`, `AutoModel.from_pretrained(...)`, `torch.hub.load(...)`), put in
// eval mode and never switched back to training, and kept to this file (never handed to another object
// that might optimize them: `Classifier(encoder)`). A linear probe or a pretrained loss network in a
// training step is the typical use: nothing in the file ever trains them, so their parameters requiring grad
// only cost memory. MH011 reads it as a third sign of a fixed network, beside names and weight copies.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { callsNamed } from './calls';
import { keywordArgument } from './context';
import { calleeMethod, calleeName } from './imports';
import { keyOf } from './models';
import { innermostCall } from './module-forward-sites';
import { identifiersNamed as identifiersOfFile } from './identifiers';

/** A constructor call that loads published weights. */
function loadsWeights(file: SourceFile, call: SyntaxNode): boolean {
  const name = calleeName(file, call) ?? '';
  if (/(^|\.)from_pretrained$|^torch\.hub\.load$/.test(name)) return true;
  const pretrained = keywordArgument(file, call, 'pretrained');
  if (pretrained !== null && file.textOf(pretrained) === 'True') return true;
  const weights = keywordArgument(file, call, 'weights');
  return weights !== null && !/^(None|False)$/.test(file.textOf(weights));
}

/** `resnet50(weights=...).to(device).eval()`: the innermost call of the construction's method chain loads weights. */
export function buildsPretrained(file: SourceFile, value: SyntaxNode): boolean {
  if (value.type !== 'call') return false;
  return loadsWeights(file, innermostCall(value));
}

/** The construction chain ends in `.eval()` (`encoder = resnet50(pretrained=True).eval()`). */
function chainEvals(file: SourceFile, value: SyntaxNode): boolean {
  for (let call: SyntaxNode | null = value; call?.type === 'call'; ) {
    if (calleeMethod(file, call) === 'eval') return true;
    const fn = childByField(call, 'function');
    call = fn?.type === 'attribute' ? childByField(fn, 'object') : null;
  }
  return false;
}

/** Method calls on `key` in the file: `encoder.eval()`, `encoder.train()`, ... (from the calls by method name). */
function methodCalls(file: SourceFile, key: string, method: string): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  for (const call of callsNamed(file, method)) {
    const fn = childByField(call, 'function');
    if (fn?.type === 'attribute' && keyOf(file, childByField(fn, 'object')) === key) out.push(call);
  }
  return out;
}

function identifiersNamed(file: SourceFile, text: string): readonly SyntaxNode[] {
  // Every identifier of the file, not one key of an index: a per-reader memo holding it holds for this version only.
  file.session.noteWholeFileRead(file);
  return identifiersOfFile(file, text);
}

/**
 * The nodes whose key is `key`: the identifiers named so, or for a dotted key (`self.encoder`) the
 * attributes ending in its last name whose whole key it is.
 */
function nodesKeyed(file: SourceFile, key: string): readonly SyntaxNode[] {
  const dot = key.lastIndexOf('.');
  const named = identifiersNamed(file, key.slice(dot + 1));
  if (dot < 0) return named;
  const out: SyntaxNode[] = [];
  for (const id of named) {
    const p = id.parent;
    if (p?.type === 'attribute' && childByField(p, 'attribute') === id && keyOf(file, p) === key) out.push(p);
  }
  return out;
}

/** `key` used as a value other than a receiver: an argument, an element, the right side of an assignment. */
function handedAway(file: SourceFile, key: string): boolean {
  for (const n of nodesKeyed(file, key)) {
    const p = n.parent;
    if (p === null) continue;
    if (p.type === 'attribute' && childByField(p, 'object') === n) continue; // `key.eval()`, `key.fc`
    if (p.type === 'call' && childByField(p, 'function') === n) continue; // a forward pass
    if (p.type === 'assignment' && childByField(p, 'left') === n) continue; // its own binding
    if (p.type === 'argument_list' || p.type === 'keyword_argument' || p.type === 'list' || p.type === 'tuple' || p.type === 'pair' || p.type === 'assignment' || p.type === 'expression_list' || p.type === 'return_statement') return true;
  }
  return false;
}

/**
 * A pretrained network the file keeps in eval mode and to itself: built with published weights, `.eval()`
 * on it (in its construction or later), never `.train()` (`train(False)` is eval) and never handed on.
 */
export function pretrainedInEval(file: SourceFile, key: string, value: SyntaxNode): boolean {
  if (!buildsPretrained(file, value)) return false;
  if (!chainEvals(file, value) && methodCalls(file, key, 'eval').length === 0) return false;
  if (methodCalls(file, key, 'train').some((c) => !/^\(\s*(False|mode\s*=\s*False)\s*\)$/.test(file.textOf(childByField(c, 'arguments') ?? c)))) return false;
  return !handedAway(file, key);
}
