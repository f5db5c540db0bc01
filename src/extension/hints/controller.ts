// Inline memory hints from the latest report: one end-of-line decoration type with per-line text and
// theme colour, hovers with every figure, realignment on edit, and the status bar item with the peak.
import * as vscode from 'vscode';
import { formatBytes } from '../format';
import type { Logger } from '../logger';
import { filePathsOf } from '../paths';
import type { ReportStore, StoredReport } from '../reportStore';
import { editorWrapOf, onSettingsChanged, readHintsConfig, type HintsConfig } from '../settings';
import { lineAcrossRanks, ranksLine } from '../ranks/ranksView';
import { notebookOf } from '../lint/diagnostics';
import { hintsForCell } from '../profile/notebookScript';
import type { NotebookExports } from '../profile/notebookExports';
import { DEFAULT_GAP_COLUMNS, endColumn, hintBudget } from './fit';
import { realign } from './lineShift';
import { alignMargin, clip, hintsForFile, hoverMarkdown, isPredicted, stepPeak, visibleHints, type LineHint } from './model';
import { hintStyle } from './style';

export class HintsController implements vscode.Disposable, vscode.HoverProvider {
  private readonly decoration = vscode.window.createTextEditorDecorationType({
    after: { margin: '0 0 0 2em', fontStyle: 'italic' },
    rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
  });
  private readonly statusItem = vscode.window.createStatusBarItem('memhint.peak', vscode.StatusBarAlignment.Right, 100);
  /** Hints per document URI, aligned with the document's current text. */
  private readonly byDocument = new Map<string, LineHint[]>();
  private readonly disposables: vscode.Disposable[] = [];
  private config: HintsConfig;
  /** Set by "Clear Memory Hints" until the next report arrives. */
  private cleared = false;
  private readonly rendered = new vscode.EventEmitter<void>();
  /** Fires after decorations were re-applied (tests wait on it). */
  readonly onDidRender = this.rendered.event;

