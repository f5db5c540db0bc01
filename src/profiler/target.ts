// `train.py::train_step` → script + function (dotted allowed: `Trainer.step`); `train.py:120` → script +
// the header line of the loop whose iterations are the steps; `train.py` → script (the harness looks for
// the training loop, else profiles the whole script).

export interface TargetSpec {
  readonly script: string;
  readonly function: string | null;
  /** 1-based header line of a `for`/`while` loop; null: the function, or the loop the harness finds. */
  readonly loopLine: number | null;
}

const IDENTIFIER_PATH = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const LOOP_LINE = /^(.+):([0-9]+)$/;

export function parseTarget(text: string): TargetSpec {
  const index = text.lastIndexOf('::');
  if (index < 0) {
    if (!text) throw new Error('missing target: expected SCRIPT.py, SCRIPT.py:LINE or SCRIPT.py::FUNCTION');
    const loop = LOOP_LINE.exec(text);
    if (loop) {
      const line = Number(loop[2]);
      if (line < 1) throw new Error(`line ${loop[2]} is not a line number (target "${text}")`);
      return { script: loop[1], function: null, loopLine: line };
    }
    return { script: text, function: null, loopLine: null };
  }
  const script = text.slice(0, index);
  const fn = text.slice(index + 2);
  if (!script) throw new Error(`missing script in target "${text}"`);
  if (!IDENTIFIER_PATH.test(fn)) throw new Error(`"${fn}" is not a function name (target "${text}")`);
  return { script, function: fn, loopLine: null };
}
