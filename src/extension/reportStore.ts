// The latest profile report, shared by the hints, the diagnostics (measured confirmations), the status
// bar and the summary panel. Persisted to the extension's storage so a reloaded window can restore the
// summary and export it.
import * as fs from 'node:fs/promises';
import * as vscode from 'vscode';
import { isProfileReport, type ProfileReport } from '../profiler/report';
import type { Logger } from './logger';
import type { RanksView } from './ranks/ranksView';
import { isPredicted, stepKey } from './webview/comparison';

/** How the run that made the report was started (not part of the report schema: editor-side facts). */
export interface RunInfo {
  /** The interpreter as the user knows it (`.venv/bin/python`), where it came from, and its torch. */
  readonly interpreter: string;
  readonly interpreterSource: string;
  readonly torchVersion: string | null;
}

/** A later run failed: the figures shown are from an earlier one. */
export interface Staleness {
  readonly reason: string;
  readonly at: number;
}

export interface StoredReport {
  readonly report: ProfileReport;
  /** Where the JSON is persisted, or null when it could not be written. */
  readonly file: string | null;
  readonly receivedAt: number;
  readonly run: RunInfo | null;
  /** Set when a run after this report failed; cleared by the next report. */
  readonly stale: Staleness | null;
  /** A multi-rank run: `report` is the rank `ranks.shownRank`'s; every rank's peak is here. */
  readonly ranks: RanksView | null;
  /** The latest report of the other kind (measured for a predicted one, or the reverse) when it is of the
   *  same step: the summary shows the two side by side. */
  readonly counterpart: ProfileReport | null;
}

export class ReportStore implements vscode.Disposable {
  private current: StoredReport | null = null;
  /** The latest measured and the latest predicted report, whichever step they are of. */
  private latest: { measured: ProfileReport | null; predicted: ProfileReport | null } = { measured: null, predicted: null };
  private readonly changed = new vscode.EventEmitter<StoredReport | null>();
  readonly onDidChange = this.changed.event;

  constructor(
    private readonly storageDir: vscode.Uri,
    private readonly log: Logger,
  ) {}

  get(): StoredReport | null {
    return this.current;
  }

  private get reportPath(): string {
    return vscode.Uri.joinPath(this.storageDir, 'last-report.json').fsPath;
  }

  private get counterpartPath(): string {
    return vscode.Uri.joinPath(this.storageDir, 'last-counterpart.json').fsPath;
  }

  async set(report: ProfileReport, run: RunInfo | null = null, ranks: RanksView | null = null): Promise<void> {
    const predicted = isPredicted(report);
    this.latest = predicted ? { ...this.latest, predicted: report } : { ...this.latest, measured: report };
    const other = predicted ? this.latest.measured : this.latest.predicted;
    const counterpart = other !== null && stepKey(other) === stepKey(report) ? other : null;
    let file: string | null = this.reportPath;
    try {
      await fs.mkdir(this.storageDir.fsPath, { recursive: true });
      await fs.writeFile(file, JSON.stringify(report));
      // Kept with the report so a reloaded window still shows the two side by side.
      if (counterpart !== null) await fs.writeFile(this.counterpartPath, JSON.stringify(counterpart));
      else await fs.rm(this.counterpartPath, { force: true });
    } catch (err) {
      this.log.warn(`could not persist the report: ${String(err)}`);
      file = null;
    }
    this.current = { report, file, receivedAt: Date.now(), run, stale: null, ranks, counterpart };
    this.changed.fire(this.current);
  }

  /** Marks the shown report as older than a failed run (hints, status bar and summary say so). */
  markStale(reason: string): void {
    if (this.current === null) return;
    this.current = { ...this.current, stale: { reason, at: Date.now() } };
    this.changed.fire(this.current);
  }

  clear(): void {
    this.current = null;
    this.latest = { measured: null, predicted: null };
    this.changed.fire(null);
  }

  /** The persisted report of an earlier session (for a restored summary panel) and its counterpart. */
  async loadPersisted(): Promise<{ report: ProfileReport; counterpart: ProfileReport | null } | null> {
    const report = await readReport(this.reportPath);
    if (report === null) return null;
    const counterpart = await readReport(this.counterpartPath);
    return { report, counterpart: counterpart !== null && stepKey(counterpart) === stepKey(report) ? counterpart : null };
  }

  dispose(): void {
    this.changed.dispose();
  }
}

async function readReport(file: string): Promise<ProfileReport | null> {
  try {
    const parsed: unknown = JSON.parse(await fs.readFile(file, 'utf8'));
    return isProfileReport(parsed) ? parsed : null;
  } catch {
    return null;
  }
}
