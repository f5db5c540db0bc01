// Entry point: wires the controllers together; every disposable goes into context.subscriptions.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { Linter } from '../lint';
import { HintsController } from './hints/controller';
import { MemhintCodeActions } from './lint/codeActions';
import { fixAll, showRuleDocs } from './lint/commands';
import { DiagnosticsController } from './lint/diagnostics';
import { RunningTorch } from './lint/runningTorch';
import { Logger } from './logger';
import { StepCodeLensProvider } from './profile/codeLens';
import { ProfileController } from './profile/controller';
import { NotebookExports } from './profile/notebookExports';
import { openReport } from './profile/openReport';
import { runProfileRequest } from './profile/run';
import { PredictController } from './predict/controller';
import { runPrediction } from './predict/run';
import { ReportStore } from './reportStore';
import { createApi, type MemhintApi } from './testApi';
import { MemorySummaryPanel, SummarySerializer, VIEW_TYPE } from './webview/summaryPanel';

export async function activate(context: vscode.ExtensionContext): Promise<MemhintApi> {
  const log = new Logger();
  context.subscriptions.push(log, vscode.commands.registerCommand('memhint.showLogs', () => log.show()));
  log.info(`memhint ${String((context.extension.packageJSON as { version?: string }).version)} activating (VS Code ${vscode.version}, ${vscode.workspace.isTrusted ? 'trusted' : 'restricted'} workspace)`);

  let linter: Linter;
  try {
    linter = await Linter.create(path.join(context.extensionPath, 'dist'));
  } catch (err) {
    // Without the parser nothing else can work; say so where the user looks, then fail activation.
    log.error('cannot load the Python parser (dist/*.wasm)', err);
    void vscode.window.showErrorMessage('memhint: cannot load its Python parser; see "memhint: Show Logs".');
    throw err;
  }
  const reports = new ReportStore(context.storageUri ?? context.globalStorageUri, log);
  const runningTorch = new RunningTorch(log);
  const diagnostics = new DiagnosticsController(linter, reports, log, context.extensionUri, runningTorch);
  const actions = new MemhintCodeActions(diagnostics, linter);
  // The last notebook profile's cell map: the profile controller records it, the hints read it.
  const notebookExports = new NotebookExports();
  const hints = new HintsController(reports, log, notebookExports);
  const codeLens = new StepCodeLensProvider(diagnostics, linter);
  const profiler = new ProfileController(runProfileRequest, reports, diagnostics, linter, log, notebookExports);
  const predictor = new PredictController(runPrediction, reports, diagnostics, linter, context.workspaceState, log, notebookExports);
  const python = { language: 'python' };

  context.subscriptions.push(
    reports,
    runningTorch,
    diagnostics,
    hints,
    codeLens,
    vscode.languages.registerCodeActionsProvider(python, actions, MemhintCodeActions.metadata),
    vscode.languages.registerCodeLensProvider(python, codeLens),
    vscode.window.registerWebviewPanelSerializer(VIEW_TYPE, new SummarySerializer(context.extensionUri, reports, log)),
    vscode.commands.registerCommand('memhint.fixAll', () => fixAll(actions, vscode.window.activeTextEditor)),
    vscode.commands.registerCommand('memhint.showRuleDocs', (code?: string) => showRuleDocs(context.extensionUri, code)),
    vscode.commands.registerCommand('memhint.profileStep', (uri?: vscode.Uri, fn?: string | null, loopLine?: number) =>
      profiler.profileStep(uri instanceof vscode.Uri ? uri : undefined, typeof fn === 'string' || fn === null ? fn : undefined, typeof loopLine === 'number' && Number.isInteger(loopLine) && loopLine > 0 ? loopLine : undefined),
    ),
    vscode.commands.registerCommand('memhint.predict', (uri?: vscode.Uri, fn?: string, args?: unknown) =>
      predictor.predict(uri instanceof vscode.Uri ? uri : undefined, typeof fn === 'string' ? fn : undefined, typeof args === 'object' && args !== null ? args : undefined),
    ),
    vscode.commands.registerCommand('memhint.cancelProfile', () => {
      profiler.cancel();
      predictor.cancel();
    }),
    vscode.commands.registerCommand('memhint.clearHints', () => hints.clear()),
    vscode.commands.registerCommand('memhint.showSummary', () => {
      MemorySummaryPanel.show(context.extensionUri, reports, log);
    }),
    vscode.commands.registerCommand('memhint.openReport', (uri?: vscode.Uri) => openReport(reports, uri instanceof vscode.Uri ? uri : undefined)),
    { dispose: () => MemorySummaryPanel.instance?.dispose() },
  );

  const api = createApi({ diagnostics, hints, profiler, predictor, reports, linter });
  if (context.extensionMode === vscode.ExtensionMode.Test) {
    // Only test runs see the internal state command; the API object is returned for them either way.
    context.subscriptions.push(vscode.commands.registerCommand('memhint._test.getState', () => api.state()));
  }
  log.info('memhint activated');
  return api;
}

export function deactivate(): void {
  // Everything is in context.subscriptions.
}