  constructor(
    private readonly reports: ReportStore,
    private readonly log: Logger,
    private readonly notebookExports: NotebookExports,
  ) {
    this.config = this.readConfig();
    this.statusItem.name = 'memhint peak memory';
    this.statusItem.command = 'memhint.showSummary';
    this.disposables.push(
      this.decoration,
      this.statusItem,
      this.rendered,
      reports.onDidChange(() => this.rebuild(true)),
      vscode.window.onDidChangeVisibleTextEditors(() => this.renderAll()),
      vscode.window.onDidChangeTextEditorSelection((e) => {
        if (this.config.mode === 'currentLine') {
          this.render(e.textEditor);
          this.rendered.fire();
        }
      }),
      vscode.workspace.onDidChangeTextDocument((e) => this.edited(e)),
      vscode.workspace.onDidCloseTextDocument((d) => this.byDocument.delete(d.uri.toString())),
      vscode.workspace.onDidOpenTextDocument((d) => {
        this.computeFor(d);
        this.renderAll();
      }),
      onSettingsChanged((e) => {
        if (e.affectsConfiguration('memhint.hints')) {
          this.config = this.readConfig();
          this.rebuild(false);
        }
      }),
      // Hints end by the editor's wrap column when memhint.hints.maxColumn is 0 (fit.ts).
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('editor.wordWrap') || e.affectsConfiguration('editor.wordWrapColumn')) this.renderAll();
      }),
      vscode.languages.registerHoverProvider({ language: 'python' }, this),
    );
  }

  private readConfig(): HintsConfig {
    const problems: string[] = [];
    const config = readHintsConfig(undefined, problems);
    for (const p of problems) this.log.warn(p);
    return config;
  }

  /** The hints currently shown for a document (for tests and the state command). */
  hintsFor(uri: vscode.Uri): readonly LineHint[] {
    return this.byDocument.get(uri.toString()) ?? [];
  }

  get statusText(): string | null {
    return this.statusItem.text === '' ? null : this.statusItem.text;
  }

  /** "memhint: Clear Memory Hints": forget the report's hints (the report itself stays for the summary). */
  clear(): void {
    this.cleared = true;
    this.byDocument.clear();
    this.statusItem.hide();
    this.statusItem.text = '';
    this.renderAll();
  }

  private rebuild(fromReport = true): void {
    if (fromReport) this.cleared = false;
    this.byDocument.clear();
    const stored = this.cleared ? null : this.reports.get();
    if (stored === null) {
      this.statusItem.hide();
      this.statusItem.text = '';
    } else {
      const peak = stepPeak(stored.report);
      const predicted = isPredicted(stored.report);
      this.statusItem.text = `$(${stored.stale !== null ? 'warning' : predicted ? 'beaker' : 'pulse'}) ${predicted ? 'predicted ' : ''}peak ${peak === null ? 'n/a' : formatBytes(peak)}${stored.ranks !== null ? ` (rank ${stored.ranks.shownRank}/${stored.ranks.worldSize})` : ''}${stored.stale !== null ? ' (stale)' : ''}`;
      this.statusItem.tooltip = new vscode.MarkdownString(statusTooltip(stored), true);
      this.statusItem.backgroundColor = stored.stale !== null ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
      this.statusItem.show();
      for (const d of vscode.workspace.textDocuments) this.computeFor(d);
    }
    this.renderAll();
  }

  private computeFor(document: vscode.TextDocument): void {
    const stored = this.cleared ? null : this.reports.get();
    if (stored === null || this.byDocument.has(document.uri.toString())) return;
    let hints: LineHint[];
    if (document.uri.scheme === 'vscode-notebook-cell') {
      // A notebook's profile ran its cells as a temporary script: the script's lines go back to their cells.
      const nb = notebookOf(document);
      const exported = nb === undefined ? null : this.notebookExports.forNotebook(nb.uri.toString());
      const cell = nb?.getCells().find((c) => c.document === document);
      if (exported === null || cell === undefined) return;
      hints = hintsForCell(hintsForFile(stored.report, [exported.script], this.config.thresholds, this.config.colorBy), exported.program, cell.index);
    } else if (document.uri.scheme === 'file') {
      hints = hintsForFile(stored.report, filePathsOf(document.uri), this.config.thresholds, this.config.colorBy);
    } else return;
    // After a failed run the figures are an earlier run's: say so on every hint, in the quiet colour.
    if (stored.stale !== null) hints = hints.map((h) => ({ ...h, text: `${h.text} (stale)`, size: 'small', stale: true }));
    // A file edited since it was profiled keeps only the hints whose line still reads the same.
    const kept = hints.filter((h) => h.line < document.lineCount && document.lineAt(h.line).text.trim() === h.code);
    if (kept.length > 0) this.byDocument.set(document.uri.toString(), kept);
  }

  private edited(e: vscode.TextDocumentChangeEvent): void {
    const key = e.document.uri.toString();
    const hints = this.byDocument.get(key);
    if (hints === undefined || e.contentChanges.length === 0) return;
    const changes = e.contentChanges.map((c) => ({
      startLine: c.range.start.line,
      startCharacter: c.range.start.character,
      endLine: c.range.end.line,
      endCharacter: c.range.end.character,
      text: c.text,
    }));
    const doc = e.document;
    const next = realign(hints, changes, (line) => (line >= 0 && line < doc.lineCount ? doc.lineAt(line).text : null));
    this.byDocument.set(key, next);
    for (const editor of vscode.window.visibleTextEditors) if (editor.document === doc) this.render(editor);
    this.rendered.fire();
  }

  private renderAll(): void {
    for (const editor of vscode.window.visibleTextEditors) this.render(editor);
    this.rendered.fire();
  }

  private render(editor: vscode.TextEditor): void {
    const all = this.config.enable ? (this.byDocument.get(editor.document.uri.toString()) ?? []) : [];
    const cursorLines = new Set(editor.selections.map((s) => s.active.line));
    const hints = visibleHints(all, this.config.mode, cursorLines);
    const tabSize = typeof editor.options.tabSize === 'number' ? editor.options.tabSize : 4;
    // The column a hint must end by (VS Code gives no editor width: see fit.ts); 0: none.
    const lastColumn = endColumn(this.config.maxColumn, editorWrapOf(editor.document));
    const options: vscode.DecorationOptions[] = [];
    for (const h of hints) {
      if (h.line >= editor.document.lineCount) continue;
      const line = editor.document.lineAt(h.line);
      const end = line.range.end;
      const width = visualWidth(line.text, tabSize);
      // Aligned hints start at the same column (in character widths, `ch`, so a monospace font lines them up).
      const margin = this.config.alignColumn > 0 ? alignMargin(width, this.config.alignColumn) : null;
      const budget = hintBudget(this.config.maxLength, lastColumn, width, margin ?? DEFAULT_GAP_COLUMNS);
      // One decoration type for every hint; colour and weight travel per range (measured by size, predicted apart).
      const style = hintStyle(h);
      const after: vscode.ThemableDecorationAttachmentRenderOptions = { contentText: clip(h.text, budget), color: new vscode.ThemeColor(style.color), fontWeight: style.fontWeight };
      options.push({ range: new vscode.Range(end, end), renderOptions: { after: margin === null ? after : { ...after, margin: `0 0 0 ${margin}ch` } } });
    }
    editor.setDecorations(this.decoration, options);
  }

  provideHover(document: vscode.TextDocument, position: vscode.Position): vscode.Hover | undefined {
    if (!this.config.enable) return undefined;
    const hint = this.byDocument.get(document.uri.toString())?.find((h) => h.line === position.line);
    const stored = this.reports.get();
    if (hint === undefined || stored === null) return undefined;
    const md = new vscode.MarkdownString(hoverMarkdown(hint, stored.report));
    if (stored.ranks !== null) {
      md.appendMarkdown(`\n\n**${stored.ranks.worldSize} ranks**: ${escapeMarkdown(ranksLine(stored.ranks))}.`);
      const perRank = lineAcrossRanks(stored.ranks, hint.stats.file, hint.stats.line);
      if (perRank !== null) md.appendMarkdown(`\n\nThis line per rank, worst first: ${escapeMarkdown(perRank)}.`);
    }
    if (stored.stale !== null) md.appendMarkdown(`\n\n$(warning) **Stale**: from the run of ${clock(stored.receivedAt)}; the run of ${clock(stored.stale.at)} failed: ${escapeMarkdown(stored.stale.reason)}`);
    md.supportThemeIcons = true;
    md.appendMarkdown('\n\n[Show memory summary](command:memhint.showSummary)');
    md.isTrusted = { enabledCommands: ['memhint.showSummary'] };
    return new vscode.Hover(md, document.lineAt(position.line).range);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}

