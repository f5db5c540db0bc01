// "memhint: Predict Memory on CUDA": picks the step and its setup function (remembered per workspace),
// the what-ifs (AMP, activation checkpointing, batch size) from a quick pick, checks that the interpreter's
// torch can predict (>= 2.0: meta tensors), runs `memhint predict` through the same side-car runner as
// profiling (argument array, progress with Cancel, failure actions) and hands the predicted report to the
// store, where hints, hovers and the summary show it marked as predicted.
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Linter, SourceFile } from '../../lint';
import { maxBatch, type MaxBatchResult, type PredictOptions } from '../../predict/run';
import type { PredictedReport } from '../../predict/schema';
import { isPredictedReport } from '../../predict/schema';
import type { ProfileFailure } from '../../profiler/launcher';
import { formatBytes } from '../format';
import type { DiagnosticsController } from '../lint/diagnostics';
import { isNotebookCell } from '../lint/diagnostics';
import type { NotebookProgram } from '../lint/notebookProgram';
import { parseOnce, sourceOf } from '../lint/sourceOf';
import type { NotebookExports } from '../profile/notebookExports';
import { describeScriptLine, errorInCells, predictionProgram } from '../profile/notebookScript';
import { notebookCwd, notebookTarget, type NotebookTarget } from '../profile/notebookTarget';
import { scriptName, withTemporaryScript } from '../profile/tempScript';
import { errorText, type Logger } from '../logger';
import { failureActions, UNTRUSTED_MESSAGE } from '../profile/controller';
import { resolveInterpreter, shortPath, sourceLabel } from '../profile/interpreter';
import { describeInterpreter, InterpreterProbe } from '../profile/probe';
import { progressHooks, type ProgressSink } from '../profile/progressHooks';
import type { RunResult } from '../profile/run';
import { functionAt, topLevelFunctions } from '../profile/stepFinder';
import type { ReportStore } from '../reportStore';
import { refuse } from '../profile/refuse';
import { whyNotRunnable } from '../profile/runnableDocument';
import { readPredictConfig, readProfileConfig } from '../settings';
import { parseDeviceMemory, type DeviceMemory } from './device';
import { maxBatchCurve, maxBatchSentence, recordingPredictor, searchStart } from './maxBatch';
import type { RunPrediction } from './run';
import { batchParameter, setupCandidates, type SetupCandidate } from './setup';
import { describeWhatIf, parseBatchValue, predictOptions, reviveWhatIf, torchSupportsPrediction, type WhatIf } from './whatIf';

export interface PredictCommandResult {
  readonly status: 'done' | 'cancelled' | 'failed' | 'untrusted' | 'no-target' | 'unsupported-torch';
  readonly report?: PredictedReport;
  readonly error?: string;
  /** "Largest batch that fits": every predicted value and the answer. */
  readonly maxBatch?: MaxBatchResult;
}

/** The step to predict: in a file, or in a notebook cell (then the notebook's program is the source). */
interface PredictTarget {
  readonly document: vscode.TextDocument;
  readonly step: string;
  readonly notebook: NotebookTarget | null;
  /** The file's parse, or the notebook program's (setup functions may be in any cell). */
  readonly source: SourceFile;
}

/** Arguments tests (and other commands) may pass to skip the pickers. */
export interface PredictArgs {
  readonly setup?: string;
  readonly whatIf?: Partial<WhatIf>;
  /** Search the largest value of the batch argument that fits (needs a device size). */
  readonly maxBatch?: boolean;
  /** The device size for this run, as memhint.predict.device is written ("80GB"). */
  readonly device?: string;
}

export class PredictController {
  private running: AbortController | null = null;
  private last: PredictCommandResult | null = null;
  private readonly interpreters = new InterpreterProbe();

  constructor(
    private readonly run: RunPrediction,
    private readonly reports: ReportStore,
    private readonly diagnostics: DiagnosticsController,
    private readonly linter: Linter,
    private readonly state: vscode.Memento,
    private readonly log: Logger,
    private readonly notebookExports: NotebookExports,
  ) {}

  get lastOutcome(): PredictCommandResult | null {
    return this.last;
  }

  cancel(): void {
    this.running?.abort();
  }

  async predict(uri?: vscode.Uri, functionName?: string, args: PredictArgs = {}): Promise<PredictCommandResult> {
    this.last = await this.guarded(uri, functionName, args);
    return this.last;
  }

