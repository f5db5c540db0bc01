// "memhint: Profile This Step": picks the function (cursor, CodeLens argument or a quick pick), checks
// workspace trust, resolves the interpreter, runs the profiler with a cancellable progress notification
// (Cancel kills the child) and hands the report to the store.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Linter } from '../../lint';
import type { ProfileFailure } from '../../profiler/launcher';
import type { ProfileReport } from '../../profiler/report';
import { isNotebookCell, type DiagnosticsController } from '../lint/diagnostics';
import type { NotebookProgram } from '../lint/notebookProgram';
import type { NotebookExports } from './notebookExports';
import { errorInCells, scriptLineOf } from './notebookScript';
import { notebookCwd, notebookTarget, type NotebookTarget } from './notebookTarget';
import { scriptName, withTemporaryScript } from './tempScript';
import { sourceOf } from '../lint/sourceOf';
import { errorText, type Logger } from '../logger';
import type { ReportStore } from '../reportStore';
import { readProfileConfig } from '../settings';
import { entryFor } from './entryScript';
import { refuse } from './refuse';
import { whyNotRunnable } from './runnableDocument';
import { resolveInterpreter, shortPath, sourceLabel } from './interpreter';
import { partialSummary } from './partial';
import { describeInterpreter, InterpreterProbe, type InterpreterInfo } from './probe';
import { progressHooks } from './progressHooks';
import type { ProfileRequest } from './request';
import type { RunHooks, RunResult } from './run';
import { functionAt, topLevelFunctions } from './stepFinder';

/** The profiler's runner as the command uses it (run.ts adapts the launcher; tests may inject). */
export type RunProfile = (request: ProfileRequest, hooks: RunHooks) => Promise<RunResult>;

export const UNTRUSTED_MESSAGE =
  'memhint: profiling runs your code, so it is disabled in Restricted Mode. Trust this workspace to profile it (linting keeps working).';

/** A button on the failure notification. */
interface FailureAction {
  readonly title: string;
  run(log: Logger): Thenable<unknown> | void;
}

/** The buttons for a failure, most useful first. Exported for tests. */
export function failureActions(failure: Pick<ProfileFailure, 'kind' | 'location'> | null, hasReport: boolean): FailureAction[] {
  const actions: FailureAction[] = [];
  const location = failure?.location ?? null;
  if (location !== null && path.isAbsolute(location.file) && fs.existsSync(location.file)) {
    actions.push({ title: 'Go to Line', run: () => goToLine(location.file, location.line) });
  }
  if (failure !== null && (failure.kind === 'torch_missing' || failure.kind === 'spawn' || failure.kind === 'unsupported_torch')) {
    actions.push({ title: 'Select Interpreter…', run: () => selectInterpreter() });
  }
  if (hasReport) actions.push({ title: 'Show Summary', run: () => vscode.commands.executeCommand('memhint.showSummary') });
  actions.push({ title: 'Show Logs', run: (log) => log.show() });
  return actions;
}

/** Paths inside the workspace shortened to what the Explorer shows (`train.py:8`). */
function relativeToWorkspace(text: string): string {
  let out = text;
  for (const folder of vscode.workspace.workspaceFolders ?? []) out = out.split(folder.uri.fsPath + path.sep).join('');
  return out;
}

async function goToLine(file: string, line: number): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
  const at = new vscode.Position(Math.max(0, Math.min(line - 1, doc.lineCount - 1)), 0);
  const start = new vscode.Position(at.line, doc.lineAt(at.line).firstNonWhitespaceCharacterIndex);
  await vscode.window.showTextDocument(doc, { selection: new vscode.Range(start, start) });
}

/** The Python extension's interpreter picker when it is installed, else the memhint.python setting. */
async function selectInterpreter(): Promise<void> {
  if (vscode.extensions.getExtension('ms-python.python') !== undefined) await vscode.commands.executeCommand('python.setInterpreter');
  else await vscode.commands.executeCommand('workbench.action.openSettings', 'memhint.python');
}

export interface ProfileCommandResult {
  readonly status: 'done' | 'cancelled' | 'failed' | 'untrusted' | 'no-target';
  readonly report?: ProfileReport;
  readonly error?: string;
}

interface ProfileTarget {
  readonly document: vscode.TextDocument;
  readonly function: string | null;
  /** Set when the document is a notebook cell: the notebook, its cells' program and the step's cell. */
  readonly notebook?: NotebookTarget;
}

