// Quick fixes for memhint diagnostics (the rule's own fix, "Ignore MHxxx for this line", rule docs),
// "Fix all memhint issues" as a command and as the source.fixAll.memhint code action kind.
import * as vscode from 'vscode';
import { fixUntilStable, lint, type Linter, type TextEdit } from '../../lint';
import type { DiagnosticsController } from './diagnostics';
import { noqaEdit } from './noqaEdit';
import { findingsAt } from './publishedFixes';

export const FIX_ALL_KIND = vscode.CodeActionKind.SourceFixAll.append('memhint');

/**
 * "Fix all memhint issues" in the quick-fix menu, without its edit: building that edit re-lints the file
 * until stable (45 ms for a 40-line file, 100-270 ms for 80-450-line ones, each pass a full parse), and
 * VS Code asks for quick fixes on every cursor move (the light bulb). The edit is made in
 * resolveCodeAction, only when the user picks the action.
 */
class LazyFixAll extends vscode.CodeAction {
  constructor(readonly document: vscode.TextDocument) {
    super('Fix all memhint issues', vscode.CodeActionKind.QuickFix);
  }
}

export class MemhintCodeActions implements vscode.CodeActionProvider<vscode.CodeAction> {
  static readonly metadata: vscode.CodeActionProviderMetadata = {
    providedCodeActionKinds: [vscode.CodeActionKind.QuickFix, FIX_ALL_KIND],
  };

  constructor(
    private readonly diagnostics: DiagnosticsController,
    private readonly linter: Linter,
  ) {}

  provideCodeActions(document: vscode.TextDocument, range: vscode.Range, context: vscode.CodeActionContext): vscode.CodeAction[] {
    if (context.only !== undefined && !context.only.contains(vscode.CodeActionKind.QuickFix) && !vscode.CodeActionKind.QuickFix.contains(context.only)) {
      // source.fixAll(.memhint), e.g. on save: lints the current text itself, so a pending debounce does not matter.
      if (context.only.contains(FIX_ALL_KIND) || FIX_ALL_KIND.contains(context.only)) {
        const fixAll = this.fixAllAction(document);
        return fixAll === null ? [] : [fixAll];
      }
      return [];
    }
    // The published lint and the edits since: no re-lint here (publishing from inside the request made
    // VS Code replace Ctrl+.'s request with an automatic one, and the menu showed nothing; publishedFixes.ts).
    const published = this.diagnostics.published(document);
    if (published === null) return [];
    const { result, changes } = published;
    const actions: vscode.CodeAction[] = [];
    const at = findingsAt(result.findings, changes, document.offsetAt(range.start), document.offsetAt(range.end), (f) => noqaEdit(result.source, f.start, f.code));
    const seen = new Set<string>();
    for (const { index, finding, fixEdits, ignore } of at) {
      const diagnostic = result.diagnostics[index];
      const key = `${finding.code}:${finding.start}`;
      if (diagnostic === undefined || seen.has(key)) continue;
      seen.add(key);
      if (fixEdits !== null) actions.push(this.fixAction(document, finding.fix!.title, fixEdits, diagnostic));
      if (ignore !== null) {
        const action = new vscode.CodeAction(`Ignore ${finding.code} for this line`, vscode.CodeActionKind.QuickFix);
        action.edit = new vscode.WorkspaceEdit();
        action.edit.replace(document.uri, new vscode.Range(document.positionAt(ignore.start), document.positionAt(ignore.end)), ignore.newText);
        action.diagnostics = [diagnostic];
        actions.push(action);
      }
      const docs = new vscode.CodeAction(`Show documentation for ${finding.code} (${finding.name})`, vscode.CodeActionKind.QuickFix);
      docs.command = { command: 'memhint.showRuleDocs', title: 'Show rule documentation', arguments: [finding.code] };
      actions.push(docs);
    }
    const fixable = result.findings.filter((f) => f.fix !== null).length;
    if (fixable > 1 && actions.length > 0) actions.push(new LazyFixAll(document));
    return actions;
  }

  resolveCodeAction(action: vscode.CodeAction): vscode.CodeAction {
    if (action instanceof LazyFixAll && action.edit === undefined && !action.document.isClosed) {
      action.edit = this.fixAllEdit(action.document) ?? undefined;
    }
    return action;
  }

  private fixAction(document: vscode.TextDocument, title: string, edits: readonly TextEdit[], diagnostic: vscode.Diagnostic): vscode.CodeAction {
    const action = new vscode.CodeAction(title, vscode.CodeActionKind.QuickFix);
    action.edit = new vscode.WorkspaceEdit();
    for (const e of edits) action.edit.replace(document.uri, new vscode.Range(document.positionAt(e.start), document.positionAt(e.end)), e.newText);
    action.diagnostics = [diagnostic];
    action.isPreferred = true;
    return action;
  }

  /** One edit that applies every fix (re-linting between passes, since fixes can shift each other). */
  fixAllEdit(document: vscode.TextDocument): vscode.WorkspaceEdit | null {
    const settings = this.diagnostics.settingsFor(document);
    if (settings === null) return null;
    const text = document.getText();
    const { text: fixed, applied } = fixUntilStable(text, (t) => {
      const doc = this.linter.open(t);
      try {
        return lint(doc.source, settings).findings; // a rule that throws is logged by the diagnostics
      } finally {
        doc.dispose();
      }
    });
    if (applied === 0 || fixed === text) return null;
    // Replace only the changed middle so the cursor and folding elsewhere stay put.
    let prefix = 0;
    while (prefix < text.length && prefix < fixed.length && text[prefix] === fixed[prefix]) prefix++;
    let suffix = 0;
    while (suffix < text.length - prefix && suffix < fixed.length - prefix && text[text.length - 1 - suffix] === fixed[fixed.length - 1 - suffix]) suffix++;
    const edit = new vscode.WorkspaceEdit();
    edit.replace(document.uri, new vscode.Range(document.positionAt(prefix), document.positionAt(text.length - suffix)), fixed.slice(prefix, fixed.length - suffix));
    return edit;
  }

  private fixAllAction(document: vscode.TextDocument): vscode.CodeAction | null {
    const edit = this.fixAllEdit(document);
    if (edit === null) return null;
    const action = new vscode.CodeAction('Fix all memhint issues', FIX_ALL_KIND);
    action.edit = edit;
    return action;
  }
}
