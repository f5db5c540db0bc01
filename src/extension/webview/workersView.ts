// The DataLoader workers section of the summary: each multi-process loader the script iterated
// (report.dataLoaders) with its workers' own series (report.timeline.processes). Pure; no `vscode` here.
import type { ProcessSeries, ProfileReport } from '../../profiler/report';
import type { LoaderView, WorkerRow } from './messages';
import { displayPath } from './paths';

function workerRow(series: ProcessSeries): WorkerRow | null {
  const n = Math.min(series.t.length, series.ussBytes.length, series.pssBytes.length);
  if (n === 0) return null;
  const uss = series.ussBytes.slice(0, n);
  return {
    pid: series.pid,
    worker: series.worker,
    samples: n,
    ussFirst: uss[0],
    ussLast: uss[n - 1],
    ussMax: Math.max(...uss),
    pssLast: series.pssBytes[n - 1],
    ussGrowth: uss[n - 1] - uss[0],
  };
}

/** One view per loader, in the report's order (series[].loader indexes report.dataLoaders). */
export function loaderViews(report: ProfileReport, roots: readonly string[]): LoaderView[] {
  const processes = report.timeline.processes ?? [];
  return (report.dataLoaders ?? []).map((loader, index) => ({
    file: loader.file,
    displayFile: displayPath(loader.file, roots),
    line: loader.line,
    code: loader.code.trim(),
    datasetType: loader.datasetType,
    numWorkers: loader.numWorkers,
    ussByStep: [...loader.ussByStep],
    pssByStep: [...loader.pssByStep],
    ussGrowthPerStep: loader.ussGrowthPerStep,
    grows: loader.grows,
    workers: processes
      .filter((p) => p.role === 'dataloader_worker' && p.loader === index)
      .map(workerRow)
      .filter((w): w is WorkerRow => w !== null)
      .sort((a, b) => a.worker - b.worker || a.pid - b.pid),
  }));
}
