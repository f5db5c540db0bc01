// Lint diagnostics for open Python documents: each document keeps an incremental PythonDocument fed
// with VS Code's content changes; re-lints are debounced; MH002 findings gain the profiler's measured
// figures when a report covers their line.
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  ConfigError,
  FailureLog,
  findProjectConfig,
  findTorchPin,
  isExcluded,
  lintAndLog,
  ProjectIndex,
  DEFAULT_MAX_FILE_SIZE,
  settingsForFile,
  unknownRuleSelectors,
  type Finding,
  type LintSettings,
  type Linter,
  type ProjectConfig,
  type PythonDocument,
  type SourceFile,
  type TextChange,
  TorchPinCache,
} from '../../lint';
import type { ProfileReport } from '../../profiler/report';
import type { Logger } from '../logger';
import { filePathsOf } from '../paths';
import type { ReportStore } from '../reportStore';
import { readLintConfig, onSettingsChanged, type LintConfig } from '../settings';
import { buildNotebookProgram, findingsByCell, type CellInput } from './notebookProgram';
import { CONFIRMABLE_CODES, identifiersIn, measuredFindings, measuredRetention, retentionSentence } from './confirm';
import { profileFindings } from './profileFindings';
import { oversizeReason, sizeLimitOf } from './sizeLimit';
import { sameDiagnostics } from './sameDiagnostics';
import { parseOnce } from './sourceOf';
import { ruleDocUri } from './ruleDocs';
import type { RunningTorch } from './runningTorch';

/** The last published lint of a document and the edits made since (see publishedFixes.ts). */
export interface Published {
  readonly result: LintResult;
  /** The content changes from the result's text to the document's current text, in order. */
  readonly changes: readonly TextChange[];
}

export interface LintResult {
  readonly version: number;
  readonly source: SourceFile;
  readonly findings: readonly Finding[];
  readonly settings: LintSettings;
  readonly diagnostics: readonly vscode.Diagnostic[];
}

interface Tracked {
  doc: PythonDocument;
  /** Changes received since the last lint, in order. */
  pending: TextChange[];
  /** The document's version after the last change in `pending`. */
  pendingVersion: number;
  timer: ReturnType<typeof setTimeout> | undefined;
  result: LintResult | null;
}

/** A notebook's pending re-lint and the cells it published to (to clear those that were deleted). */
interface TrackedNotebook {
  timer: ReturnType<typeof setTimeout> | undefined;
  cells: Set<string>;
}

export function isNotebookCell(document: { readonly uri: vscode.Uri }): boolean {
  return document.uri.scheme === 'vscode-notebook-cell';
}

export function isLintable(document: vscode.TextDocument): boolean {
  return document.languageId === 'python' && (document.uri.scheme === 'file' || document.uri.scheme === 'untitled' || document.uri.scheme === 'vscode-notebook-cell');
}

