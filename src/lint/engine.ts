// Runs the selected rules over one SourceFile, then applies `# noqa` suppression.
import { allRules } from './rules';
import { noqaByLine } from './noqa';
import type { SourceFile } from './syntax';
import type { Finding, Rule, RuleOptions, TorchVersion } from './types';

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

export interface LintHooks {
  /** Called when a rule throws; the rule's findings are dropped and the lint goes on. Without it, the error propagates. */
  readonly onRuleError?: (rule: Rule, error: unknown) => void;
}

export function lintFile(file: SourceFile, settings: LintSettings = defaultSettings, hooks: LintHooks = {}): Finding[] {
  const options: RuleOptions = { targetTorch: settings.targetTorch };
  const findings: Finding[] = [];
  for (const rule of selectRules(settings)) {
    let raw;
    try {
      raw = rule.check(file, options);
    } catch (err) {
      // In the editor and CLI a rule bug must not take every other finding down with it.
      if (hooks.onRuleError === undefined) throw new Error(`rule ${rule.code} (${rule.name}) failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      hooks.onRuleError(rule, err);
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
  return dedupe(kept);
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