export class ProfileController {
  private running: AbortController | null = null;
  private last: ProfileCommandResult | null = null;
  private readonly warned = new Set<string>();
  private readonly interpreters = new InterpreterProbe();

  constructor(
    private readonly run: RunProfile,
    private readonly reports: ReportStore,
    private readonly diagnostics: DiagnosticsController,
    private readonly linter: Linter,
    private readonly log: Logger,
    private readonly notebookExports: NotebookExports,
  ) {}

  get lastOutcome(): ProfileCommandResult | null {
    return this.last;
  }

  get isRunning(): boolean {
    return this.running !== null;
  }

  /** Cancels the run in progress (the Cancel button does the same). */
  cancel(): void {
    this.running?.abort();
  }

  /** Command entry: `uri`/`functionName`/`loopLine` come from the CodeLens; the palette passes nothing. */
  async profileStep(uri?: vscode.Uri, functionName?: string | null, loopLine?: number): Promise<ProfileCommandResult> {
    this.last = await this.profile(uri, functionName, loopLine);
    return this.last;
  }

  private async profile(uri?: vscode.Uri, functionName?: string | null, loopLine?: number): Promise<ProfileCommandResult> {
    if (!vscode.workspace.isTrusted) {
      // A workspace's own memhint.python is ignored until trust: say so, or the user wonders why it does not apply.
      const problems: string[] = [];
      readProfileConfig(uri ?? vscode.window.activeTextEditor?.document.uri, problems);
      for (const p of problems) this.log.warn(p);
      const extra = problems.length > 0 ? ` Note: ${problems.join('; ')}.` : '';
      void vscode.window.showWarningMessage(`${UNTRUSTED_MESSAGE}${extra}`, 'Manage Workspace Trust').then((choice) => {
        if (choice !== undefined) void vscode.commands.executeCommand('workbench.trust.manage');
      });
      return { status: 'untrusted', ...(problems.length > 0 ? { error: problems.join('; ') } : {}) };
    }
    if (this.running !== null) {
      void vscode.window.showInformationMessage('memhint: a profile is already running.');
      return { status: 'failed', error: 'already running' };
    }
    // Claimed before the first await, so a second invocation meanwhile is refused rather than racing.
    const abort = new AbortController();
    this.running = abort;
    void vscode.commands.executeCommand('setContext', 'memhint.profiling', true);
    try {
      return await this.prepareAndRun(abort, uri, functionName, loopLine);
    } finally {
      this.running = null;
      void vscode.commands.executeCommand('setContext', 'memhint.profiling', false);
    }
  }

  private async prepareAndRun(abort: AbortController, uri: vscode.Uri | undefined, functionName: string | null | undefined, loopLine: number | undefined): Promise<ProfileCommandResult> {
    const target = await this.pickTarget(uri, loopLine !== undefined ? null : functionName);
    if (target === null) return { status: 'no-target' };
    if ('refused' in target) return { status: 'no-target', error: target.refused };
    const document = target.document;
    const notebook = target.notebook ?? null;
    if (notebook === null) {
      if (document.isDirty) await document.save();
      return this.runTarget(abort, document, target.function, loopLine, null, null);
    }
    // A notebook's step runs from its code exported to a temporary script, removed after the run however it ends.
    return withTemporaryScript(notebook.program.text, scriptName(notebook.uri.path), async (script) => {
      this.notebookExports.record({ notebook: notebook.uri.toString(), script, program: notebook.program });
      this.log.info(`notebook ${notebook.uri.fsPath}: ${notebook.program.segments.length} Python cells exported to ${script} (cells in execution order, IPython magics as comments)`);
      // A loop chosen in a cell (its CodeLens) is a line of the cell: the harness needs the script's.
      const line = loopLine === undefined ? undefined : scriptLineOf(notebook.program, notebook.cell, loopLine - 1) ?? undefined;
      return this.runTarget(abort, document, target.function, line, script, notebook);
    });
  }

