// Loops that walk a data set, recognised beyond steps.ts's loader names (which other rules' per-step
// analysis relies on and which stay as they are): MH012 asks whether a collection grows with the data an
// evaluation walks, and real evaluation code walks it under many names. torchtext's iterators
// (`for batch in test_iter`, `def evaluate(model, iterator, criterion)`), Keras-style generators
// (`val_generator`), data sets iterated directly (`for x, y in test_data`), a parameter the file's calls
// hand a loader, and manual batching over a tensor (`for i in range(0, len(X_test), batch_size)`).
// Loops over time steps, layers or a replay buffer's chunks are none of these: the collection there grows
// with the sequence or the model, not with the data set.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { positionalArguments } from './context';
import { EVAL_DATA } from './eval-loops';
import { loopIterable } from './steps';
import { parameterNames } from './parameters';
import { parameterValuesOf } from './values';

/** Iterables named as a data set or an iterator over one (whole name, after any `self.`/`args.` prefix). */
const DATA_NAME = /^(?:\w+_)?(?:iterator|iter|data_?iter|dataset|data_?set|ds|data|generator|data_?gen|batches|samples|examples)$/i;
/** Names that walk something else than data, whatever the suffix (`time_iter`, `layer_data`, `replay_data`). */
const NOT_DATA = /time|step|layer|block|token|epoch|param|grad|buffer|replay|memory|frame|chunk|model|net/i;
/** A loader or evaluation-data value handed in (`evaluate(model, valid_iterator)`, `test(net, dl)`). */
const LOADER_VALUE = /loader|(?:^|[^a-z])dl(?:[^a-z]|$)|DataLoader|iterator|[^a-z]iter$|BucketIterator/i;
/** The batch size in a `range()` that steps through a tensor batch by batch. */
const BATCH_SIZE = /batch|(?:^|[^a-z])bs(?:[^a-z]|$)/i;
/** A number of batches: `n_batches`, `num_batches`, `total_batches`, `len(x_test) // batch_size`, `ceil(n / bs)`. */
const BATCH_COUNT = /(?:^|[^a-z])(?:n|num|number_of|total|nb)_?(?:eval_|val_|test_)?batch(?:es)?(?![a-z])|batches\b|\/\/?\s*\(?\s*(?:[\w.]*batch[\w.]*|bs)\b/i;

/** The last dotted segment of a name: `self.test_data` -> `test_data`. */
function lastSegment(text: string): string {
  return text.slice(text.lastIndexOf('.') + 1);
}

/** Held-out arrays walked sample by sample: `X_test`, `x_val`, `test_images`, `valid_inputs`. */
const EVAL_ARRAY = /(?:^|[^a-z])(?:x|inputs?|features?|images?|imgs?)_?(?:test|val|valid|eval)(?![a-z])|(?:^|[^a-z])(?:test|val|valid|eval)_?(?:x|inputs?|features?|images?|imgs?)(?![a-z])/i;

/**
 * `range(0, len(X_test), batch_size)`, `range(num_batches)`, `range(len(x) // bs)`, and the samples of a
 * held-out set by index: `range(len(test_dataset))`, `range(len(X_test))`.
 */
function batchesByRange(file: SourceFile, iterable: SyntaxNode): boolean {
  if (iterable.type !== 'call' || file.textOf(childByField(iterable, 'function') ?? iterable) !== 'range') return false;
  const args = positionalArguments(iterable);
  if (args.length === 3) return BATCH_SIZE.test(file.textOf(args[2]));
  if (args.length === 0) return false;
  // A count of batches (`num_batches`, `len(x) // batch_size`), not the batch size itself: `range(batch_size)`
  // walks the samples or tasks of one batch (a meta-batch's tasks), not the data set.
  const stop = file.textOf(args[args.length - 1]);
  if (BATCH_COUNT.test(stop)) return true;
  const counted = /^len\(\s*([\w.]+)\s*\)$/.exec(stop)?.[1];
  return counted !== undefined && (EVAL_ARRAY.test(counted) || EVAL_DATA.some((re) => re.test(counted)));
}

/** A parameter of the loop's function that every call of the file hands a loader or an iterator. */
function handedLoader(file: SourceFile, loop: SyntaxNode, iterable: SyntaxNode): boolean {
  if (iterable.type !== 'identifier') return false;
  let fn: SyntaxNode | null = loop.parent;
  while (fn !== null && fn.type !== 'function_definition') fn = fn.parent;
  const name = file.textOf(iterable);
  if (fn === null || !parameterNames(file, fn).includes(name)) return false;
  const values = parameterValuesOf(file, fn, name);
  return values !== null && values.length > 0 && values.every((v) => LOADER_VALUE.test(file.textOf(v)) || EVAL_DATA.some((re) => re.test(file.textOf(v))));
}

/** The for loop walks a data set or batches of it, by any of the names and shapes above. */
export function walksData(file: SourceFile, loop: SyntaxNode): boolean {
  const found = loopIterable(file, loop);
  if (found === null) return false;
  const it = found.iterable;
  if (batchesByRange(file, it)) return true;
  if (it.type !== 'identifier' && it.type !== 'attribute') return false;
  const text = file.textOf(it);
  if (EVAL_DATA.some((re) => re.test(text))) return true;
  const last = lastSegment(text);
  if (DATA_NAME.test(last) && !NOT_DATA.test(last)) return true;
  return handedLoader(file, loop, it);
}
