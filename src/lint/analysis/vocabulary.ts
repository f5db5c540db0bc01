// Names of things the rules recognise by name alone (before or without resolving imports): one list per
// notion, so every analysis that asks "is this an optimizer?" answers from the same words.

/** torch.optim's optimizer classes. */
const TORCH_OPTIMIZERS: readonly string[] = Object.freeze(['Adam', 'AdamW', 'Adamax', 'SparseAdam', 'NAdam', 'RAdam', 'SGD', 'RMSprop', 'Adagrad', 'Adadelta', 'ASGD', 'Rprop', 'LBFGS']);
/** Common optimizers of other libraries: transformers' Adafactor, apex's fused ones, LAMB, LARS (self-supervised recipes), Lion. */
const OTHER_OPTIMIZERS: readonly string[] = Object.freeze(['Adafactor', 'Lamb', 'LAMB', 'FusedAdam', 'FusedLAMB', 'Lion', 'LARS']);

const TORCH_OPTIMIZER_NAME = new RegExp(`(^|\\.)(${TORCH_OPTIMIZERS.join('|')})$`);
const OPTIMIZER_CLASS = new RegExp(`^(${[...TORCH_OPTIMIZERS, ...OTHER_OPTIMIZERS].join('|')})$`);
// `Adam\w*`: the many Adam variants of third-party packages (`AdamP`, `Adam8bit`, `AdamWScheduleFree`).
const OPTIMIZER_LIKE = new RegExp(`optim|^(${[...TORCH_OPTIMIZERS, ...OTHER_OPTIMIZERS].join('|')}|Adam\\w*)$`, 'i');

/** `Adam`, `optim.Adam`, `torch.optim.SGD`: a (dotted) name whose last segment is a torch.optim class. */
export function isTorchOptimizerName(name: string): boolean {
  return TORCH_OPTIMIZER_NAME.test(name);
}

/** A callee's last name that is a known optimizer class, torch's or another library's (`Adam`, `FusedAdam`, `Lion`). */
export function isOptimizerClass(lastName: string): boolean {
  return OPTIMIZER_CLASS.test(lastName);
}

/**
 * Loosely, in any case: a name that says optimizer (`torch.optim.Adam`, `build_optimizer`), an Adam variant
 * or a known optimizer class. For questions where a false "yes" only keeps a finding back.
 */
export function looksLikeOptimizer(name: string): boolean {
  return OPTIMIZER_LIKE.test(name);
}
