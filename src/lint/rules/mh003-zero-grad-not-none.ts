// MH003 zero-grad-not-none: gradients zeroed in place instead of released (`set_to_none=False`,
// `p.grad.zero_()`, `p.grad = torch.zeros_like(p)`), and bare `zero_grad()` when the target torch is
// older than 2.0 (where set_to_none defaulted to False).
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { calleeMethod, calleeName } from '../analysis/imports';
import { keywordArgument, positionalArguments } from '../analysis/context';
import { appendArgument, hasSplat, statementOfCall } from '../analysis/call-edits';
import { unitCallsNamed } from '../analysis/calls';
import { NodeMemo } from '../session';
import { fromRelative, importSignature, toRelative, unitNodesOfType, unitsOf, type RelativeFinding } from '../analysis/unitcache';
import { torchAtLeast, type Rule, type RuleFinding } from '../types';

const ZEROING_METHODS = new Set(['zero_', 'fill_']);
const ZEROS_FACTORIES = new Set(['torch.zeros_like', 'torch.zeros']);

const KEEP_MESSAGE =
  'keeps every gradient tensor allocated between steps (as much memory as the parameters) and adds a memset per ' +
  'tensor; `set_to_none=True` releases them until the next backward, which allocates them afresh.';

/** `p.grad` / `p.grad.data` with a plain name/attribute owner: the text of the owner, or null. */
function gradOwner(file: SourceFile, node: SyntaxNode): string | null {
  let n = node;
  if (n.type === 'attribute' && file.textOf(childByField(n, 'attribute') ?? n) === 'data') {
    const obj = childByField(n, 'object');
    if (obj === null) return null;
    n = obj;
  }
  if (n.type !== 'attribute') return null;
  const attr = childByField(n, 'attribute');
  const owner = childByField(n, 'object');
  if (attr === null || owner === null || file.textOf(attr) !== 'grad') return null;
  if (!/^[A-Za-z_][\w.]*$/.test(file.textOf(owner))) {
    // `self.params[i].grad` etc. are still gradients; only the fix needs a simple owner.
    return file.textOf(owner).includes('\n') ? null : file.textOf(owner);
  }
  return file.textOf(owner);
}

/** Inside the implementation of zero_grad or of a set_to_none switch (`if set_to_none: ... else: p.grad.zero_()`). */
function implementsSetToNone(file: SourceFile, node: SyntaxNode): boolean {
  for (let p = node.parent; p !== null; p = p.parent) {
    if (p.type === 'if_statement' || p.type === 'elif_clause' || p.type === 'conditional_expression') {
      if (file.textOf(p.type === 'conditional_expression' ? p : (childByField(p, 'condition') ?? p)).includes('set_to_none')) return true;
    }
    if (p.type === 'function_definition') {
      // An optimizer's or wrapper's own `zero_grad` implementation (fairseq's FP16Optimizer zeroes a
      // preallocated flat fp32 buffer on purpose) is where the choice is made, not where it is misused.
      const name = childByField(p, 'name');
      if (name !== null && file.textOf(name) === 'zero_grad') return true;
      const params = childByField(p, 'parameters');
      return params !== null && file.textOf(params).includes('set_to_none');
    }
  }
  return false;
}

/** Under `if p.grad is None:` — creating a missing gradient (e.g. for an all-reduce), not zeroing one. */
function initialisesMissingGrad(file: SourceFile, node: SyntaxNode, owner: string): boolean {
  for (let p = node.parent; p !== null; p = p.parent) {
    if (p.type === 'if_statement' || p.type === 'elif_clause') {
      const cond = childByField(p, 'condition');
      if (cond !== null && new RegExp(`${owner.replace(/[.[\]()]/g, '\\$&')}\\.grad\\s+is\\s+None`).test(file.textOf(cond))) return true;
    }
    if (p.type === 'function_definition') return false;
  }
  return false;
}

function isZeroLiteral(file: SourceFile, node: SyntaxNode | undefined): boolean {
  return node !== undefined && /^0(\.0*)?$/.test(file.textOf(node));
}

/** Local `def zero_grad(self)` without a set_to_none parameter: `x.zero_grad()` may call it. */
function hasCustomZeroGradWithoutFlag(file: SourceFile): boolean {
  for (const def of file.nodesOfType('function_definition')) {
    const name = childByField(def, 'name');
    const params = childByField(def, 'parameters');
    if (name !== null && file.textOf(name) === 'zero_grad' && (params === null || !file.textOf(params).includes('set_to_none'))) return true;
  }
  return false;
}

/** One top-level statement's findings, relative to it, in the order the rule reports them. */
interface UnitFindings {
  /** From `zero_grad`, `zero_` and `fill_` calls (one list each), then from assignments. */
  readonly groups: readonly (readonly RelativeFinding[])[];
}

const NO_FINDINGS: UnitFindings = { groups: [[], [], [], []] };
const CALL_GROUPS = ['zero_grad', 'zero_', 'fill_'];
const unitCache = new NodeMemo<UnitFindings>('MH003.unit');

