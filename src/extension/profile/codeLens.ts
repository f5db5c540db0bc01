// "Profile this step" / "Predict memory on CUDA" above functions that look like training steps, in Python
// files and in notebook cells.
import * as vscode from 'vscode';
import type { Linter } from '../../lint';
import { isNotebookCell, type DiagnosticsController } from '../lint/diagnostics';
import { sourceOf } from '../lint/sourceOf';
import { onSettingsChanged, readHintsConfig } from '../settings';
import { loopTargets, trainingSteps } from './stepFinder';

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
    // Notebook cells too: their steps run from the notebook's cells exported to a temporary script.
    if (!readHintsConfig(document.uri).codeLens || (document.uri.scheme !== 'file' && !isNotebookCell(document))) return [];
    const source = sourceOf(document, this.diagnostics, this.linter);
    const trusted = vscode.workspace.isTrusted;
    const steps = trainingSteps(source);
    const stepLenses = steps.flatMap((step) => {
      const at = document.positionAt(step.defStart);
      const range = new vscode.Range(at, at);
      const lenses = [
        new vscode.CodeLens(range, {
          title: trusted ? '$(pulse) Profile this step' : '$(lock) Profile this step (trust the workspace first)',
          tooltip: `memhint: run ${step.name}() under the memory profiler`,
          command: 'memhint.profileStep',
          arguments: [document.uri, step.name],
        }),
      ];
      // Prediction resolves the step as a module-level name and calls a setup function for its arguments.
      if (trusted && !step.name.includes('.')) {
        lenses.push(
          new vscode.CodeLens(range, {
            title: '$(beaker) Predict memory on CUDA',
            tooltip: `memhint: predict ${step.name}()'s GPU memory per line on meta tensors (no GPU needed; torch >= 2.0)`,
            command: 'memhint.predict',
            arguments: [document.uri, step.name],
          }),
        );
      }
      return lenses;
    });
    // Inline training loops (nanoGPT, tutorials): each iteration is one step, as `profile train.py:LINE`.
    const loopLenses = loopTargets(source, steps).map((loop) => {
      const at = document.positionAt(loop.start);
      const where = `${loop.keyword} loop on line ${loop.line}`;
      return new vscode.CodeLens(new vscode.Range(at, at), {
        title: trusted ? '$(pulse) Profile this loop' : '$(lock) Profile this loop (trust the workspace first)',
        tooltip: `memhint: run the script; each iteration of this ${where} is one profiled step`,
        command: 'memhint.profileStep',
        arguments: [document.uri, null, loop.line],
      });
    });
    return [...stepLenses, ...loopLenses];
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
