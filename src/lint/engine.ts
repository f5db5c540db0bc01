// Runs the selected rules over one SourceFile, then applies `# noqa` suppression.
import { allRules } from './rules';
import { noqaByLine } from './noqa';
import type { SourceFile } from './syntax';
import type { Finding, Rule, RuleCode, RuleOptions, TorchVersion } from './types';

export interface LintSettings {
  /** Codes, code prefixes ("MH00"), rule names or "ALL"; null selects every rule. */
  readonly select: readonly string[] | null;
  readonly ignore: readonly string[];
  readonly targetTorch: TorchVersion | null;
}

export const defaultSettings: LintSettings = { select: null, ignore: [], targetTorch: null };

function matches(rule: Rule, pattern: string): boolean {
  const p = pattern.trim();
  if (p === '') return false;
  if (p.toUpperCase() === 'ALL') return true;
  return rule.code.startsWith(p.toUpperCase()) || rule.name === p.toLowerCase();
}

export function selectRules(settings: LintSettings, rules: readonly Rule[] = allRules): Rule[] {
  return rules.filter(
    (r) => (settings.select === null || settings.select.some((p) => matches(r, p))) && !settings.ignore.some((p) => matches(r, p)),
  );
}

/** Unknown codes or names in select/ignore: reported to the user rather than silently ignored. */
export function unknownRuleSelectors(patterns: readonly string[], rules: readonly Rule[] = allRules): string[] {
  return patterns.filter((p) => p.trim() !== '' && !rules.some((r) => matches(r, p)));
}

/** A rule that threw: its findings are left out, every other rule's are kept. */
export interface RuleFailure {
  readonly code: RuleCode;
  readonly name: string;
  /** The error's message (one line). */
  readonly message: string;
  readonly error: unknown;
}

/** What a lint returns: the findings of every rule that ran to the end, and the rules that threw. */
export interface LintResult {
  readonly findings: Finding[];
  readonly failures: RuleFailure[];
}

/**
 * Lints one version with the selected rules. A rule that throws never takes the other rules' findings
 * down with it: its failure is returned next to them (the CLI and the editor both publish the findings
 * and log the failure once, see FailureLog).
 */
export function lint(file: SourceFile, settings: LintSettings = defaultSettings, rules: readonly Rule[] = allRules): LintResult {
  const options: RuleOptions = { targetTorch: settings.targetTorch };
  const findings: Finding[] = [];
  const failures: RuleFailure[] = [];
  for (const rule of selectRules(settings, rules)) {
    let raw;
    try {
      raw = rule.check(file, file.session, options);
    } catch (err) {
      const message = (err instanceof Error ? err.message : String(err)).split('\n')[0];
      failures.push({ code: rule.code, name: rule.name, message, error: err });
      continue;
    }
    for (const f of raw) {
      findings.push({
        code: rule.code,
        name: rule.name,
        severity: f.severity ?? rule.severity,
        message: f.message,
        start: f.start,
        end: f.end,
        fix: f.fix ?? null,
      });
    }
  }
  const noqa = noqaByLine(file);
  const kept = noqa.size === 0 ? findings : findings.filter((f) => !suppressed(f, file, noqa));
  kept.sort((a, b) => a.start - b.start || a.code.localeCompare(b.code));
  return { findings: dedupe(kept), failures };
}

/**
 * What the CLI and the editor both do with one version: lint it, log each rule failure once through
 * `log` (as `where`), and return the findings to publish, which a failing rule never empties: the
 * editor replaces its diagnostics with them (never keeps stale ones), the CLI reports them.
 */
export function lintAndLog(file: SourceFile, settings: LintSettings, log: FailureLog, where: string, rules: readonly Rule[] = allRules): Finding[] {
  const { findings, failures } = lint(file, settings, rules);
  log.report(where, failures);
  return findings;
}

/** Findings of a lint in which no rule may fail (tests, benchmarks): a rule that throws is an error here. */
export function lintFile(file: SourceFile, settings: LintSettings = defaultSettings): Finding[] {
  const { findings, failures } = lint(file, settings);
  if (failures.length > 0) {
    const f = failures[0];
    throw new Error(`rule ${f.code} (${f.name}) failed: ${f.message}`, { cause: f.error });
  }
  return findings;
}

/** The one line logged for a rule failure. */
export function describeRuleFailure(where: string, f: RuleFailure): string {
  return `${where}: internal error in ${f.code} (${f.name}): ${f.message}; its findings are left out, the other rules' are kept`;
}

/**
 * Logs each rule failure once (per place, rule and message), so a rule that throws on every keystroke
 * does not flood the log. One per CLI run or editor controller; shared by both.
 */
export class FailureLog {
  private readonly seen = new Set<string>();

  constructor(private readonly write: (line: string, failure: RuleFailure) => void) {}

  /** Logs the failures not logged before; returns how many there were in all. */
  report(where: string, failures: readonly RuleFailure[]): number {
    for (const f of failures) {
      const key = `${where}\u0000${f.code}\u0000${f.message}`;
      if (this.seen.has(key)) continue;
      this.seen.add(key);
      this.write(describeRuleFailure(where, f), f);
    }
    return failures.length;
  }
}

function suppressed(f: Finding, file: SourceFile, noqa: ReadonlyMap<number, ReadonlySet<string> | 'all'>): boolean {
  for (const line of new Set([file.lineOf(f.start), file.lineOf(Math.max(f.start, f.end - 1))])) {
    const codes = noqa.get(line);
    if (codes === undefined) continue;
    if (codes === 'all' || codes.has(f.code) || codes.has(f.name)) return true;
  }
  return false;
}

function dedupe(findings: Finding[]): Finding[] {
  const seen = new Set<string>();
  return findings.filter((f) => {
    const key = `${f.code}:${f.start}:${f.end}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
