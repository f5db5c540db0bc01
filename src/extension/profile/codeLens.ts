// "Profile this step" above functions that look like training steps.
import * as vscode from 'vscode';
import type { Linter } from '../../lint';
import type { DiagnosticsController } from '../lint/diagnostics';
import { sourceOf } from '../lint/sourceOf';
import { onSettingsChanged, readHintsConfig } from '../settings';
import { trainingSteps } from './stepFinder';

export class StepCodeLensProvider implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly disposables: vscode.Disposable[];

  constructor(
    private readonly diagnostics: DiagnosticsController,
    private readonly linter: Linter,
  ) {
    this.disposables = [
      this.changed,
      onSettingsChanged((e) => {
        if (e.affectsConfiguration('memhint.codeLens')) this.changed.fire();
      }),
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.changed.fire()),
    ];
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    if (!readHintsConfig(document.uri).codeLens || document.uri.scheme !== 'file') return [];
    const source = sourceOf(document, this.diagnostics, this.linter);
    return trainingSteps(source).map((step) => {
      const at = document.positionAt(step.defStart);
      return new vscode.CodeLens(new vscode.Range(at, at), {
        title: vscode.workspace.isTrusted ? '$(pulse) Profile this step' : '$(lock) Profile this step (trust the workspace first)',
        tooltip: `memhint: run ${step.name}() under the memory profiler`,
        command: 'memhint.profileStep',
        arguments: [document.uri, step.name],
      });
    });
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
