// Conditions that test whether a value is a tensor: `torch.is_tensor(loss)`, `isinstance(loss, torch.Tensor)`,
// `hasattr(loss, "item")`, `isinstance(loss, (int, float))`, possibly negated. Logging code written for both
// tensors and numbers converts in one branch and keeps the value as is in the other
// (`loss.item() if torch.is_tensor(loss) else loss`): the kept branch only runs on a plain number.
import { childByField, namedChildren, type SourceFile, type SyntaxNode } from '../syntax';
import { keyOf } from './keys';

/** The tested value's key, and whether the condition holds exactly when it is a tensor. */
export interface TensorTest {
  readonly key: string;
  readonly whenTensor: boolean;
}

const TENSOR_TYPE = /^(torch\.)?Tensor$/;
const NUMBER_TYPES = /^(int|float|bool|complex|numbers\.(Number|Real|Integral)|np\.(ndarray|floating|integer|generic)|numpy\.(ndarray|floating|integer|generic))$/;
/** Attributes a tensor has and a Python number does not. */
const TENSOR_ATTRIBUTES = /^(item|detach|cpu|numpy|backward|requires_grad|grad_fn)$/;

export function tensorTestOf(file: SourceFile, cond: SyntaxNode | null): TensorTest | null {
  if (cond === null) return null;
  if (cond.type === 'parenthesized_expression') return tensorTestOf(file, namedChildren(cond)[0] ?? null);
  if (cond.type === 'not_operator') {
    const inner = tensorTestOf(file, childByField(cond, 'argument'));
    return inner === null ? null : { key: inner.key, whenTensor: !inner.whenTensor };
  }
  if (cond.type !== 'call') return null;
  const fn = file.textOf(childByField(cond, 'function') ?? cond);
  const args = namedChildren(childByField(cond, 'arguments') ?? cond).filter((a) => a.type !== 'comment');
  const key = keyOf(file, args[0] ?? null);
  if (key === null) return null;
  if ((fn === 'torch.is_tensor' || fn === 'is_tensor') && args.length === 1) return { key, whenTensor: true };
  if (fn === 'hasattr' && args.length === 2 && args[1].type === 'string' && TENSOR_ATTRIBUTES.test(file.textOf(args[1]).replace(/^['"]|['"]$/g, ''))) return { key, whenTensor: true };
  if (fn !== 'isinstance' || args.length !== 2) return null;
  const types = args[1].type === 'tuple' ? namedChildren(args[1]).map((t) => file.textOf(t)) : [file.textOf(args[1])];
  if (types.length > 0 && types.every((t) => TENSOR_TYPE.test(t))) return { key, whenTensor: true };
  if (types.length > 0 && types.every((t) => NUMBER_TYPES.test(t))) return { key, whenTensor: false };
  return null;
}
