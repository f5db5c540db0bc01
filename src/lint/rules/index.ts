// The rule registry, in code order. Each rule lives in its own file as a pure function of the tree.
import type { Rule } from '../types';
import { rule as mh001 } from './mh001-missing-no-grad';
import { rule as mh002 } from './mh002-retained-graph';
import { rule as mh003 } from './mh003-zero-grad-not-none';
import { rule as mh004 } from './mh004-retain-graph-true';
import { rule as mh005 } from './mh005-empty-cache-in-loop';
import { rule as mh006 } from './mh006-gc-collect-in-loop';
import { rule as mh007 } from './mh007-rebuild-in-loop';
import { rule as mh008 } from './mh008-deprecated-amp';
import { rule as mh009 } from './mh009-blocking-transfer';
import { rule as mh010 } from './mh010-gan-d-step-no-detach';
import { rule as mh011 } from './mh011-frozen-net-requires-grad';
import { rule as mh012 } from './mh012-eval-outputs-on-device';
import { rule as mh013 } from './mh013-dataset-getitem-cuda';
import { rule as mh014 } from './mh014-dataloader-copy-on-read';
import { rule as mh015 } from './mh015-unused-requires-grad';

export const allRules: readonly Rule[] = [
  // rules are registered here, one import per file, sorted by code
  mh001,
  mh002,
  mh003,
  mh004,
  mh005,
  mh006,
  mh007,
  mh008,
  mh009,
  mh010,
  mh011,
  mh012,
  mh013,
  mh014,
  mh015,
];

export function ruleByCode(code: string): Rule | undefined {
  return allRules.find((r) => r.code === code.toUpperCase() || r.name === code.toLowerCase());
}