  private async runTarget(abort: AbortController, document: vscode.TextDocument, functionName: string | null, loopLine: number | undefined, exportedScript: string | null, notebook: { uri: vscode.Uri; program: NotebookProgram } | null): Promise<ProfileCommandResult> {
    const target = { function: functionName };

    const problems: string[] = [];
    const config = readProfileConfig(document.uri, problems);
    for (const p of problems) this.warnOnce(p);
    const interpreter = await resolveInterpreter(config.python, document.uri, this.log);
    const folder = vscode.workspace.getWorkspaceFolder(document.uri);
    // A loop in a module that is not run itself (mingpt/trainer.py): memhint.profile.script runs it, as
    // `memhint profile SCRIPT --loop FILE:LINE` does.
    const entry = entryFor(config.entryScript, document.uri.fsPath, target.function, loopLine, exportedScript);
    const request: ProfileRequest = {
      python: interpreter.path,
      script: entry ?? exportedScript ?? document.uri.fsPath,
      function: target.function,
      loopLine: target.function === null ? (loopLine ?? null) : null,
      loopFile: entry !== null ? document.uri.fsPath : null,
      scriptArgs: config.scriptArgs,
      warmup: config.warmup,
      steps: config.steps,
      backend: config.backend,
      maxSeconds: config.maxSeconds,
      timeoutSeconds: config.timeoutSeconds,
      // A notebook's kernel starts in the notebook's folder: relative data paths resolve from there.
      cwd: notebook === null ? (folder?.uri.fsPath ?? path.dirname(document.uri.fsPath)) : notebookCwd(notebook.uri),
      nprocPerNode: config.nprocPerNode,
    };
    const what = target.function !== null ? `${target.function}()` : loopLine !== undefined ? `the loop at ${path.basename(request.loopFile ?? request.script)}:${loopLine}` : path.basename(request.script);
    const display = `${shortPath(interpreter.path, folder?.uri.fsPath)} (${sourceLabel(interpreter.source)})`;
    this.log.info(`profiling ${request.script}${target.function ? `::${target.function}` : loopLine !== undefined ? (request.loopFile ? ` --loop ${request.loopFile}:${loopLine}` : `:${loopLine}`) : ''}${request.scriptArgs?.length ? ` -- ${request.scriptArgs.join(' ')}` : ''} with ${request.python} (${sourceLabel(interpreter.source)}), warmup ${request.warmup}, steps ${request.steps}, backend ${request.backend}${config.nprocPerNode > 1 ? `, ${config.nprocPerNode} ranks` : ''}`);

    try {
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `memhint: profiling ${what}`, cancellable: true },
        async (progress, token): Promise<RunResult | InterpreterInfo> => {
          token.onCancellationRequested(() => abort.abort());
          progress.report({ message: `checking ${display}…` });
          const info = await this.interpreters.probe(request.python);
          if (abort.signal.aborted) return { report: null, error: null, failure: null, cancelled: true };
          if (info.problem !== null && info.problem.kind !== 'probe') return info;
          if (info.problem !== null) this.log.warn(info.problem.message); // the run itself will say more
          else this.log.info(`interpreter: ${describeInterpreter(info, request.python)}${info.executable !== null && info.executable !== request.python ? ` (${info.executable})` : ''}`);
          // Every message names the interpreter: the first thing to check when figures look wrong.
          const with_ = describeInterpreter(info, display);
          progress.report({ message: `${with_} · starting` });
          return this.run(request, progressHooks(abort.signal, progress, with_, this.log));
        },
      );
      if ('problem' in result) {
        // Found before starting the harness: the interpreter does not run, or has no torch.
        const problem = result.problem!;
        return this.failed(problem.message, { kind: problem.kind === 'torch_missing' ? 'torch_missing' : 'spawn', location: null }, null);
      }
      if (result.cancelled || abort.signal.aborted) {
        this.log.info('profile cancelled; the child process was killed');
        return { status: 'cancelled' };
      }
      if (result.report !== null) {
        const report = result.report;
        const info = await this.interpreters.probe(request.python);
        await this.reports.set(report, { interpreter: display, interpreterSource: sourceLabel(interpreter.source), torchVersion: info.torchVersion ?? report.environment.torchVersion }, result.ranks ?? null);
        this.log.info(`profile done: ${report.lines.length} lines, ${report.steps.length} steps, peak ${report.peak?.bytes ?? 'n/a'} B${report.partial ? ' (partial)' : ''}`);
        for (const note of report.notes) this.log.info(`note: ${note}`);
      }
      if (result.error !== null) {
        if (notebook === null || exportedScript === null) return this.failed(result.error, result.failure, result.report);
        // A notebook's failure names the cell; "Go to Line" would open the temporary script, removed by then.
        return this.failed(errorInCells(result.error, exportedScript, notebook.program), result.failure === null ? null : { kind: result.failure.kind, location: null }, result.report);
      }
      if (result.report === null) return this.failed('no report', null, null);
      this.announcePartial(result.report, what);
      return { status: 'done', report: result.report };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.log.error('profile failed', errorText(err));
      return this.failed(message, null, null);
    }
  }

  /**
   * A failed run: says why with the actions that fix it (the line in the user's code, another
   * interpreter), and marks an older report's figures stale unless this run still measured something.
   */
  private failed(error: string, failure: Pick<ProfileFailure, 'kind' | 'location'> | null, report: ProfileReport | null): ProfileCommandResult {
    this.log.error(`profile failed: ${error}`);
    if (report === null) this.reports.markStale(error.split('\n')[0]);
    const actions = failureActions(failure, report !== null);
    const measured = report !== null ? partialSummary(report, (file) => relativeToWorkspace(file)) : null;
    void vscode.window.showErrorMessage(`memhint: profiling failed: ${relativeToWorkspace(error.split('\n')[0])}${measured !== null ? ` (partial report: ${measured.split(';')[0]})` : ''}`, ...actions.map((a) => a.title)).then((choice) => {
      const action = actions.find((a) => a.title === choice);
      if (action !== undefined) void action.run(this.log);
    });
    return { status: 'failed', error, ...(report !== null ? { report } : {}) };
  }

  /** A run that stopped early says so where the user looks, with what it did measure. */
  private announcePartial(report: ProfileReport, what: string): void {
    const summary = partialSummary(report, (file) => relativeToWorkspace(file));
    if (summary === null) return;
    this.log.warn(`partial profile of ${what}: ${summary}`);
    void vscode.window.showWarningMessage(`memhint: partial profile of ${what}: ${summary}.`, 'Show Summary', 'Show Logs').then((choice) => {
      if (choice === 'Show Summary') void vscode.commands.executeCommand('memhint.showSummary');
      else if (choice === 'Show Logs') this.log.show();
    });
  }

  private warnOnce(message: string): void {
    if (this.warned.has(message)) return;
    this.warned.add(message);
    this.log.warn(message);
    void vscode.window.showWarningMessage(`memhint: ${message}.`);
  }

  /** The document and step to profile; null when the user dismissed the choice, `refused` when the document cannot be run. */
  private async pickTarget(uri: vscode.Uri | undefined, functionName: string | null | undefined): Promise<ProfileTarget | { refused: string } | null> {
    const editor = vscode.window.activeTextEditor;
    const document = uri !== undefined ? await vscode.workspace.openTextDocument(uri) : editor?.document;
    let refusal = whyNotRunnable(document, 'profile', vscode.window.activeNotebookEditor !== undefined, true);
    let notebook: ProfileTarget['notebook'];
    if (refusal === null && document !== undefined && isNotebookCell(document)) {
      const found = notebookTarget(document, 'profile');
      if ('refused' in found) refusal = found.refused;
      else notebook = found;
    }
    if (refusal !== null || document === undefined) {
      refuse(refusal ?? '', document);
      return { refused: refusal ?? '' };
    }
    const withNotebook = notebook === undefined ? {} : { notebook };
    if (functionName !== undefined) return { document, function: functionName, ...withNotebook };
    const source = sourceOf(document, this.diagnostics, this.linter);
    if (editor !== undefined && editor.document === document) {
      const at = functionAt(source, document.offsetAt(editor.selection.active));
      if (at !== null) return { document, function: at.name, ...withNotebook };
    }
    // Cursor outside any top-level function: let the user choose, step-like functions first.
    const candidates = topLevelFunctions(source).sort((a, b) => Number(b.stepReason !== null) - Number(a.stepReason !== null));
    type Item = vscode.QuickPickItem & { fn: string | null };
    const config = readProfileConfig(document.uri);
    const items: Item[] = [
      ...candidates.map((c) => ({ label: `$(symbol-function) ${c.name}`, description: c.stepReason !== null ? 'looks like a training step' : undefined, fn: c.name })),
      { label: '$(file-code) Whole script', description: `runs it as __main__ for up to ${config.maxSeconds} s`, fn: null },
    ];
    const choice = await vscode.window.showQuickPick(items, { title: 'memhint: which step to profile?', placeHolder: 'Each call of the function is one step' });
    return choice === undefined ? null : { document, function: choice.fn, ...withNotebook };
  }
}
