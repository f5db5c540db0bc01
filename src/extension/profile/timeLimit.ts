// A bound on how long the extension waits for another extension's answer. The Python extension's API is
// awaited before a profile or a lint target can start; an extension that never activates or never answers
// must not stall them (the user gets the fallback and a warning instead).

/** Thrown by `within` when the answer did not come in time; its message names what was awaited. */
export class NoAnswerInTime extends Error {}

/**
 * `answer`'s value, or a `NoAnswerInTime` rejection after `ms` milliseconds. The pending answer is not
 * cancelled (nothing can cancel another extension's work); its late value or error is dropped.
 */
export function within<T>(answer: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new NoAnswerInTime(`${what} did not answer within ${Math.round(ms / 1000)} s`)), ms);
  });
  answer.catch(() => undefined);
  return Promise.race([answer, late]).finally(() => clearTimeout(timer));
}
