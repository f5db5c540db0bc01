// Out-of-sample accuracy of the linter: hand labels from eval/accuracy/manifest-*.json matched against findings.
// Pure functions only (no I/O), so the matcher is unit-tested and scripts/eval-accuracy.mjs stays a thin driver.

/** A place where a PyTorch memory expert wants the rule's warning; any line in [line, endLine] is a fair anchor. */
export interface Label {
  readonly code: string;
  readonly line: number;
  readonly endLine?: number;
  readonly note?: string;
}

/** What the linter reported, reduced to what matching needs (1-based line). */
export interface ReportedFinding {
  readonly code: string;
  readonly line: number;
  readonly message?: string;
}

export type Split = 'dev' | 'test';

export interface ManifestEntry {
  readonly id: string;
  readonly file: string;
  readonly repo: string;
  readonly path: string;
  readonly commit: string | null;
  readonly url: string;
  readonly license: string;
  readonly kind: string;
  readonly split: Split;
  readonly sha256?: string;
  readonly labels: readonly Label[];
  readonly notes?: string;
}

/** A manifest file of eval/accuracy: `manifest-<name>.json`. */
const MANIFEST_FILE = /^manifest-([\w-]+)\.json$/;

/**
 * The manifests to measure, in file order: every one when `wanted` is empty, else those named in `wanted`.
 * A name is the file (`manifest-c.json`), its stem (`manifest-c`) or its suffix (`c`), so that one collector's
 * held-out manifest can be measured alone. Throws on a name that matches no manifest, so a typo cannot silently
 * measure nothing (or everything).
 */
export function selectManifests(available: readonly string[], wanted: readonly string[]): string[] {
  const manifests = available.filter((f) => MANIFEST_FILE.test(f)).sort();
  if (wanted.length === 0) return manifests;
  const chosen = new Set<string>();
  for (const name of wanted) {
    const file = manifests.find((f) => f === name || f === `${name}.json` || f === `manifest-${name}.json`);
    if (file === undefined) {
      const known = manifests.map((f) => f.replace(MANIFEST_FILE, '$1')).join(', ') || 'none';
      throw new Error(`no manifest named ${JSON.stringify(name)} (known: ${known})`);
    }
    chosen.add(file);
  }
  return manifests.filter((f) => chosen.has(f));
}

export interface ScriptMatch {
  /** Each label paired with the one finding that matched it. */
  readonly matched: ReadonlyArray<{ readonly label: Label; readonly finding: ReportedFinding }>;
  /** Findings on no label of their code: false positives. */
  readonly falsePositives: readonly ReportedFinding[];
  /** Further findings inside an already-matched label of their code (a second call on the same problem). */
  readonly duplicates: readonly ReportedFinding[];
  /** Labels no finding matched: misses. */
  readonly misses: readonly Label[];
}

export const RULE_CODES: readonly string[] = Array.from({ length: 15 }, (_, i) => `MH${String(i + 1).padStart(3, '0')}`);

const endOf = (l: Label): number => l.endLine ?? l.line;
const contains = (l: Label, line: number): boolean => l.line <= line && line <= endOf(l);

/**
 * Pairs findings with labels: same code, finding line within [line, endLine], each label used at most once.
 * Per code, findings are taken in line order and each goes to the unmatched containing label that ends first,
 * which matches as many findings as possible when ranges overlap (points-to-intervals greedy).
 */
export function matchScript(labels: readonly Label[], findings: readonly ReportedFinding[]): ScriptMatch {
  const matched: Array<{ label: Label; finding: ReportedFinding }> = [];
  const falsePositives: ReportedFinding[] = [];
  const duplicates: ReportedFinding[] = [];
  const used = new Set<Label>();
  const sorted = [...findings].sort((a, b) => a.line - b.line || a.code.localeCompare(b.code));
  for (const f of sorted) {
    const candidates = labels.filter((l) => l.code === f.code && contains(l, f.line));
    const free = candidates.filter((l) => !used.has(l)).sort((a, b) => endOf(a) - endOf(b) || a.line - b.line);
    if (free.length > 0) {
      used.add(free[0]);
      matched.push({ label: free[0], finding: f });
    } else if (candidates.length > 0) {
      duplicates.push(f);
    } else {
      falsePositives.push(f);
    }
  }
  const misses = labels.filter((l) => !used.has(l));
  return { matched, falsePositives, duplicates, misses };
}

