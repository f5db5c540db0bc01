// A multi-rank profile (`memhint.profile.nprocPerNode` > 1) as the editor shows it: hints and hovers come
// from the worst rank (highest peak, or the rank that failed first), the summary shows every rank's peak
// side by side and the imbalance. Pure; no `vscode` here.
import type { DistributedReport } from '../../profiler/distributed-report';
import type { ProfileReport } from '../../profiler/report';
import { formatBytes } from '../format';

/** What the store keeps next to the shown rank's report (and the summary's rank section draws). */
export interface RanksView {
  readonly worldSize: number;
  readonly launcher: 'torchrun' | 'direct';
  /** The rank whose report the hints, hovers and tables show. */
  readonly shownRank: number;
  readonly why: 'highest peak' | 'failed first' | 'only report';
  readonly ranks: readonly {
    readonly rank: number;
    readonly status: string;
    readonly peakBytes: number | null;
    readonly oom: boolean;
    readonly error: string | null;
  }[];
  readonly imbalance: { readonly maxRank: number; readonly minRank: number; readonly spreadBytes: number; readonly maxOverMean: number } | null;
  readonly firstFailedRank: number | null;
  /** Per-line figures of every rank, worst rank first (the merged report's lines): hovers show them. */
  readonly lines?: readonly RankedLine[];
}

export interface RankedLine {
  readonly file: string;
  readonly line: number;
  readonly ranks: readonly { readonly rank: number; readonly liveAtPeak: number; readonly allocatedPerStep: number }[];
}

/** The rank whose report represents the job in the editor, and why; null when no rank sent a report. */
export function worstRank(merged: DistributedReport): { readonly rank: number; readonly report: ProfileReport; readonly why: RanksView['why'] } | null {
  const withReport = merged.ranks.filter((r) => merged.reports[r.rank] != null);
  if (withReport.length === 0) return null;
  if (withReport.length === 1) return { rank: withReport[0].rank, report: merged.reports[withReport[0].rank]!, why: 'only report' };
  // A rank that failed first (an OOM in one rank) is the one to look at, if it measured something.
  const failed = merged.firstFailedRank;
  if (failed !== null && merged.reports[failed] != null) return { rank: failed, report: merged.reports[failed], why: 'failed first' };
  const worst = [...withReport].sort((a, b) => (b.peakBytes ?? -1) - (a.peakBytes ?? -1) || a.rank - b.rank)[0];
  return { rank: worst.rank, report: merged.reports[worst.rank]!, why: 'highest peak' };
}

export function ranksView(merged: DistributedReport, shownRank: number, why: RanksView['why']): RanksView {
  return {
    worldSize: merged.worldSize,
    launcher: merged.launcher,
    shownRank,
    why,
    ranks: merged.ranks.map((r) => ({
      rank: r.rank,
      status: r.status,
      peakBytes: r.peakBytes,
      oom: r.oom,
      error: r.error === null ? null : `${r.error.kind.replace(/_/g, ' ')}: ${r.error.message}`,
    })),
    imbalance: merged.imbalance === null ? null : { maxRank: merged.imbalance.maxRank, minRank: merged.imbalance.minRank, spreadBytes: merged.imbalance.spreadBytes, maxOverMean: merged.imbalance.maxOverMean },
    firstFailedRank: merged.firstFailedRank,
    lines: merged.lines.map((l) => ({
      file: l.file,
      line: l.line,
      ranks: l.ranks.map((r) => ({ rank: r.rank, liveAtPeak: r.liveAtPeak, allocatedPerStep: r.allocatedPerStep })),
    })),
  };
}

/**
 * The hovered line in every rank, worst rank first: `rank 1: 231 KiB live at its peak, 98.2 KiB allocated per
 * step · rank 0: …`; null when the merged report has no figures for the line (one rank, or older stores).
 */
export function lineAcrossRanks(view: RanksView, file: string, line: number): string | null {
  const found = view.lines?.find((l) => l.line === line && l.file === file);
  if (found === undefined || found.ranks.length < 2) return null;
  return found.ranks.map((r) => `rank ${r.rank}: ${formatBytes(r.liveAtPeak)} live at its peak, ${formatBytes(r.allocatedPerStep)} allocated per step`).join(' · ');
}

/** One line for hovers and the status tooltip: `rank 1 of 2 (highest peak); peaks: rank 0 12 MiB, rank 1 20 MiB; max/mean 1.25×`. */
export function ranksLine(view: RanksView): string {
  const peaks = view.ranks.map((r) => `rank ${r.rank} ${r.peakBytes === null ? r.status : formatBytes(r.peakBytes)}${r.oom ? ' (OOM)' : ''}`).join(', ');
  const imbalance = view.imbalance !== null ? `; max/mean ${view.imbalance.maxOverMean.toFixed(2)}×, spread ${formatBytes(view.imbalance.spreadBytes)}` : '';
  return `figures of rank ${view.shownRank} of ${view.worldSize} (${view.why}); peaks: ${peaks}${imbalance}`;
}