  private async guarded(uri: vscode.Uri | undefined, functionName: string | undefined, args: PredictArgs): Promise<PredictCommandResult> {
    if (!vscode.workspace.isTrusted) {
      void vscode.window.showWarningMessage(UNTRUSTED_MESSAGE.replace('profiling runs', 'predicting runs'), 'Manage Workspace Trust').then((choice) => {
        if (choice !== undefined) void vscode.commands.executeCommand('workbench.trust.manage');
      });
      return { status: 'untrusted' };
    }
    if (this.running !== null) {
      void vscode.window.showInformationMessage('memhint: a prediction is already running.');
      return { status: 'failed', error: 'already running' };
    }
    const abort = new AbortController();
    this.running = abort;
    void vscode.commands.executeCommand('setContext', 'memhint.predicting', true);
    try {
      return await this.prepareAndRun(abort, uri, functionName, args);
    } catch (err) {
      this.log.error('prediction failed', errorText(err));
      return this.failed(err instanceof Error ? err.message : String(err), null, null);
    } finally {
      this.running = null;
      void vscode.commands.executeCommand('setContext', 'memhint.predicting', false);
    }
  }

  private async prepareAndRun(abort: AbortController, uri: vscode.Uri | undefined, functionName: string | undefined, args: PredictArgs): Promise<PredictCommandResult> {
    const target = await this.pickStep(uri, functionName);
    if (target === null) return { status: 'no-target' };
    if ('refused' in target) return { status: 'no-target', error: target.refused };
    const { document, step, notebook, source } = target;
    if (notebook === null && document.isDirty) await document.save();
    const candidates = setupCandidates(source, step);
    const key = `predict:${(notebook?.uri ?? document.uri).fsPath}::${step}`;
    const remembered = this.state.get<{ setup?: unknown; whatIf?: unknown }>(key) ?? {};
    const setup = args.setup !== undefined ? candidates.find((c) => c.name === args.setup) ?? { name: args.setup, parameters: [], likely: false } : await this.pickSetup(candidates, typeof remembered.setup === 'string' ? remembered.setup : null, step);
    if (setup === null) return { status: 'no-target' };

    const problems: string[] = [];
    const config = readPredictConfig(document.uri, problems);
    for (const p of problems) {
      this.log.warn(p);
      void vscode.window.showWarningMessage(`memhint: ${p}.`);
    }
    const previous = reviveWhatIf(remembered.whatIf);
    const picked = args.whatIf !== undefined || args.maxBatch !== undefined
      ? { whatIf: { ...previous, ...args.whatIf }, searchMaxBatch: args.maxBatch === true }
      : await this.pickWhatIf(previous, setup, config.device?.label ?? null);
    if (picked === null) return { status: 'no-target' };
    let whatIf = picked.whatIf;
    let device = config.device;
    if (args.device !== undefined) {
      const given = parseDeviceMemory(args.device);
      if (given === null || 'error' in given) return this.failed(given === null ? 'no device size given' : given.error, null, null);
      device = given;
    }
    // The search's argument and start: the batch what-if's value, else the last one, else the setup's default.
    let search: { arg: string; start: number } | null = null;
    if (picked.searchMaxBatch) {
      const param = batchParameter(setup) ?? (whatIf.batch !== null ? { name: whatIf.batch.arg, defaultText: null } : null);
      if (param === null) return this.failed(`${setup.name}() has no batch-size argument to search (a parameter named like batch or bs)`, null, null);
      device ??= await this.askDevice();
      if (device === null) return { status: 'no-target' };
      search = { arg: param.name, start: searchStart(whatIf.batch?.arg === param.name ? whatIf.batch.value : null, param.defaultText) };
      whatIf = { ...whatIf, batch: { arg: param.name, value: search.start } };
    }
    await this.state.update(key, { setup: setup.name, whatIf });
    const run = (script: string, exported: NotebookProgram | null): Promise<PredictCommandResult> => this.runPrediction(abort, document, step, setup, whatIf, device, search, config.timeoutSeconds, script, exported === null || notebook === null ? null : { uri: notebook.uri, program: exported });
    if (notebook === null) return run(document.uri.fsPath, null);
    // A notebook's step runs from its code exported to a temporary script (removed after the run), without
    // the statements that train: prediction calls the setup function and the step itself.
    const parsed = parseOnce(this.linter, notebook.program.text);
    const { program, leftOut } = predictionProgram(notebook.program, parsed, step);
    return withTemporaryScript(program.text, scriptName(notebook.uri.path), (script) => {
      this.notebookExports.record({ notebook: notebook.uri.toString(), script, program });
      this.log.info(`notebook ${notebook.uri.fsPath}: ${program.segments.length} Python cells exported to ${script}${leftOut.length > 0 ? `; left out of cell ${leftOut.map((c) => c + 1).join(', ')}: the statements from the first call of ${step}() on, other than definitions and imports (prediction calls ${setup.name}() and ${step}() itself)` : ''}`);
      return run(script, program);
    });
  }