export interface RuleScore {
  readonly code: string;
  readonly labels: number;
  readonly truePositives: number;
  readonly falsePositives: number;
  readonly duplicates: number;
  readonly misses: number;
  /** null when the rule reported nothing (precision undefined). */
  readonly precision: number | null;
  /** null when there is no label of the rule (recall undefined). */
  readonly recall: number | null;
}

export interface SplitScore {
  readonly scripts: number;
  readonly repos: number;
  /** Rules the linter implements, each with its figures. */
  readonly rules: readonly RuleScore[];
  /** Totals over the implemented rules: the headline figure. */
  readonly implemented: RuleScore;
  /** Rules with labels that the linter does not implement yet: recall 0 by construction. */
  readonly pending: readonly RuleScore[];
  /** Totals over every labelled rule, implemented or not. */
  readonly allRules: RuleScore;
}

function ratio(num: number, den: number): number | null {
  return den === 0 ? null : num / den;
}

function score(code: string, tp: number, fp: number, dup: number, fn: number): RuleScore {
  return {
    code,
    labels: tp + fn,
    truePositives: tp,
    falsePositives: fp,
    duplicates: dup,
    misses: fn,
    precision: ratio(tp, tp + fp),
    recall: ratio(tp, tp + fn),
  };
}

function total(code: string, rows: readonly RuleScore[]): RuleScore {
  const sum = (k: 'truePositives' | 'falsePositives' | 'duplicates' | 'misses'): number => rows.reduce((n, r) => n + r[k], 0);
  return score(code, sum('truePositives'), sum('falsePositives'), sum('duplicates'), sum('misses'));
}

/** Per-rule and total figures over the given scripts' matches. */
export function scoreSplit(
  entries: readonly ManifestEntry[],
  matches: ReadonlyMap<string, ScriptMatch>,
  implementedCodes: ReadonlySet<string>,
): SplitScore {
  const counts = new Map<string, { tp: number; fp: number; dup: number; fn: number }>();
  const bump = (code: string, k: 'tp' | 'fp' | 'dup' | 'fn'): void => {
    const c = counts.get(code) ?? { tp: 0, fp: 0, dup: 0, fn: 0 };
    c[k]++;
    counts.set(code, c);
  };
  for (const e of entries) {
    const m = matches.get(e.id);
    if (!m) continue;
    for (const x of m.matched) bump(x.label.code, 'tp');
    for (const f of m.falsePositives) bump(f.code, 'fp');
    for (const f of m.duplicates) bump(f.code, 'dup');
    for (const l of m.misses) bump(l.code, 'fn');
  }
  const row = (code: string): RuleScore => {
    const c = counts.get(code) ?? { tp: 0, fp: 0, dup: 0, fn: 0 };
    return score(code, c.tp, c.fp, c.dup, c.fn);
  };
  const codes = [...new Set([...RULE_CODES, ...counts.keys()])].sort();
  const rules = codes.filter((c) => implementedCodes.has(c)).map(row);
  const pending = codes.filter((c) => !implementedCodes.has(c) && (counts.get(c)?.fn ?? 0) > 0).map(row);
  const measured = entries.filter((e) => matches.has(e.id));
  return {
    scripts: measured.length,
    repos: new Set(measured.map((e) => e.repo)).size,
    rules,
    implemented: total('implemented', rules),
    pending,
    allRules: total('all', [...rules, ...pending]),
  };
}

const pct = (x: number | null): string => (x === null ? '–' : x.toFixed(2));

/** A Markdown table of one split's figures: each implemented rule, their total, then the pending rules. */
export function renderSplitTable(s: SplitScore): string {
  const head = '| rule | labels | found | false pos. | dup. | missed | precision | recall |\n|---|---:|---:|---:|---:|---:|---:|---:|';
  const line = (name: string, r: RuleScore): string =>
    `| ${name} | ${r.labels} | ${r.truePositives} | ${r.falsePositives} | ${r.duplicates} | ${r.misses} | ${pct(r.precision)} | ${pct(r.recall)} |`;
  // Every implemented rule gets a row, so a rule without labels still shows that it raised no false alarm.
  const rows = s.rules.map((r) => line(r.code, r));
  rows.push(line('**implemented rules**', s.implemented));
  for (const r of s.pending) rows.push(line(`${r.code} (not implemented)`, r));
  if (s.pending.length > 0) rows.push(line('**all labelled rules**', s.allRules));
  return `${head}\n${rows.join('\n')}`;
}