export class DiagnosticsController implements vscode.Disposable {
  private readonly collection = vscode.languages.createDiagnosticCollection('memhint');
  private readonly tracked = new Map<string, Tracked>();
  /** Notebooks are linted as one program (cells in execution order); keyed by the notebook's URI. */
  private readonly notebooks = new Map<string, TrackedNotebook>();
  /** Each notebook cell's share of its notebook's last lint, keyed by the cell's URI. */
  private readonly cellResults = new Map<string, LintResult>();
  /** A cell's edits since its notebook's last lint (and the cell's version after them), keyed by the cell's URI. */
  private readonly cellPending = new Map<string, { changes: TextChange[]; version: number }>();
  private readonly disposables: vscode.Disposable[] = [];
  private readonly reported = new Set<string>();
  private readonly linted = new vscode.EventEmitter<vscode.Uri>();
  /** Fires after a document's diagnostics were (re)published. */
  readonly onDidLint = this.linted.event;
  private config: LintConfig;
  /** [tool.memhint] per folder: finding it stats every folder up to the root, too slow per keystroke. */
  private readonly projectConfigs = new Map<string, ProjectConfig>();
  private readonly pyprojects = vscode.workspace.createFileSystemWatcher('**/pyproject.toml');
  /** Torch pins per folder (requirements*.txt, pyproject.toml, setup.cfg, environment.yml): the default target torch. */
  private pins = new TorchPinCache();
  private readonly pinFiles = vscode.workspace.createFileSystemWatcher('**/{requirements*.txt,setup.cfg,environment.yml,environment.yaml}');
  /** A rule that throws: the other rules' findings are published and the failure logged once (as in the CLI). */
  private readonly ruleFailures = new FailureLog((line, f) => this.log.error(line, f.error));
  /**
   * The workspace's modules that open files import, read from disk when a rule follows an import
   * (src/lint/project). A saved or changed .py file is forgotten and the open files are linted again, so a
   * file's findings follow its dependencies on save.
   */
  private readonly project: ProjectIndex;
  private readonly pythonFiles = vscode.workspace.createFileSystemWatcher('**/*.py');
  private dependencyTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly linter: Linter,
    private readonly reports: ReportStore,
    private readonly log: Logger,
    private readonly extensionUri: vscode.Uri,
    /** The torch that will run each file: the target when nothing explicit sets one. */
    private readonly runningTorch: RunningTorch,
  ) {
    this.config = this.readConfig();
    this.project = new ProjectIndex(linter.parser, {
      maxFileSize: DEFAULT_MAX_FILE_SIZE,
      // The workspace folder is the project root (imports are resolved up to it, never above).
      rootOf: (dir) => vscode.workspace.getWorkspaceFolder(vscode.Uri.file(dir))?.uri.fsPath,
    });
    this.disposables.push(
      this.pythonFiles,
      this.pythonFiles.onDidChange((uri) => this.dependencyChanged(uri)),
      this.pythonFiles.onDidCreate((uri) => this.dependencyChanged(uri)),
      this.pythonFiles.onDidDelete((uri) => this.dependencyChanged(uri)),
      this.collection,
      this.linted,
      vscode.workspace.onDidOpenTextDocument((d) => this.open(d)),
      vscode.workspace.onDidChangeTextDocument((e) => this.changed(e)),
      vscode.workspace.onDidCloseTextDocument((d) => this.close(d.uri)),
      // Cells added, removed, moved or run (a new execution count changes the program's order).
      vscode.workspace.onDidChangeNotebookDocument((e) => {
        if (e.contentChanges.length > 0 || e.cellChanges.some((c) => c.executionSummary !== undefined)) this.scheduleNotebook(e.notebook, this.config.delayMs);
      }),
      vscode.workspace.onDidCloseNotebookDocument((nb) => this.closeNotebook(nb)),
      this.pyprojects,
      // A changed pyproject.toml may change every file's settings.
      this.pyprojects.onDidChange(() => this.projectConfigChanged()),
      this.pyprojects.onDidCreate(() => this.projectConfigChanged()),
      this.pyprojects.onDidDelete(() => this.projectConfigChanged()),
      this.pinFiles,
      this.pinFiles.onDidChange(() => this.projectConfigChanged()),
      this.pinFiles.onDidCreate(() => this.projectConfigChanged()),
      this.pinFiles.onDidDelete(() => this.projectConfigChanged()),
      vscode.workspace.onDidSaveTextDocument((d) => {
        if (d.uri.path.endsWith('/pyproject.toml')) this.projectConfigChanged();
        if (d.uri.scheme === 'file' && d.uri.path.endsWith('.py')) this.dependencyChanged(d.uri);
      }),
      onSettingsChanged(() => {
        this.config = this.readConfig();
        this.relintAll();
      }),
      runningTorch.onDidChange(() => this.relintAll()),
      reports.onDidChange(() => this.republishAll()),
    );
    for (const d of vscode.workspace.textDocuments) this.open(d);
  }

  private readConfig(): LintConfig {
    const problems: string[] = [];
    const config = readLintConfig(undefined, problems);
    for (const p of problems) this.warnOnce(p);
    const unknown = unknownRuleSelectors([...(config.select ?? []), ...config.ignore]);
    if (unknown.length > 0) this.warnOnce(`memhint.lint.select/ignore name unknown rules: ${unknown.join(', ')}`);
    return config;
  }

  private warnOnce(message: string): void {
    if (this.reported.has(message)) return;
    this.reported.add(message);
    this.log.warn(message);
  }

  /** The last lint of a document, or null when it is not tracked / not linted yet. */
  result(uri: vscode.Uri): LintResult | null {
    const key = uri.toString();
    return this.tracked.get(key)?.result ?? this.cellResults.get(key) ?? null;
  }

  /**
   * The last published lint of the document with the edits made since, without linting: null when there
   * is none, or when the edits since are not known (a failed lint). The quick-fix menu answers from this.
   */
  published(document: { readonly uri: vscode.Uri; readonly version: number }): Published | null {
    const key = document.uri.toString();
    const t = this.tracked.get(key);
    const result = t?.result ?? this.cellResults.get(key) ?? null;
    if (result === null) return null;
    if (result.version === document.version) return { result, changes: [] };
    if (t !== undefined) return t.pending.length > 0 && t.pendingVersion === document.version ? { result, changes: t.pending.slice() } : null;
    const pending = this.cellPending.get(key);
    return pending !== undefined && pending.version === document.version ? { result, changes: pending.changes.slice() } : null;
  }

  /** Settings for one document: [tool.memhint] from the nearest pyproject.toml, overridden by VS Code settings. */
  settingsFor(document: { readonly uri: vscode.Uri }): LintSettings | null {
    const overrides = {
      ...(this.config.select !== null ? { select: this.config.select } : {}),
      ignore: this.config.ignore,
      ...(this.config.targetTorch !== null ? { targetTorch: this.config.targetTorch } : {}),
    };
    if (document.uri.scheme !== 'file') return { select: this.config.select, ignore: this.config.ignore, targetTorch: this.config.targetTorch };
    try {
      const project = this.projectOf(document.uri);
      if (isExcluded(project, document.uri.fsPath)) return null;
      const settings = settingsForFile(project, document.uri.fsPath, overrides);
      if (settings.targetTorch !== null) return settings;
      // No memhint.targetTorch nor [tool.memhint] target-torch: the torch that will run the file, else the
      // oldest torch the project's pin allows.
      const running = this.runningTorch.versionFor(document.uri);
      if (running) return { ...settings, targetTorch: running };
      const pin = findTorchPin(document.uri.fsPath, this.pins);
      return pin === null ? settings : { ...settings, targetTorch: pin.version };
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      this.warnOnce(`${err.message} (using the editor settings only)`);
      return { select: this.config.select, ignore: this.config.ignore, targetTorch: this.config.targetTorch };
    }
  }

  /** [tool.memhint] of a file's folder (cached per folder); throws ConfigError for an invalid one. */
  private projectOf(uri: vscode.Uri): ProjectConfig {
    const dir = path.dirname(uri.fsPath);
    let project = this.projectConfigs.get(dir);
    if (project === undefined) {
      // A pyproject.toml that is a FIFO, device or directory is skipped with a warning (also in Restricted Mode).
      project = findProjectConfig(uri.fsPath, (m) => this.warnOnce(m));
      this.projectConfigs.set(dir, project);
    }
    return project;
  }

  /**
   * Why a document is too long to lint (logged once per document and size), or null. Its length comes
   * from its last line's end, not getText(), so checking a huge document on every change costs nothing.
   */
  private tooLarge(document: vscode.TextDocument): string | null {
    return this.overLimit(document.uri, document.offsetAt(document.lineAt(document.lineCount - 1).range.end));
  }

  /** Why text of `length` characters at `uri` (a file, or a notebook's joined cells) is not linted, or null. */
  private overLimit(uri: vscode.Uri, length: number): string | null {
    let project: ProjectConfig | null = null;
    if (uri.scheme === 'file') {
      try {
        project = this.projectOf(uri);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        // Reported by settingsFor; the default limit applies meanwhile.
      }
    }
    return oversizeReason(length, sizeLimitOf(project));
  }

  private projectConfigChanged(): void {
    this.projectConfigs.clear();
    this.pins = new TorchPinCache();
    this.relintAll();
  }

  private open(document: vscode.TextDocument): void {
    if (!this.config.enable || !isLintable(document)) return;
    if (isNotebookCell(document)) {
      // Opening a notebook opens all its cells: one lint of the whole program after the last.
      const nb = notebookOf(document);
      if (nb !== undefined) this.scheduleNotebook(nb, 0);
      return;
    }
    const key = document.uri.toString();
    if (this.tracked.has(key)) return;
    const tooLarge = this.tooLarge(document);
    if (tooLarge !== null) {
      this.warnOnce(`${document.uri.fsPath}: ${tooLarge}`);
      this.collection.delete(document.uri);
      return;
    }
    let doc: PythonDocument;
    try {
      // A file on disk belongs to the project: rules may follow its imports into the workspace's modules.
      doc = this.linter.open(document.getText(), document.uri.scheme === 'file' ? { project: this.project.contextFor(document.uri.fsPath) } : {});
    } catch (err) {
      this.log.error(`could not parse ${document.uri.fsPath}`, err);
      return;
    }
    const t: Tracked = { doc, pending: [], pendingVersion: document.version, timer: undefined, result: null };
    this.tracked.set(key, t);
    this.run(document, t);
  }

  private changed(e: vscode.TextDocumentChangeEvent): void {
    if (e.contentChanges.length === 0) return;
    if (isNotebookCell(e.document)) {
      const nb = notebookOf(e.document);
      if (nb !== undefined && this.config.enable && isLintable(e.document)) {
        const key = e.document.uri.toString();
        const pending = this.cellPending.get(key) ?? { changes: [], version: e.document.version };
        for (const c of e.contentChanges) pending.changes.push({ rangeOffset: c.rangeOffset, rangeLength: c.rangeLength, text: c.text });
        pending.version = e.document.version;
        this.cellPending.set(key, pending);
        this.scheduleNotebook(nb, this.config.delayMs);
      }
      return;
    }
    const t = this.tracked.get(e.document.uri.toString());
    if (t === undefined) {
      this.open(e.document);
      return;
    }
    for (const c of e.contentChanges) t.pending.push({ rangeOffset: c.rangeOffset, rangeLength: c.rangeLength, text: c.text });
    t.pendingVersion = e.document.version;
    if (t.timer !== undefined) clearTimeout(t.timer);
    const document = e.document;
    t.timer = setTimeout(() => {
      t.timer = undefined;
      if (this.tracked.get(document.uri.toString()) === t && !document.isClosed) this.run(document, t);
    }, this.config.delayMs);
  }

  private close(uri: vscode.Uri): void {
    const key = uri.toString();
    this.cellPending.delete(key);
    if (this.cellResults.delete(key)) this.collection.delete(uri);
    const t = this.tracked.get(key);
    if (t === undefined) return;
    if (t.timer !== undefined) clearTimeout(t.timer);
    t.doc.dispose();
    this.tracked.delete(key);
    this.collection.delete(uri);
  }

  private scheduleNotebook(nb: vscode.NotebookDocument, delayMs: number): void {
    const key = nb.uri.toString();
    let t = this.notebooks.get(key);
    if (t === undefined) {
      t = { timer: undefined, cells: new Set() };
      this.notebooks.set(key, t);
    }
    if (t.timer !== undefined) clearTimeout(t.timer);
    t.timer = setTimeout(() => {
      t.timer = undefined;
      if (!nb.isClosed && this.config.enable) this.runNotebook(nb);
    }, delayMs);
  }

  private closeNotebook(nb: vscode.NotebookDocument): void {
    const t = this.notebooks.get(nb.uri.toString());
    if (t === undefined) return;
    if (t.timer !== undefined) clearTimeout(t.timer);
    for (const cell of t.cells) {
      this.cellResults.delete(cell);
      this.cellPending.delete(cell);
      this.collection.delete(vscode.Uri.parse(cell));
    }
    this.notebooks.delete(nb.uri.toString());
  }

  /**
   * Lints the notebook's Python cells as one program (a model built in one cell, evaluated in another)
   * and publishes each finding on its cell. A full parse each time: cells have no incremental document,
   * and a notebook's program is small.
   */
  private runNotebook(nb: vscode.NotebookDocument): void {
    const key = nb.uri.toString();
    let t = this.notebooks.get(key);
    if (t === undefined) {
      t = { timer: undefined, cells: new Set() };
      this.notebooks.set(key, t);
    }
    if (t.timer !== undefined) {
      clearTimeout(t.timer);
      t.timer = undefined;
    }
    const started = performance.now();
    const cells = nb.getCells();
    const published = new Set<string>();
    let skipped = false;
    try {
      const program = buildNotebookProgram(cellInputsOf(nb));
      // The same limit as a file's, on the program the linter would parse (the joined cells): a notebook
      // is re-linted whole on every edit, so a huge one would otherwise stall the extension host.
      const tooLarge = this.overLimit(nb.uri, program.text.length);
      if (tooLarge !== null) {
        this.warnOnce(`${nb.uri.fsPath}: ${tooLarge}`);
        skipped = true;
      } else {
        const settings = this.settingsFor(nb);
        const doc = this.linter.open(program.text);
        let findings: readonly Finding[];
        try {
          findings = settings === null ? [] : lintAndLog(doc.source, settings, this.ruleFailures, nb.uri.fsPath);
        } finally {
          doc.dispose();
        }
        const byCell = findingsByCell(program, findings);
        for (const segment of program.segments) {
          const cell = cells[segment.cell];
          const cellFindings = byCell.filter((f) => f.cell === segment.cell).map((f) => f.finding);
          // The cell's own parse: quick fixes ("Ignore for this line") and the step finder work in cell offsets.
          // An unchanged cell keeps its last one (an edit re-lints the notebook but changes one cell).
          const previous = this.cellResults.get(cell.document.uri.toString());
          const source = previous !== undefined && previous.version === cell.document.version && previous.source.text === cell.document.getText() ? previous.source : parseOnce(this.linter, cell.document.getText());
          const cellKey = cell.document.uri.toString();
          const diagnostics = this.unlessSame(previous?.diagnostics, cellFindings.map((f) => this.toDiagnostic(cell.document, source, f, new Set())), cell.document.uri);
          this.cellResults.set(cellKey, { version: cell.document.version, source, findings: cellFindings, settings: settings ?? { select: [], ignore: [], targetTorch: null }, diagnostics });
          this.cellPending.delete(cellKey);
          published.add(cellKey);
        }
        this.log.debug(`linted notebook ${nb.uri.fsPath} (${program.segments.length} cells): ${findings.length} findings in ${(performance.now() - started).toFixed(2)} ms`);
      }
    } catch (err) {
      this.log.error(`lint failed for notebook ${nb.uri.fsPath}`, err);
    }
    // Cells deleted, made markdown or another language since the last lint lose their diagnostics.
    for (const old of t.cells) {
      if (published.has(old)) continue;
      this.cellResults.delete(old);
      this.cellPending.delete(old);
      this.collection.delete(vscode.Uri.parse(old));
    }
    t.cells = published;
    // Skipped as too large, every cell was cleared above: tests and waiters hear of each.
    for (const c of cells) if (published.has(c.document.uri.toString()) || skipped) this.linted.fire(c.document.uri);
  }

  private run(document: vscode.TextDocument, t: Tracked): void {
    if (t.timer !== undefined) {
      clearTimeout(t.timer);
      t.timer = undefined;
    }
    const started = performance.now();
    const tooLarge = this.tooLarge(document);
    if (tooLarge !== null) {
      // Grew past the limit while open: stop tracking it (a later change that shrinks it opens it again).
      this.warnOnce(`${document.uri.fsPath}: ${tooLarge}`);
      this.close(document.uri);
      this.linted.fire(document.uri);
      return;
    }
    try {
      const text = document.getText();
      let source: SourceFile;
      if (t.pending.length > 0) {
        source = t.doc.update(t.pending);
        t.pending = [];
        if (source.text !== text) {
          // Should not happen (the changes are VS Code's own); recover with a full parse.
          this.log.warn(`incremental text diverged for ${document.uri.fsPath}; reparsing`);
          source = t.doc.reset(text);
        }
      } else {
        source = t.doc.source.text === text ? t.doc.source : t.doc.reset(text);
      }
      const settings = this.settingsFor(document);
      // A rule that throws loses only its own findings; the rest replace the old diagnostics (see lintAndLog).
      const findings = settings === null ? [] : lintAndLog(source, settings, this.ruleFailures, document.uri.fsPath);
      const diagnostics = this.unlessSame(t.result?.diagnostics, this.buildDiagnostics(document, source, findings), document.uri);
      t.result = { version: document.version, source, findings, settings: settings ?? { select: [], ignore: [], targetTorch: null }, diagnostics };
      this.log.debug(`linted ${document.uri.fsPath} v${document.version}: ${findings.length} findings in ${(performance.now() - started).toFixed(2)} ms`);
    } catch (err) {
      t.pending = [];
      this.log.error(`lint failed for ${document.uri.fsPath}`, err);
    }
    this.linted.fire(document.uri);
  }

  /**
   * Publishes `next` unless it says what `previous` (published for the same document) says; returns the
   * list that stays published. An identical re-publish would still be a marker change, which makes VS Code
   * re-request code actions and drop a Ctrl+. request in flight (sameDiagnostics.ts).
   */
  private unlessSame(previous: readonly vscode.Diagnostic[] | undefined, next: vscode.Diagnostic[], uri: vscode.Uri): readonly vscode.Diagnostic[] {
    if (previous !== undefined && sameDiagnostics(previous, next) && this.collection.has(uri)) return previous;
    this.collection.set(uri, next);
    return next;
  }

  /**
   * The findings' diagnostics (same order, so index i is finding i), then the profiler's measured leaks
   * that no finding covers, on the line that holds the memory.
   */
  private buildDiagnostics(document: vscode.TextDocument, source: SourceFile, findings: readonly Finding[]): vscode.Diagnostic[] {
    const covered = new Set<number>();
    const diagnostics = findings.map((f) => this.toDiagnostic(document, source, f, covered));
    const report = this.reports.get();
    if (report === null || report.stale !== null || document.uri.scheme !== 'file') return diagnostics;
    const lines = source.text.split(/\r?\n/);
    for (const m of measuredFindings(report.report, filePathsOf(document.uri), lines, covered)) {
      const d = measuredDiagnostic(document, m.line, m.message);
      if (m.allocatedAt !== m.line && m.allocatedAt - 1 < document.lineCount) {
        d.relatedInformation = [new vscode.DiagnosticRelatedInformation(new vscode.Location(document.uri, document.lineAt(m.allocatedAt - 1).range), 'the memory it keeps is allocated here')];
      }
      diagnostics.push(d);
    }
    this.addProfileFindings(document, report.report, diagnostics);
    return diagnostics;
  }

  /** Measured graphs without backward and growing DataLoader workers: confirm the lint finding on the line
   *  (MH001, MH014) when there is one, else a diagnostic of their own. */
  private addProfileFindings(document: vscode.TextDocument, report: ProfileReport, diagnostics: vscode.Diagnostic[]): void {
    for (const m of profileFindings(report, filePathsOf(document.uri), document.lineCount)) {
      const finding = diagnostics.find((d) => d.range.start.line === m.line - 1 && m.confirms.includes(diagnosticCode(d)));
      if (finding !== undefined) {
        finding.message = `${finding.message} ${m.sentence}`;
        continue;
      }
      diagnostics.push(measuredDiagnostic(document, m.line, m.message));
    }
  }

  private toDiagnostic(document: vscode.TextDocument, source: SourceFile, f: Finding, covered: Set<number>): vscode.Diagnostic {
    const range = new vscode.Range(document.positionAt(f.start), document.positionAt(f.end));
    let message = `${f.message}`;
    let related: vscode.DiagnosticRelatedInformation[] | undefined;
    const report = this.reports.get()?.report;
    covered.add(range.start.line + 1);
    if (report !== undefined && CONFIRMABLE_CODES.has(f.code) && document.uri.scheme === 'file') {
      const line = range.start.line + 1;
      const measured = measuredRetention(report, filePathsOf(document.uri), line, identifiersIn(source.text.slice(f.start, f.end)));
      if (measured !== null) {
        covered.add(measured.line);
        message = `${message} ${retentionSentence(measured, line)}`;
        if (measured.line !== line && measured.line - 1 < document.lineCount) {
          const at = document.lineAt(measured.line - 1).range;
          related = [new vscode.DiagnosticRelatedInformation(new vscode.Location(document.uri, at), 'the memory it keeps is allocated here')];
        }
      }
    }
    const severity = f.severity === 'error' ? vscode.DiagnosticSeverity.Error : f.severity === 'warning' ? vscode.DiagnosticSeverity.Warning : vscode.DiagnosticSeverity.Information;
    const d = new vscode.Diagnostic(range, message, severity);
    d.source = 'memhint';
    if (related !== undefined) d.relatedInformation = related;
    const docs = ruleDocUri(this.extensionUri, f.code);
    d.code = docs === null ? `${f.code}` : { value: f.code, target: docs };
    return d;
  }

  /**
   * A module of the workspace was saved, changed on disk, created or deleted: forget what the index read
   * and lint the open files again (debounced: a checkout changes many files at once).
   */
  private dependencyChanged(uri: vscode.Uri): void {
    this.project.invalidate(uri.fsPath);
    if (this.dependencyTimer !== undefined) clearTimeout(this.dependencyTimer);
    this.dependencyTimer = setTimeout(() => {
      this.dependencyTimer = undefined;
      for (const d of vscode.workspace.textDocuments) {
        const t = this.tracked.get(d.uri.toString());
        if (t !== undefined && d.uri.scheme === 'file') this.run(d, t);
      }
    }, this.config.delayMs);
  }

  private relintAll(): void {
    for (const d of vscode.workspace.textDocuments) {
      if (!isLintable(d)) continue;
      if (!this.config.enable) this.close(d.uri);
      else if (isNotebookCell(d)) this.open(d);
      else if (this.tracked.has(d.uri.toString())) this.run(d, this.tracked.get(d.uri.toString())!);
      else this.open(d);
    }
  }

  /** A new or cleared report changes only the measured sentences: rebuild the diagnostics. */
  private republishAll(): void {
    for (const d of vscode.workspace.textDocuments) {
      const t = this.tracked.get(d.uri.toString());
      if (t?.result && t.result.version === d.version) {
        const result = t.result;
        const diagnostics = this.unlessSame(result.diagnostics, this.buildDiagnostics(d, result.source, result.findings), d.uri);
        t.result = { ...result, diagnostics };
        this.linted.fire(d.uri);
      }
    }
  }

  dispose(): void {
    if (this.dependencyTimer !== undefined) clearTimeout(this.dependencyTimer);
    this.project.dispose();
    for (const t of this.tracked.values()) {
      if (t.timer !== undefined) clearTimeout(t.timer);
      t.doc.dispose();
    }
    this.tracked.clear();
    for (const t of this.notebooks.values()) if (t.timer !== undefined) clearTimeout(t.timer);
    this.notebooks.clear();
    this.cellResults.clear();
    for (const d of this.disposables) d.dispose();
  }
}

