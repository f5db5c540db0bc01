// The memory summary webview: one panel, strict CSP with a nonce, assets only from media/, state kept by
// the webview (vscode.setState) and restored by a serializer after a reload.
import * as crypto from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ProfileReport } from '../../profiler/report';
import type { Logger } from '../logger';
import type { ReportStore } from '../reportStore';
import { isFromWebview, type FromWebview, type SummaryViewModel, type ToWebview, type WebviewState } from './messages';
import { buildViewModel } from './viewModel';

export const VIEW_TYPE = 'memhint.summary';

export class MemorySummaryPanel implements vscode.Disposable {
  private static current: MemorySummaryPanel | undefined;
  /** Where the user saved the last export in this window (the next save dialog starts there). */
  private static lastExportDir: vscode.Uri | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  /** What the webview last said it rendered (for tests and diagnostics). */
  lastRendered: Extract<FromWebview, { type: 'rendered' }> | null = null;
  private report: ProfileReport | null;
  /** The other kind of report of the same step (predicted or measured), shown side by side. */
  private counterpart: ProfileReport | null;
  private readonly renderedEmitter = new vscode.EventEmitter<void>();
  readonly onDidRender = this.renderedEmitter.event;

  static get instance(): MemorySummaryPanel | undefined {
    return MemorySummaryPanel.current;
  }

  /** Opens (or reveals) the panel showing the store's report. */
  static show(extensionUri: vscode.Uri, reports: ReportStore, log: Logger): MemorySummaryPanel {
    if (MemorySummaryPanel.current !== undefined) {
      MemorySummaryPanel.current.panel.reveal(vscode.ViewColumn.Beside);
      MemorySummaryPanel.current.update(reports.get()?.report ?? null, reports.get()?.counterpart ?? null);
      return MemorySummaryPanel.current;
    }
    const panel = vscode.window.createWebviewPanel(VIEW_TYPE, 'memhint: Memory Summary', vscode.ViewColumn.Beside, MemorySummaryPanel.options(extensionUri));
    const stored = reports.get();
    MemorySummaryPanel.current = new MemorySummaryPanel(panel, extensionUri, reports, log, stored?.report ?? null, stored?.counterpart ?? null, null);
    return MemorySummaryPanel.current;
  }

