// The rule registry, in code order. Each rule lives in its own file as a pure function of the tree.
import type { Rule } from '../types';

export const allRules: readonly Rule[] = [
  // rules are registered here, one import per file, sorted by code
];

export function ruleByCode(code: string): Rule | undefined {
  return allRules.find((r) => r.code === code.toUpperCase() || r.name === code.toLowerCase());
}
