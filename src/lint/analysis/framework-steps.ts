// Training steps a framework backpropagates for the code: the method returns the loss and the library
// calls backward() and the optimizer itself, so the method shows no gradient call of its own. Lightning's
// `training_step` of a LightningModule, and `compute_loss` / `training_step` of a Hugging Face `Trainer`
// subclass (`class DistillationTrainer(Trainer)`, `Seq2SeqTrainer`, TRL's `SFTTrainer`). A forward there
// records a graph that the framework's backward walks.
import { childByField, type SourceFile, type SyntaxNode } from '../syntax';
import { enclosingClass, modelFacts } from './models';

/** Bases of a Hugging Face (or TRL) trainer: the class name ends in `Trainer`. */
const TRAINER_BASE = /(^|[\s,(.])\w*Trainer\s*($|[,)])/;

/** `fn` is a framework-driven training step (see above). */
export function isFrameworkTrainingStep(file: SourceFile, fn: SyntaxNode): boolean {
  if (fn.type !== 'function_definition') return false;
  const name = file.textOf(childByField(fn, 'name') ?? fn);
  if (name !== 'training_step' && name !== 'compute_loss') return false;
  const cls = enclosingClass(fn);
  if (cls === null) return false;
  const className = file.textOf(childByField(cls, 'name') ?? cls);
  if (name === 'training_step' && modelFacts(file).lightningClasses.has(className)) return true;
  const bases = childByField(cls, 'superclasses');
  return bases !== null && TRAINER_BASE.test(file.textOf(bases));
}