export const zeroGradNotNone: Rule = {
  code: 'MH003',
  name: 'zero-grad-not-none',
  severity: 'warning',
  summary: 'Gradients zeroed in place instead of set to None: they stay allocated between steps.',
  check(file, _session, options) {
    const target = options.targetTorch;
    // Before 2.0 zero_grad() defaulted to set_to_none=False; the flag itself exists since 1.7.
    const bareIsZeroing = target !== null && !torchAtLeast(target, 2, 0) && torchAtLeast(target, 1, 7);
    // Findings depend on their statement, the imports (zeros factories) and, for bare zero_grad(),
    // whether the file defines its own zero_grad without the flag.
    const customZeroGrad = bareIsZeroing && hasCustomZeroGradWithoutFlag(file);
    const signature = `${importSignature(file)}|${bareIsZeroing ? (customZeroGrad ? 'custom' : 'bare') : ''}`;
    const units = unitsOf(file).map((unit) =>
      unitCache.get(file, unit, signature, () => {
        const groups = [...CALL_GROUPS.map((m) => callFindings(file, unitCallsNamed(file, unit, m), bareIsZeroing, customZeroGrad)), assignmentFindings(file, unitNodesOfType(file, unit, 'assignment'))];
        return groups.every((g) => g.length === 0) ? NO_FINDINGS : { groups: groups.map((g) => toRelative(unit, g)) };
      }),
    );
    const findings: RuleFinding[] = [];
    for (let g = 0; g < NO_FINDINGS.groups.length; g++) for (const u of units) if (u.groups[g].length > 0) findings.push(...fromRelative(u.groups[g]));
    return findings;
  },
};

function callFindings(file: SourceFile, candidates: readonly SyntaxNode[], bareIsZeroing: boolean, customZeroGrad: boolean): RuleFinding[] {
  const findings: RuleFinding[] = [];
  for (const call of candidates) {
    const method = calleeMethod(file, call);
    const fn = childByField(call, 'function');
    if (method === null || fn === null || fn.type !== 'attribute') continue;

    if (method === 'zero_grad') {
      const kw = keywordArgument(file, call, 'set_to_none');
      const positional = positionalArguments(call);
      const flag = kw ?? positional[0] ?? null;
      if (flag !== null) {
        if (file.textOf(flag) !== 'False') continue;
        findings.push({
          start: call.start,
          end: call.end,
          message: `\`zero_grad(set_to_none=False)\` ${KEEP_MESSAGE}`,
          fix: { title: 'Use `set_to_none=True`', edits: [{ start: flag.start, end: flag.end, newText: 'True' }] },
        });
        continue;
      }
      if (!bareIsZeroing || hasSplat(call)) continue;
      if (customZeroGrad) continue;
      const edit = appendArgument(call, 'set_to_none=True');
      findings.push({
        start: call.start,
        end: call.end,
        message: `On torch < 2.0 \`zero_grad()\` defaults to \`set_to_none=False\`, which ${KEEP_MESSAGE}`,
        fix: edit === null ? null : { title: 'Pass `set_to_none=True`', edits: [edit] },
      });
      continue;
    }

    if (ZEROING_METHODS.has(method)) {
      if (method === 'fill_' && !isZeroLiteral(file, positionalArguments(call)[0])) continue;
      if (method === 'zero_' && positionalArguments(call).length > 0) continue;
      const receiver = childByField(fn, 'object');
      if (receiver === null) continue;
      const owner = gradOwner(file, receiver);
      if (owner === null || implementsSetToNone(file, call)) continue;
      const stmt = statementOfCall(call);
      const simpleOwner = /^[A-Za-z_][\w.]*$/.test(owner);
      findings.push({
        start: call.start,
        end: call.end,
        message: `Zeroing \`${file.textOf(receiver)}\` in place ${KEEP_MESSAGE.replace('; `set_to_none=True`', '; `' + owner + '.grad = None`')}`,
        fix:
          stmt !== null && simpleOwner
            ? { title: `Set \`${owner}.grad = None\``, edits: [{ start: call.start, end: call.end, newText: `${owner}.grad = None` }] }
            : null,
      });
    }
  }
  return findings;
}

/**
 * A fresh zero tensor: `torch.zeros_like(p)`, `torch.zeros(...)`, `x.new().resize_as_(x).zero_()`,
 * and either wrapped in `Variable(...)` (pre-0.4 code).
 */
function isZeros(file: SourceFile, expr: SyntaxNode): boolean {
  let n = expr;
  for (let i = 0; i < 4 && n.type === 'call'; i++) {
    const name = calleeName(file, n);
    if (name !== null && ZEROS_FACTORIES.has(name)) return true;
    if (name === 'torch.autograd.Variable' || name === 'torch.autograd.variable.Variable') {
      const inner = positionalArguments(n)[0];
      if (inner === undefined) return false;
      n = inner;
      continue;
    }
    // `.zero_()` on a new tensor (not on the existing grad: that is the in-place case above).
    return calleeMethod(file, n) === 'zero_' && /\.new(_zeros|_empty)?\s*\(/.test(file.textOf(n));
  }
  return false;
}

function assignmentFindings(file: SourceFile, assignments: readonly SyntaxNode[]): RuleFinding[] {
  const findings: RuleFinding[] = [];
  for (const assign of assignments) {
    const left = childByField(assign, 'left');
    const right = childByField(assign, 'right');
    if (left === null || right === null || right.type !== 'call') continue;
    const owner = gradOwner(file, left);
    if (owner === null) continue;
    if (!isZeros(file, right)) continue;
    if (initialisesMissingGrad(file, assign, owner) || implementsSetToNone(file, assign)) continue;
    const whole = assign.parent !== null && assign.parent.type === 'expression_statement';
    findings.push({
      start: assign.start,
      end: assign.end,
      message: `Assigning zeros to \`${file.textOf(left)}\` ${KEEP_MESSAGE.replace('; `set_to_none=True`', '; `' + owner + '.grad = None`')}`,
      fix: whole && /^[A-Za-z_][\w.]*$/.test(owner) ? { title: `Set \`${owner}.grad = None\``, edits: [{ start: assign.start, end: assign.end, newText: `${owner}.grad = None` }] } : null,
    });
  }
  return findings;
}

export const rule = zeroGradNotNone;