  static options(extensionUri: vscode.Uri): vscode.WebviewPanelOptions & vscode.WebviewOptions {
    return {
      enableScripts: true,
      retainContextWhenHidden: false,
      localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'media')],
      enableFindWidget: true,
    };
  }

  /** A panel VS Code restored after a reload, with the state the webview saved. */
  static async revive(panel: vscode.WebviewPanel, state: unknown, extensionUri: vscode.Uri, reports: ReportStore, log: Logger): Promise<void> {
    panel.webview.options = MemorySummaryPanel.options(extensionUri);
    const saved = isState(state) ? state : null;
    const stored = reports.get();
    const persisted = stored === null ? await reports.loadPersisted() : null;
    const report = stored?.report ?? persisted?.report ?? null;
    const counterpart = stored?.counterpart ?? persisted?.counterpart ?? null;
    MemorySummaryPanel.current?.dispose();
    MemorySummaryPanel.current = new MemorySummaryPanel(panel, extensionUri, reports, log, report, counterpart, saved);
  }

  private constructor(
    readonly panel: vscode.WebviewPanel,
    private readonly extensionUri: vscode.Uri,
    private readonly reports: ReportStore,
    private readonly log: Logger,
    report: ProfileReport | null,
    counterpart: ProfileReport | null,
    saved: WebviewState | null,
  ) {
    this.report = report;
    this.counterpart = counterpart;
    panel.iconPath = vscode.Uri.joinPath(extensionUri, 'media', 'icon.svg');
    panel.webview.html = this.html(saved);
    this.disposables.push(
      this.renderedEmitter,
      panel.onDidDispose(() => this.dispose()),
      panel.webview.onDidReceiveMessage((m: unknown) => void this.receive(m)),
      reports.onDidChange((stored) => {
        if (stored !== null) this.update(stored.report, stored.counterpart);
      }),
    );
  }

  update(report: ProfileReport | null, counterpart: ProfileReport | null): void {
    this.report = report;
    this.counterpart = counterpart;
    void this.post({ type: 'show', model: this.model() });
  }

  private model(): SummaryViewModel | null {
    if (this.report === null) return null;
    const stored = this.reports.get();
    const stale = stored !== null && stored.report === this.report && stored.stale !== null ? `These figures are from an earlier run: the latest run failed (${stored.stale.reason}).` : null;
    const ranks = stored !== null && stored.report === this.report ? stored.ranks : null;
    return buildViewModel(this.report, { roots: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath), stale, ranks, counterpart: this.counterpart });
  }

  private post(message: ToWebview): Thenable<boolean> {
    return this.panel.webview.postMessage(message);
  }

  private async receive(raw: unknown): Promise<void> {
    if (!isFromWebview(raw)) {
      this.log.warn(`summary webview sent an unknown message: ${JSON.stringify(raw)?.slice(0, 200)}`);
      return;
    }
    switch (raw.type) {
      case 'ready':
        // The webview restored its own state already; a fresh model replaces it when the report is here.
        if (this.report !== null) await this.post({ type: 'show', model: this.model() });
        return;
      case 'reveal':
        await this.reveal(raw.file, raw.line);
        return;
      case 'export':
        await this.export(raw.what);
        return;
      case 'rendered':
        this.lastRendered = raw;
        this.renderedEmitter.fire();
        return;
    }
  }

  private async reveal(file: string, line: number): Promise<void> {
    if (!path.isAbsolute(file)) return; // `<untracked>` and other pseudo files
    try {
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
      const pos = new vscode.Position(Math.max(0, Math.min(line - 1, doc.lineCount - 1)), 0);
      await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.One, selection: new vscode.Range(pos, pos) });
    } catch (err) {
      void vscode.window.showErrorMessage(`memhint: cannot open ${file}: ${String(err)}`);
    }
  }

  private async export(what: 'json' | 'snapshot'): Promise<void> {
    const report = this.report;
    if (report === null) return;
    const base = path.basename(report.target.script, '.py') + (report.target.function ? `-${report.target.function}` : '');
    // Not the workspace root: an export there lands in the user's repository (and its git status). The
    // home folder, or wherever the user saved the last export.
    const folder = MemorySummaryPanel.lastExportDir ?? vscode.Uri.file(os.homedir());
    try {
      if (what === 'json') {
        const target = await vscode.window.showSaveDialog({ defaultUri: vscode.Uri.joinPath(folder, `${base}.memhint.json`), filters: { 'memhint report': ['json'] }, title: 'Export memhint report' });
        if (target === undefined) return;
        MemorySummaryPanel.lastExportDir = vscode.Uri.joinPath(target, '..');
        await vscode.workspace.fs.writeFile(target, Buffer.from(JSON.stringify(report, null, 2) + '\n'));
        await this.post({ type: 'exported', path: target.fsPath });
      } else {
        const snapshot = report.cuda?.snapshotPath;
        if (!snapshot) {
          await this.post({ type: 'error', message: 'This report has no memory_viz snapshot (CUDA backend with torch.cuda.memory._record_memory_history only).' });
          return;
        }
        const target = await vscode.window.showSaveDialog({ defaultUri: vscode.Uri.joinPath(folder, `${base}.snapshot.pickle`), filters: { 'memory_viz snapshot': ['pickle'] }, title: 'Export memory_viz snapshot' });
        if (target === undefined) return;
        MemorySummaryPanel.lastExportDir = vscode.Uri.joinPath(target, '..');
        await vscode.workspace.fs.writeFile(target, await fs.readFile(snapshot));
        await this.post({ type: 'exported', path: target.fsPath });
      }
    } catch (err) {
      await this.post({ type: 'error', message: `Export failed: ${String(err)}` });
    }
  }

  private html(saved: WebviewState | null): string {
    const webview = this.panel.webview;
    const nonce = crypto.randomBytes(16).toString('base64');
    const media = (file: string): vscode.Uri => webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', file));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
      `img-src ${webview.cspSource} data:`,
      `font-src ${webview.cspSource}`,
    ].join('; ');
    // The first model travels in the page (escaped JSON in a non-executed script tag) so the panel draws
    // without waiting for a message round trip; a saved state from before a reload wins only if no report is loaded.
    const initial: WebviewState = { model: this.model() ?? saved?.model ?? null, sort: saved?.sort ?? { key: 'peak', descending: true } };
    const json = JSON.stringify(initial).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${media('summary.css').toString()}">
<title>memhint: Memory Summary</title>
</head>
<body>
<main id="app" aria-live="polite"></main>
<script id="memhint-initial" type="application/json">${json}</script>
<script nonce="${nonce}" src="${media('summary.js').toString()}"></script>
</body>
</html>`;
  }

  dispose(): void {
    if (MemorySummaryPanel.current === this) MemorySummaryPanel.current = undefined;
    for (const d of this.disposables) d.dispose();
    this.disposables.length = 0;
    this.panel.dispose();
  }
}

function isState(value: unknown): value is WebviewState {
  return typeof value === 'object' && value !== null && 'sort' in value && 'model' in value;
}

export class SummarySerializer implements vscode.WebviewPanelSerializer {
  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly reports: ReportStore,
    private readonly log: Logger,
  ) {}

  deserializeWebviewPanel(panel: vscode.WebviewPanel, state: unknown): Promise<void> {
    return MemorySummaryPanel.revive(panel, state, this.extensionUri, this.reports, this.log);
  }
}
