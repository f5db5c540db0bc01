// Public face of the linter for the CLI and the extension.
import { PythonDocument, type DocumentOptions } from './document';
import { lintFile, defaultSettings, type LintHooks, type LintSettings } from './engine';
import { loadPythonParser, type PythonParser } from './parser';
import type { Finding } from './types';

export { PythonDocument, type DocumentOptions, type TextChange } from './document';
export { lintFile, selectRules, unknownRuleSelectors, defaultSettings, type LintHooks, type LintSettings } from './engine';
export { allRules, ruleByCode } from './rules';
export type { Finding, Fix, TextEdit, Rule, RuleCode, Severity, TorchVersion } from './types';
export { parseTorchVersion } from './types';
export { SourceFile } from './syntax';

export class Linter {
  private constructor(readonly parser: PythonParser) {}

  static async create(wasmDir?: string): Promise<Linter> {
    return new Linter(await loadPythonParser(wasmDir));
  }

  /** A document that supports incremental re-lint after edits; call dispose() when done. */
  open(text: string, options: DocumentOptions = {}): PythonDocument {
    return new PythonDocument(this.parser, text, options);
  }

  /** One-shot lint of a text. */
  lintText(text: string, settings: LintSettings = defaultSettings, hooks: LintHooks = {}): Finding[] {
    const doc = this.open(text);
    try {
      return lintFile(doc.source, settings, hooks);
    } finally {
      doc.dispose();
    }
  }
}
