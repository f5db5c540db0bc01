// Public face of the linter for the CLI and the extension.
import { PythonDocument, type DocumentOptions } from './document';
import { lint, lintFile, defaultSettings, type LintResult, type LintSettings } from './engine';
import { loadPythonParser, type PythonParser } from './parser';
import type { ProjectContext } from './project/types';
import type { Finding } from './types';

export { PythonDocument, type DocumentOptions, type TextChange } from './document';
export {
  lint,
  lintAndLog,
  lintFile,
  selectRules,
  unknownRuleSelectors,
  defaultSettings,
  describeRuleFailure,
  FailureLog,
  type LintResult,
  type LintSettings,
  type RuleFailure,
} from './engine';
export { allRules, ruleByCode } from './rules';
export type { Finding, Fix, TextEdit, Rule, RuleCode, Severity, TorchVersion } from './types';
export { formatTorchVersion, parseTorchVersion } from './types';
export { SourceFile, childByField, type SyntaxNode } from './syntax';
export { AnalysisSession } from './session';
// What the editor needs beyond linting a file: project settings, fix-all, noqa edits, call shapes.
export { ConfigError, findProjectConfig, isExcluded, settingsForFile, type ProjectConfig } from './config';
export { fixUntilStable } from './fix';
export { findTorchPin, TorchPinCache, type TorchPin } from './torch-pin';
export { parseNoqa, noqaCodesEnd } from './noqa';
export { DEFAULT_MAX_FILE_SIZE, oversizeMessage } from './regular-file';
export { calleeMethod } from './analysis/imports';
// Other modules of the project, for rules that follow imports (the owner of the sessions builds one index).
export { ProjectIndex, type ProjectIndexOptions } from './project/project-index';
export type { ProjectContext, ProjectLookup, ProjectModule } from './project/types';

export class Linter {
  private constructor(readonly parser: PythonParser) {}

  /** A linter with a parser of its own (the wasm runtime is initialised once per process). */
  static async create(wasmDir?: string): Promise<Linter> {
    return new Linter(await loadPythonParser(wasmDir));
  }

  /**
   * A document that supports incremental re-lint after edits, with its own analysis session (every
   * memo computed from its versions); call dispose() when done.
   */
  open(text: string, options: DocumentOptions = {}): PythonDocument {
    return new PythonDocument(this.parser, text, options);
  }

  /** One-shot lint of a text in a session of its own: findings and the rules that threw. */
  lint(text: string, settings: LintSettings = defaultSettings, project?: ProjectContext): LintResult {
    const doc = this.open(text, { project, oneShot: true });
    try {
      return lint(doc.source, settings);
    } finally {
      doc.dispose();
    }
  }

  /** One-shot lint of a text in which no rule may fail (tests, benchmarks): a rule that throws is an error. */
  lintText(text: string, settings: LintSettings = defaultSettings, project?: ProjectContext): Finding[] {
    const doc = this.open(text, { project, oneShot: true });
    try {
      return lintFile(doc.source, settings);
    } finally {
      doc.dispose();
    }
  }
}
