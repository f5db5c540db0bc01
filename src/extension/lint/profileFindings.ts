// Diagnostics from what a profile measured on its own, with no lint rule needed: forward passes whose graph
// no backward() used (report.noBackwardGraphs, on the statement) and DataLoader workers that grew across
// steps (report.dataLoaders, on the line that built the loader). Where the matching lint rule already has a
// finding on that line (MH001 missing-no-grad, MH014 dataloader-copy-on-read), the measurement confirms it
// instead of adding a second diagnostic. No `vscode` here.
import type { ProfileReport } from '../../profiler/report';
import { formatBytes } from '../format';
import { samePath } from '../paths';

export interface ProfileFinding {
  /** 1-based line of the diagnostic. */
  readonly line: number;
  /** The diagnostic's message when no lint finding is on that line. */
  readonly message: string;
  /** Appended to the message of a lint finding on that line whose code is in `confirms`. */
  readonly sentence: string;
  readonly confirms: readonly string[];
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** What the profile measured in this file (`filePaths`: the document's path spellings), by line. */
export function profileFindings(report: ProfileReport, filePaths: readonly string[], lineCount: number): ProfileFinding[] {
  const inFile = (file: string): boolean => filePaths.some((p) => samePath(p, file));
  const out: ProfileFinding[] = [];
  for (const g of report.noBackwardGraphs ?? []) {
    if (!inFile(g.file) || g.line < 1 || g.line > lineCount) continue;
    const cost = `${plural(g.nodesPerStep, 'autograd node')} and ${formatBytes(g.bytesKeptPerStep)} of saved activations per step`;
    out.push({
      line: g.line,
      message: `This forward pass builds an autograd graph that no backward() uses: ${cost}, kept while its result lives. Measured by memhint profile; run it under \`torch.no_grad()\` (or \`torch.inference_mode()\`).`,
      sentence: `Measured by memhint profile: its graph is never backpropagated and keeps ${cost}.`,
      confirms: ['MH001'],
    });
  }
  for (const loader of report.dataLoaders ?? []) {
    if (!loader.grows || !inFile(loader.file) || loader.line < 1 || loader.line > lineCount) continue;
    const growth = `${formatBytes(loader.ussGrowthPerStep)} per step (USS of its ${plural(loader.numWorkers, 'worker')})`;
    out.push({
      line: loader.line,
      message: `The worker processes of this DataLoader grow by ${growth}: copy-on-read, each worker copies the pages of the ${loader.datasetType}'s Python objects it reads (reading an object writes its reference count). Measured by memhint profile; keep the samples in numpy arrays or tensors.`,
      sentence: `Measured by memhint profile: its workers grow by ${growth}.`,
      confirms: ['MH014'],
    });
  }
  return out;
}
