// What activate() returns: a read-only view of the extension's state for tests (extension-host suites
// read it through `extension.exports` or the `memhint._test.getState` command in test mode).
import * as vscode from 'vscode';
import { formatTorchVersion, type Linter } from '../lint';
import type { HintsController } from './hints/controller';
import type { DiagnosticsController } from './lint/diagnostics';
import type { PredictController } from './predict/controller';
import type { ProfileController } from './profile/controller';
import type { ReportStore } from './reportStore';
import { MemorySummaryPanel } from './webview/summaryPanel';

export interface MemhintState {
  readonly trusted: boolean;
  readonly documents: readonly {
    readonly uri: string;
    readonly version: number;
    /** The target torch the last lint used ("1.13"); null: none known (a current torch assumed). */
    readonly targetTorch: string | null;
    readonly findings: readonly { readonly code: string; readonly line: number; readonly message: string; readonly fixable: boolean }[];
    readonly hints: readonly { readonly line: number; readonly text: string; readonly size: string }[];
  }[];
  readonly statusBar: string | null;
  readonly report: { readonly mode: string; readonly lines: number; readonly steps: number; readonly peak: number | null; readonly file: string | null } | null;
  readonly profile: { readonly running: boolean; readonly lastStatus: string | null; readonly lastError: string | null };
  readonly predict: { readonly lastStatus: string | null; readonly lastError: string | null };
  readonly webview: { readonly open: boolean; readonly visible: boolean; readonly rendered: { readonly rows: number; readonly sort: unknown; readonly sections: readonly string[] } | null } ;
}

export interface MemhintApi {
  state(): MemhintState;
  readonly linter: Linter;
  /** Fires after diagnostics for a document were published. */
  readonly onDidLint: vscode.Event<vscode.Uri>;
  /** Fires after hint decorations were re-applied. */
  readonly onDidRenderHints: vscode.Event<void>;
}

interface Parts {
  readonly diagnostics: DiagnosticsController;
  readonly hints: HintsController;
  readonly profiler: ProfileController;
  readonly predictor: PredictController;
  readonly reports: ReportStore;
  readonly linter: Linter;
}

export function createApi(parts: Parts): MemhintApi {
  return {
    linter: parts.linter,
    onDidLint: parts.diagnostics.onDidLint,
    onDidRenderHints: parts.hints.onDidRender,
    state(): MemhintState {
      const documents = vscode.workspace.textDocuments
        .filter((d) => d.languageId === 'python')
        .map((d) => {
          const result = parts.diagnostics.result(d.uri);
          return {
            uri: d.uri.toString(),
            version: result?.version ?? -1,
            targetTorch: result?.settings.targetTorch ? formatTorchVersion(result.settings.targetTorch) : null,
            findings: (result?.findings ?? []).map((f, i) => ({
              code: f.code,
              line: result!.diagnostics[i]?.range.start.line ?? -1,
              message: result!.diagnostics[i]?.message ?? f.message,
              fixable: f.fix !== null,
            })),
            hints: parts.hints.hintsFor(d.uri).map((h) => ({ line: h.line, text: h.text, size: h.size })),
          };
        });
      const stored = parts.reports.get();
      const last = parts.profiler.lastOutcome;
      const panel = MemorySummaryPanel.instance;
      return {
        trusted: vscode.workspace.isTrusted,
        documents,
        statusBar: parts.hints.statusText,
        report: stored === null ? null : { mode: (stored.report as { mode?: string }).mode ?? 'measured', lines: stored.report.lines.length, steps: stored.report.steps.length, peak: stored.report.peak?.bytes ?? null, file: stored.file },
        profile: { running: parts.profiler.isRunning, lastStatus: last?.status ?? null, lastError: last?.error ?? null },
        predict: { lastStatus: parts.predictor.lastOutcome?.status ?? null, lastError: parts.predictor.lastOutcome?.error ?? null },
        webview: { open: panel !== undefined, visible: panel?.panel.visible ?? false, rendered: panel?.lastRendered ?? null },
      };
    },
  };
}