/** What notebookProgram.ts needs of each cell. */
export function cellInputsOf(nb: vscode.NotebookDocument): CellInput[] {
  return nb.getCells().map((c) => ({
    index: c.index,
    isCode: c.kind === vscode.NotebookCellKind.Code,
    languageId: c.document.languageId,
    text: c.document.getText(),
    ...(c.executionSummary?.executionOrder === undefined ? {} : { executionOrder: c.executionSummary.executionOrder }),
  }));
}

/** The open notebook that holds a cell document (a cell's URI is its notebook's path plus a fragment). */
export function notebookOf(cell: { readonly uri: vscode.Uri }): vscode.NotebookDocument | undefined {
  const key = cell.uri.toString();
  return vscode.workspace.notebookDocuments.find((nb) => nb.uri.path === cell.uri.path && nb.getCells().some((c) => c.document.uri.toString() === key));
}

/** A diagnostic of what the profile measured (no lint rule), over the text of 1-based `lineNumber`. */
function measuredDiagnostic(document: vscode.TextDocument, lineNumber: number, message: string): vscode.Diagnostic {
  const line = document.lineAt(lineNumber - 1);
  const range = new vscode.Range(line.lineNumber, line.firstNonWhitespaceCharacterIndex, line.lineNumber, line.text.trimEnd().length);
  const d = new vscode.Diagnostic(range, message, vscode.DiagnosticSeverity.Warning);
  d.source = 'memhint';
  d.code = 'measured';
  return d;
}

function diagnosticCode(d: vscode.Diagnostic): string {
  const code = d.code;
  return typeof code === 'object' ? String(code.value) : String(code ?? '');
}
