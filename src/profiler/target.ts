// `train.py::train_step` → script + function. The function may be dotted (`Trainer.step`).

export interface TargetSpec {
  readonly script: string;
  readonly function: string | null;
}

const IDENTIFIER_PATH = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

export function parseTarget(text: string): TargetSpec {
  const index = text.lastIndexOf('::');
  if (index < 0) {
    if (!text) throw new Error('missing target: expected SCRIPT.py or SCRIPT.py::FUNCTION');
    return { script: text, function: null };
  }
  const script = text.slice(0, index);
  const fn = text.slice(index + 2);
  if (!script) throw new Error(`missing script in target "${text}"`);
  if (!IDENTIFIER_PATH.test(fn)) throw new Error(`"${fn}" is not a function name (target "${text}")`);
  return { script, function: fn };
}