  /** Runs the prediction of `script` (the document's file, or a notebook's temporary script) and reports it. */
  private async runPrediction(
    abort: AbortController,
    document: vscode.TextDocument,
    step: string,
    setup: SetupCandidate,
    whatIf: WhatIf,
    device: DeviceMemory | null,
    search: { arg: string; start: number } | null,
    timeoutSeconds: number,
    script: string,
    notebook: { readonly uri: vscode.Uri; readonly program: NotebookProgram } | null,
  ): Promise<PredictCommandResult> {
    const profileConfig = readProfileConfig(document.uri);
    const interpreter = await resolveInterpreter(profileConfig.python, document.uri, this.log);
    const folder = vscode.workspace.getWorkspaceFolder(document.uri);
    const display = `${shortPath(interpreter.path, folder?.uri.fsPath)} (${sourceLabel(interpreter.source)})`;
    const options = predictOptions(
      {
        python: interpreter.path,
        script,
        function: step,
        setup: setup.name,
        cwd: notebook !== null ? notebookCwd(notebook.uri) : (folder?.uri.fsPath ?? path.dirname(document.uri.fsPath)),
        deviceMemoryBytes: device?.bytes ?? null,
        computeCapability: device?.computeCapability ?? null,
        timeoutSeconds,
      },
      whatIf,
    );
    const what = describeWhatIf(whatIf);
    this.log.info(`predicting ${options.script}::${step} --setup ${setup.name}${what ? ` (${what})` : ''}${search ? ` searching the largest ${search.arg} that fits` : ''} with ${options.python}${device ? `, device ${device.label}` : ''}`);

    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: search !== null ? `memhint: largest ${search.arg} of ${step}() that fits ${device?.label ?? ''}` : `memhint: predicting ${step}() on CUDA${what ? ` (${what})` : ''}`, cancellable: true },
      async (progress, token): Promise<(RunResult & { maxBatch?: MaxBatchResult }) | { unsupported: string } | { problem: string; kind: 'spawn' | 'torch_missing' }> => {
        token.onCancellationRequested(() => abort.abort());
        progress.report({ message: `checking ${display}…` });
        const info = await this.interpreters.probe(options.python);
        if (abort.signal.aborted) return { report: null, error: null, failure: null, cancelled: true };
        if (info.problem !== null && info.problem.kind !== 'probe') return { problem: info.problem.message, kind: info.problem.kind };
        // Meta tensors, fake tensors and TorchDispatchMode as prediction needs them arrived in torch 2.0.
        if (torchSupportsPrediction(info.torchVersion) === false) {
          return { unsupported: `prediction needs torch >= 2.0 (it runs the step on meta tensors); ${display} has torch ${info.torchVersion}. Select an interpreter with torch 2.x (profiling works with this one)` };
        }
        const with_ = describeInterpreter(info, display);
        progress.report({ message: `${with_} · starting` });
        if (search !== null && options.deviceMemoryBytes !== null) return this.searchMaxBatch(options, search, options.deviceMemoryBytes, abort.signal, progress, with_);
        return this.run(options, progressHooks(abort.signal, progress, with_, this.log));
      },
    );
    if ('unsupported' in result) {
      this.log.error(result.unsupported);
      const actions = failureActions({ kind: 'unsupported_torch', location: null }, false);
      void vscode.window.showErrorMessage(`memhint: ${result.unsupported}.`, ...actions.map((a) => a.title)).then((choice) => actions.find((a) => a.title === choice)?.run(this.log));
      return { status: 'unsupported-torch', error: result.unsupported };
    }
    if ('problem' in result) return this.failed(result.problem, { kind: result.kind, location: null }, null);
    if (result.cancelled || abort.signal.aborted) {
      this.log.info('prediction cancelled; the child process was killed');
      return { status: 'cancelled' };
    }
    const report = result.report !== null && isPredictedReport(result.report) ? result.report : null;
    if (report !== null) {
      const info = await this.interpreters.probe(options.python);
      await this.reports.set(report, { interpreter: display, interpreterSource: sourceLabel(interpreter.source), torchVersion: info.torchVersion ?? report.environment.torchVersion });
      this.log.info(`prediction done: ${report.lines.length} lines, max reserved ${report.prediction.allocator.maxReservedBytes} B, max allocated ${report.prediction.allocator.maxAllocatedBytes} B in ${report.prediction.seconds.toFixed(2)} s`);
      for (const note of report.notes) this.log.info(`note: ${note}`);
    }
    // A notebook's failure names the cell; "Go to Line" would open the temporary script, removed by then.
    if (result.error !== null) return notebook === null ? this.failed(result.error, result.failure, report) : this.failed(errorInCells(result.error, script, notebook.program), result.failure === null ? null : { kind: result.failure.kind, location: null }, report);
    if (report === null) return this.failed('no predicted report', null, null);
    if (result.maxBatch !== undefined) {
      const sentence = maxBatchSentence(result.maxBatch, device?.label ?? formatBytes(options.deviceMemoryBytes ?? 0));
      this.log.info(`${sentence}\n${maxBatchCurve(result.maxBatch).join('\n')}`);
      void vscode.window.showInformationMessage(`memhint: ${sentence} (predicted on meta tensors; the summary shows ${result.maxBatch.arg}=${report.prediction.setupArgs[result.maxBatch.arg] as number}).`, 'Show Summary').then((c) => {
        if (c !== undefined) void vscode.commands.executeCommand('memhint.showSummary');
      });
      return { status: 'done', report, maxBatch: result.maxBatch };
    }
    this.announce(report, device?.label ?? null, notebook === null ? null : (line) => describeScriptLine(notebook.program, line));
    return { status: 'done', report };
  }

  /**
   * Doubling then bisection over the batch argument (src/predict/run.ts maxBatch, as `--max-batch`), each
   * value one prediction through the editor's runner. The report kept is the largest fitting value's (or,
   * when none fits, the smallest tried, whose first exceeded line says where it breaks).
   */
  private async searchMaxBatch(options: PredictOptions, search: { arg: string; start: number }, capacity: number, signal: AbortSignal, progress: ProgressSink, prefix: string): Promise<RunResult & { maxBatch?: MaxBatchResult }> {
    const cancelled = { report: null, error: null, failure: null, cancelled: true };
    const recorder = recordingPredictor(async (o) => {
      if (signal.aborted) throw new SearchCancelled();
      const r = await this.run(o, progressHooks(signal, progress, `${prefix} · ${search.arg}=${String(o.setupArgs[search.arg])}`, this.log));
      if (r.cancelled || signal.aborted) throw new SearchCancelled();
      const report = r.report !== null && isPredictedReport(r.report) ? r.report : null;
      if (r.failure === null && report !== null) return { report, failure: null };
      return { report, failure: r.failure ?? { kind: 'protocol', message: r.error ?? 'no predicted report', traceback: null, location: null, exitCode: null, signal: null, stderrTail: '' } };
    }, search.arg);
    try {
      const result = await maxBatch(recorder.predictor, options, search.arg, search.start, capacity);
      const report = recorder.reportFor(result.best ?? result.curve.find((p) => p.error === null)?.value ?? null);
      return { report, error: report === null ? `no ${search.arg} tried gave a prediction: ${result.curve[0]?.error ?? 'no report'}` : null, failure: null, cancelled: false, maxBatch: result };
    } catch (err) {
      if (err instanceof SearchCancelled) return cancelled;
      throw err;
    }
  }

  private async askDevice(): Promise<DeviceMemory | null> {
    const text = await vscode.window.showInputBox({
      title: 'memhint: largest batch that fits which GPU?',
      prompt: 'A size or a GPU name (e.g. 80GB, 24 GiB, A100 80GB); memhint.predict.device sets it for every prediction',
      validateInput: (v) => {
        const d = parseDeviceMemory(v);
        return d === null ? 'a size such as 80GB or a GPU name' : 'error' in d ? d.error : null;
      },
    });
    const d = text === undefined ? null : parseDeviceMemory(text);
    return d === null || 'error' in d ? null : d;
  }

  /** The outcome in one line: the predicted peak, and whether it fits the device (where it first does not). */
  private announce(report: PredictedReport, deviceLabel: string | null, inCells: ((scriptLine: number) => string | null) | null): void {
    const p = report.prediction;
    const peak = `max reserved ${formatBytes(p.allocator.maxReservedBytes)} (allocated ${formatBytes(p.allocator.maxAllocatedBytes)})`;
    const actions: { title: string; run: () => unknown }[] = [{ title: 'Show Summary', run: () => vscode.commands.executeCommand('memhint.showSummary') }];
    let text: string;
    if (p.fits === false) {
      const where = p.firstExceeded;
      // In a notebook the script is gone: the cell and its line say where.
      const at = where === null ? null : inCells !== null ? inCells(where.line) : `${path.basename(where.file)}:${where.line}`;
      text = `memhint: predicted ${peak} does NOT fit ${deviceLabel ?? formatBytes(p.deviceMemoryBytes ?? 0)}${at !== null ? `: first exceeded at ${at}` : ''}.`;
      if (where !== null && inCells === null) actions.unshift({ title: 'Go to Line', run: () => revealLine(where.file, where.line) });
      void vscode.window.showWarningMessage(text, ...actions.map((a) => a.title)).then((c) => actions.find((a) => a.title === c)?.run());
      return;
    }
    text = `memhint: predicted ${peak}${p.fits === true ? `, fits ${deviceLabel ?? formatBytes(p.deviceMemoryBytes ?? 0)}` : ''} (meta tensors, not measured).`;
    void vscode.window.showInformationMessage(text, ...actions.map((a) => a.title)).then((c) => actions.find((a) => a.title === c)?.run());
  }

  private failed(error: string, failure: Pick<ProfileFailure, 'kind' | 'location'> | null, report: PredictedReport | null): PredictCommandResult {
    this.log.error(`prediction failed: ${error}`);
    if (report === null) this.reports.markStale(error.split('\n')[0]);
    const actions = failureActions(failure, report !== null);
    void vscode.window.showErrorMessage(`memhint: prediction failed: ${error.split('\n')[0]}`, ...actions.map((a) => a.title)).then((choice) => {
      const action = actions.find((a) => a.title === choice);
      if (action !== undefined) void action.run(this.log);
    });
    return { status: 'failed', error, ...(report !== null ? { report } : {}) };
  }

  /** The document and step to predict; null when the user dismissed the choice, `refused` when the document cannot be run. */
  private async pickStep(uri: vscode.Uri | undefined, functionName: string | undefined): Promise<PredictTarget | { refused: string } | null> {
    const editor = vscode.window.activeTextEditor;
    const document = uri !== undefined ? await vscode.workspace.openTextDocument(uri) : editor?.document;
    let refusal = whyNotRunnable(document, 'predict', vscode.window.activeNotebookEditor !== undefined, true);
    let notebook: NotebookTarget | null = null;
    if (refusal === null && document !== undefined && isNotebookCell(document)) {
      const found = notebookTarget(document, 'predict');
      if ('refused' in found) refusal = found.refused;
      else notebook = found;
    }
    if (refusal !== null || document === undefined) {
      refuse(refusal ?? '', document);
      return { refused: refusal ?? '' };
    }
    // The setup function may be in any cell: a notebook's steps and setups are looked up in its whole program.
    const source = notebook === null ? sourceOf(document, this.diagnostics, this.linter) : parseOnce(this.linter, notebook.program.text);
    if (functionName !== undefined) return { document, step: functionName, notebook, source };
    if (editor !== undefined && editor.document === document) {
      const at = functionAt(sourceOf(document, this.diagnostics, this.linter), document.offsetAt(editor.selection.active));
      if (at !== null && !at.name.includes('.')) return { document, step: at.name, notebook, source };
    }
    const steps = topLevelFunctions(source)
      .filter((c) => !c.name.includes('.'))
      .sort((a, b) => Number(b.stepReason !== null) - Number(a.stepReason !== null));
    const choice = await vscode.window.showQuickPick(
      steps.map((c) => ({ label: `$(symbol-function) ${c.name}`, description: c.stepReason !== null ? 'looks like a training step' : undefined, step: c.name })),
      { title: 'memhint: which step to predict?', placeHolder: 'Prediction runs one call of a module-level step function' },
    );
    return choice === undefined ? null : { document, step: choice.step, notebook, source };
  }

  private async pickSetup(candidates: readonly SetupCandidate[], remembered: string | null, step: string): Promise<SetupCandidate | null> {
    const known = remembered !== null ? candidates.find((c) => c.name === remembered) : undefined;
    if (known !== undefined) return known;
    if (candidates.length === 0) {
      void vscode.window.showErrorMessage(`memhint: prediction needs a module-level function that returns ${step}()'s arguments (e.g. def make_inputs(batch=32): ... return model, optimizer, x, y); this file has none.`);
      return null;
    }
    const choice = await vscode.window.showQuickPick(
      candidates.map((c) => ({ label: `$(symbol-function) ${c.name}(${c.parameters.map((p) => p.name).join(', ')})`, description: c.likely ? 'builds inputs?' : undefined, candidate: c })),
      { title: `memhint: which function returns ${step}()'s arguments?`, placeHolder: 'Called once; its return value (a tuple, or a dict of keyword arguments) is passed to the step. Remembered for this workspace.' },
    );
    return choice?.candidate ?? null;
  }

  private async pickWhatIf(previous: WhatIf, setup: SetupCandidate, deviceLabel: string | null): Promise<{ whatIf: WhatIf; searchMaxBatch: boolean } | null> {
    type Item = vscode.QuickPickItem & { id: 'bf16' | 'fp16' | 'checkpoint' | 'batch' | 'maxBatch' };
    const batchParam = batchParameter(setup) ?? (previous.batch !== null ? { name: previous.batch.arg, defaultText: null } : null);
    const items: Item[] = [
      { id: 'bf16', label: 'AMP bf16', description: 'torch.autocast("cuda", dtype=torch.bfloat16)', picked: previous.amp === 'bf16' },
      { id: 'fp16', label: 'AMP fp16', description: 'torch.autocast("cuda", dtype=torch.float16)', picked: previous.amp === 'fp16' },
      { id: 'checkpoint', label: 'Activation checkpointing…', description: previous.checkpoint !== null ? `of ${previous.checkpoint}` : 'of modules matching a pattern', picked: previous.checkpoint !== null },
    ];
    if (batchParam !== null) {
      items.push({ id: 'batch', label: `Batch size…`, description: `${setup.name}(${batchParam.name}=${previous.batch?.value ?? batchParam.defaultText ?? '?'})`, picked: previous.batch !== null });
      items.push({ id: 'maxBatch', label: 'Largest batch that fits…', description: `bisects ${batchParam.name} against ${deviceLabel ?? 'a GPU size you enter'} (a few predictions)` });
    }
    const picked = await vscode.window.showQuickPick(items, {
      canPickMany: true,
      title: `memhint: predict on CUDA${deviceLabel !== null ? ` against ${deviceLabel}` : ''}: what if…`,
      placeHolder: 'Pick what-ifs, or none for the step as written (memhint.predict.device sets the GPU)',
    });
    if (picked === undefined) return null;
    const ids = new Set(picked.map((p) => p.id));
    if (ids.has('bf16') && ids.has('fp16')) {
      void vscode.window.showErrorMessage('memhint: pick one AMP precision, bf16 or fp16.');
      return null;
    }
    let checkpoint: string | null = null;
    if (ids.has('checkpoint')) {
      const text = await vscode.window.showInputBox({
        title: 'memhint: checkpoint which modules?',
        prompt: 'Module classes or paths, fnmatch patterns, comma-separated (e.g. Block or transformer.h.*)',
        value: previous.checkpoint ?? 'Block',
        validateInput: (v) => (v.trim() === '' ? 'a class name or module path pattern' : null),
      });
      if (text === undefined) return null;
      checkpoint = text.trim();
    }
    let batch: WhatIf['batch'] = null;
    if (ids.has('batch') && batchParam !== null) {
      const text = await vscode.window.showInputBox({
        title: `memhint: predict with ${batchParam.name} =`,
        value: String(previous.batch?.value ?? batchParam.defaultText ?? ''),
        validateInput: (v) => {
          const n = parseBatchValue(v);
          return typeof n === 'number' ? null : n;
        },
      });
      if (text === undefined) return null;
      const n = parseBatchValue(text);
      if (typeof n === 'number') batch = { arg: batchParam.name, value: n };
    }
    return { whatIf: { amp: ids.has('bf16') ? 'bf16' : ids.has('fp16') ? 'fp16' : null, checkpoint, batch }, searchMaxBatch: ids.has('maxBatch') };
  }
}

async function revealLine(file: string, line: number): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
  const at = new vscode.Position(Math.max(0, Math.min(line - 1, doc.lineCount - 1)), 0);
  await vscode.window.showTextDocument(doc, { selection: new vscode.Range(at, at) });
}

/** Thrown out of the search's predictor when the user cancels: stops the bisection. */
class SearchCancelled extends Error {}