function clock(ms: number): string {
  return new Date(ms).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, '\\$&');
}

/** The status bar's tooltip: what the figure is, which interpreter measured it, and whether it is stale. */
export function statusTooltip(stored: StoredReport): string {
  const env = stored.report.environment;
  const lines = [`**memhint**: highest live memory of the profiled step (${env.backend} backend, ${stored.report.steps.length} steps).`];
  const prediction = (stored.report as { readonly prediction?: { allocator: { maxReservedBytes: number; maxAllocatedBytes: number }; deviceMemoryBytes: number | null; fits: boolean | null } }).prediction;
  if (isPredicted(stored.report) && prediction !== undefined) {
    const fits = prediction.fits === null ? '' : prediction.fits ? `, fits ${formatBytes(prediction.deviceMemoryBytes ?? 0)}` : `, does NOT fit ${formatBytes(prediction.deviceMemoryBytes ?? 0)}`;
    lines[0] = `**memhint**: **predicted** highest live tensor memory of the step on CUDA (meta tensors, not measured). Caching allocator model: max reserved ${formatBytes(prediction.allocator.maxReservedBytes)}, max allocated ${formatBytes(prediction.allocator.maxAllocatedBytes)}${fits}.`;
  }
  const interpreter = stored.run !== null ? `${stored.run.interpreter}` : env.python;
  lines.push(`Interpreter: ${escapeMarkdown(interpreter)} · Python ${escapeMarkdown(env.pythonVersion)} · torch ${escapeMarkdown(stored.run?.torchVersion ?? env.torchVersion)}`);
  if (stored.ranks !== null) lines.push(`${stored.ranks.worldSize} ranks: ${escapeMarkdown(ranksLine(stored.ranks))}.`);
  if (stored.stale !== null) lines.push(`$(warning) Stale: the run of ${clock(stored.stale.at)} failed (${escapeMarkdown(stored.stale.reason)}); these figures are from ${clock(stored.receivedAt)}.`);
  lines.push('Click for the memory summary.');
  return lines.join('\n\n');
}

/** Columns a line takes on screen, tabs expanded. */
function visualWidth(text: string, tabSize: number): number {
  let width = 0;
  for (const ch of text) width = ch === '\t' ? width + tabSize - (width % tabSize) : width + 1;
  return width;
}
